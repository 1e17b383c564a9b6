package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/project"
)

// openForReading loads the configuration and opens the Engine DB for a
// read-only command (project.ForReading). Read-only commands record no
// action and write nothing. Only the Engine DB is open: closing it closes
// everything.
func (a *app) openForReading(ctx context.Context) (*config.Config, *engine.DB, error) {
	p, err := a.openReading(ctx)
	if err != nil {
		return nil, nil, err
	}
	return p.Config, p.DB, nil
}

// openReading loads the configuration and opens its project for a
// read-only command (project.ForReading); the caller closes it.
func (a *app) openReading(ctx context.Context) (*project.Project, error) {
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	return project.Open(ctx, cfg, a.projectOptions(project.ForReading())...)
}

// runScope is the flags of a command that inspects one run of a pipeline:
// --pipeline_code (required), the run selector and --format.
type runScope struct {
	pipe   *pipelineFlag
	run    *runFlags
	format *outputFormat
	// cfg is the configuration open loaded.
	cfg *config.Config
}

// addRunScope gives the command the flags of a run scope.
func addRunScope(cmd *cobra.Command) *runScope {
	return &runScope{pipe: addPipelineFlag(cmd, true, "the pipeline to show"), run: addRunFlags(cmd), format: addFormatFlag(cmd)}
}

// open checks the flags, then loads the configuration (kept in s.cfg) and
// opens the Engine DB for reading.
func (s *runScope) open(ctx context.Context, a *app) (inspect.RunSelector, *engine.DB, error) {
	if err := s.pipe.check(); err != nil {
		return inspect.RunSelector{}, nil, err
	}
	sel, err := s.run.selector()
	if err != nil {
		return inspect.RunSelector{}, nil, err
	}
	cfg, db, err := a.openForReading(ctx)
	s.cfg = cfg
	return sel, db, err
}

func (a *app) listCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the active pipelines",
		Long: "list prints every active pipeline: its code, name, refresh type, schedule, SLA, who paused\n" +
			"it and why when it is paused, and its next tick: the first RUN_SCHEDULE tick after now, in\n" +
			"SCHEDULE_TIMEZONE (else Orchestration.Timezone), not before SCHEDULE_START_DATE; \"none\"\n" +
			"without a schedule or while paused, \"invalid: <reason>\" for bad schedule settings. The\n" +
			"ticks are kept by etl-craft server (not in this release yet). It only reads the Engine DB.",
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, db, err := a.openForReading(cmd.Context())
		if err != nil {
			return err
		}
		defer db.Close()
		list, err := inspect.ListPipelines(cmd.Context(), db, cfg.Orchestration.Location, time.Now())
		if err != nil {
			return err
		}
		if format.json() {
			return a.printJSON(list)
		}
		t := newTable("PIPELINE_CODE", "PIPELINE_NAME", "REFRESH_TYPE", "RUN_SCHEDULE", "SLA_IN_HOURS", "PAUSED", "NEXT_TICK")
		for _, p := range list.Pipelines {
			paused := ""
			if p.Paused != nil {
				paused = p.Paused.Describe()
			}
			t.add(p.PipelineCode, p.PipelineName, p.RefreshType, p.RunSchedule, p.SLAInHours, paused, p.DescribeNextTick())
		}
		a.printTable(t, "no active pipelines")
		return nil
	}
	return cmd
}
