package cli

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler/rules"
	"github.com/etl-craft/etl-craft/internal/handler/script"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/quickstart"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/run"
)

func (a *app) quickstartCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "quickstart [DIR]",
		Short: "Write an example project, set it up, run its pipeline, clone and show the history",
		Long: "quickstart writes a project into DIR (default ./" + quickstart.DefaultDir + "): a\n" +
			"craft-connector.yml with a SQLite Engine DB and a DuckDB warehouse, both files in the\n" +
			"project, and migrations registering an example pipeline: SQL tasks, a business-rules task,\n" +
			"an ingestion script (ingestion_scripts/load_exchange_rates.py, run by python3 or\n" +
			"Orchestration.Python) and a daily schedule. Then it runs setup, runs the pipeline, clones\n" +
			"the Engine DB into the warehouse, and prints the pipeline's history, the rows the rules\n" +
			"flagged, the script's offset and the next tick of the schedule. Running it again reuses the\n" +
			"project and adds a run, in which the script finds no new rates and keeps its offset.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := quickstart.DefaultDir
			if len(args) == 1 {
				dir = args[0]
			}
			dir, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			written, err := quickstart.Write(dir)
			if err != nil {
				return err
			}
			if len(written) > 0 {
				a.printf("quickstart: wrote the example project in %s\n", dir)
			} else {
				a.printf("quickstart: reusing the project in %s\n", dir)
			}
			a.configFlag = filepath.Join(dir, "craft-connector.yml")
			if f := cmd.Flag("log-level"); f != nil && !f.Changed {
				// The steps print what they did; their INFO logs would repeat it.
				a.logLevel = "WARNING"
				if err := a.setupLogging(); err != nil {
					return err
				}
			}
			ctx, err := a.acting(cmd.Context())
			if err != nil {
				return err
			}
			cfg, err := a.loadConfigForChecks()
			if err != nil {
				return err
			}
			a.printf("\n$ etl-craft setup\n")
			if err := a.setup(ctx, cmd, cfg); err != nil || a.status != 0 {
				return err
			}
			return a.quickstartRun(ctx, cfg)
		},
	}
}

// quickstartRun runs the example pipeline, clones the Engine DB into the
// warehouse and prints the pipeline's recent history.
func (a *app) quickstartRun(ctx context.Context, cfg *config.Config) error {
	// The clone comes next, shown on its own, so this run has no after-run clone.
	p, err := project.Open(ctx, cfg, a.projectOptions(project.WithoutCloneHook())...)
	if err != nil {
		return err
	}
	defer p.Close()
	db := p.DB

	a.printf("\n$ etl-craft run --pipeline_code %s\n", quickstart.Pipeline)
	out, err := p.Supervisor().RunPipeline(ctx, run.Request{PipelineCode: quickstart.Pipeline})
	if err != nil {
		return err
	}
	a.printf("%s\n", exit.Flags(out.String()))
	if out.Code != 0 {
		a.status = out.Code
		return a.quickstartFailed(ctx, cfg, db, out.RunID)
	}

	a.printf("\n$ etl-craft clone\n")
	opts, err := p.CloneOptions()
	if err != nil {
		return err
	}
	tables, err := clone.Run(ctx, db, p.Warehouse, opts)
	for _, t := range tables {
		a.printf("%s\n", t.Line())
	}
	if err != nil {
		return err
	}

	a.printf("\n$ etl-craft history --pipeline_code %s --all\n", quickstart.Pipeline)
	h, err := inspect.RunHistory(ctx, db, inspect.HistoryRequest{PipelineCode: quickstart.Pipeline, All: true,
		Limit: inspect.DefaultHistoryLimit})
	if err != nil {
		return err
	}
	a.printHistory(h)

	flags, err := rules.Flags(ctx, db, quickstart.Pipeline)
	if err != nil {
		return err
	}
	a.printf("\nThe business rules of %s flagged %d order(s) (AUD_BUSINESS_RULES_RESULTS, cloned too):\n", quickstart.RulesTask, len(flags))
	a.printf("BUSINESS_RULE_NAME\tBUSINESS_RULE_KEY\tSTATUS\n")
	for _, f := range flags {
		a.printf("%s\t%s\t%s\n", f.Rule, f.Key, f.Status)
	}
	if err := a.quickstartScheduled(ctx, cfg, db, out.RunID); err != nil {
		return err
	}
	a.printf("\nquickstart: done. The project is %s; query the warehouse %s, or try\n"+
		"  etl-craft --config %s status --pipeline_code %s --run-id %d\n",
		filepath.Dir(a.configFlag), cfg.Warehouse.DuckDBPath, a.configFlag, quickstart.Pipeline, out.RunID)
	return nil
}

