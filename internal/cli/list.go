package cli

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
)

// openForReading loads the configuration and opens the Engine DB for a
// read-only command, checking that it holds etl-craft's tables (exit 3 when
// not). Read-only commands record no action and write nothing: a SQLite
// Engine DB that does not exist is not created.
func (a *app) openForReading(ctx context.Context) (*config.Config, *engine.DB, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, nil, err
	}
	if opts := engineOptions(cfg); opts.Kind == engine.SQLite {
		if _, err := os.Stat(opts.Path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil, exit.Errorf(exit.Configuration,
				"the SQLite Engine DB %s does not exist: run `etl-craft setup` (or `etl-craft init-db`) to create it", opts.Path)
		}
	}
	db, err := a.openEngine(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := inspect.Ready(ctx, db); err != nil {
		db.Close()
		return nil, nil, err
	}
	return cfg, db, nil
}

// runScope is the flags of a command that inspects one run of a pipeline:
// --pipeline_code (required), the run selector and --format.
type runScope struct {
	pipe   *pipelineFlag
	run    *runFlags
	format *outputFormat
}

// addRunScope gives the command the flags of a run scope.
func addRunScope(cmd *cobra.Command) *runScope {
	return &runScope{pipe: addPipelineFlag(cmd, true, "the pipeline to show"), run: addRunFlags(cmd), format: addFormatFlag(cmd)}
}

// open checks the flags, then opens the Engine DB for reading.
func (s *runScope) open(ctx context.Context, a *app) (inspect.RunSelector, *engine.DB, error) {
	if err := s.pipe.check(); err != nil {
		return inspect.RunSelector{}, nil, err
	}
	sel, err := s.run.selector()
	if err != nil {
		return inspect.RunSelector{}, nil, err
	}
	_, db, err := a.openForReading(ctx)
	return sel, db, err
}

func (a *app) listCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the active pipelines",
		Long: "list prints every active pipeline: its code, name, refresh type, schedule, SLA and,\n" +
			"when it is paused, who paused it and why. It only reads the Engine DB.",
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		_, db, err := a.openForReading(cmd.Context())
		if err != nil {
			return err
		}
		defer db.Close()
		list, err := inspect.ListPipelines(cmd.Context(), db)
		if err != nil {
			return err
		}
		if format.json() {
			return a.printJSON(list)
		}
		t := newTable("PIPELINE_CODE", "PIPELINE_NAME", "REFRESH_TYPE", "RUN_SCHEDULE", "SLA_IN_HOURS", "PAUSED")
		for _, p := range list.Pipelines {
			paused := ""
			if p.Paused != nil {
				paused = p.Paused.Describe()
			}
			t.add(p.PipelineCode, p.PipelineName, p.RefreshType, p.RunSchedule, p.SLAInHours, paused)
		}
		a.printTable(t, "no active pipelines")
		return nil
	}
	return cmd
}