// quickstartFailed prints the error of each task of the run that failed or
// was skipped, and
// the status command that shows the whole run.
func (a *app) quickstartFailed(ctx context.Context, cfg *config.Config, db *engine.DB, runID int64) error {
	st, err := a.quickstartStatus(ctx, cfg, db, runID)
	if err != nil {
		return err
	}
	for _, t := range st.Tasks {
		if t.Error != nil {
			a.printf("%s: %s\n", t.TaskCode, *t.Error)
		}
	}
	a.printf("\nquickstart: the run failed; fix the cause, run quickstart again, or see\n"+
		"  etl-craft --config %s status --pipeline_code %s --run-id %d\n", a.configFlag, quickstart.Pipeline, runID)
	return nil
}

// quickstartStatus returns the status of the example pipeline's run.
func (a *app) quickstartStatus(ctx context.Context, cfg *config.Config, db *engine.DB, runID int64) (report.Status, error) {
	return inspect.RunStatus(ctx, db, quickstart.Pipeline, inspect.RunSelector{ID: runID}, cfg.Orchestration.Location, time.Now())
}

// quickstartScheduled prints what the run's ingestion script loaded, the
// offset it keeps for the next run, and the pipeline's next tick.
func (a *app) quickstartScheduled(ctx context.Context, cfg *config.Config, db *engine.DB, runID int64) error {
	st, err := a.quickstartStatus(ctx, cfg, db, runID)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(st.Tasks, func(t report.TaskStatus) bool { return t.TaskCode == quickstart.ScriptTask })
	if i < 0 {
		return exit.Errorf(exit.Metadata, "the quickstart pipeline %s has no active task %s", quickstart.Pipeline, quickstart.ScriptTask)
	}
	task := st.Tasks[i]
	stored, err := script.StoredOffset(ctx, db, task.TaskID)
	if err != nil {
		return err
	}
	if stored == "" {
		stored = "(none)"
	}
	var loaded int64
	if task.RowsWritten != nil {
		loaded = *task.RowsWritten
	}
	a.printf("\nThe ingestion script ingestion_scripts/%s.py (task %s):\n", quickstart.ScriptTask, quickstart.ScriptTask)
	if loaded > 0 {
		a.printf("  loaded %d rate(s) from data/exchange_rates.csv into main.exchange_rates;\n"+
			"  its offset (AUD_TASK_OFFSET_TRACKER), where the next run starts reading, is now %s.\n", loaded, stored)
	} else {
		a.printf("  found no new rates in data/exchange_rates.csv; its offset (AUD_TASK_OFFSET_TRACKER) stays %s.\n"+
			"  Add a line to the file and the next run loads it.\n", stored)
	}
	p := st.Pipeline
	schedule := "(none)"
	if p.RunSchedule != nil {
		schedule = *p.RunSchedule
	}
	a.printf("\n%s: RUN_SCHEDULE %s, next tick %s. To run it on schedule (docs/server.md):\n"+
		"  etl-craft --config %s server\n", quickstart.Pipeline, schedule, p.DescribeNextTick(), a.configFlag)
	a.printf("and watch it at its console, http://%s/ (docs/console.md), signing in with a token from\n"+
		"  etl-craft --config %s token create --name me --role operator\n", cfg.Orchestration.APIAddress, a.configFlag)
	return nil
}
