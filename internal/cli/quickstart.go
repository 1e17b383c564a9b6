package cli

import (
	"context"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler/rules"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/quickstart"
	"github.com/etl-craft/etl-craft/internal/run"
)

func (a *app) quickstartCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "quickstart [DIR]",
		Short: "Write an example project, set it up, run its pipeline, clone and show the history",
		Long: "quickstart writes a project into DIR (default ./" + quickstart.DefaultDir + "): a\n" +
			"craft-connector.yml with a SQLite Engine DB and a DuckDB warehouse, both files in the\n" +
			"project, and migrations/0001_example_pipeline.sql registering an example pipeline of SQL\n" +
			"tasks. Then it runs setup, runs the pipeline, clones the Engine DB into the warehouse and\n" +
			"prints the pipeline's history. Running it again reuses the project and adds a run.",
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
		return nil
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
	a.printf("\nquickstart: done. The project is %s; query the warehouse %s, or try\n"+
		"  etl-craft --config %s status --pipeline_code %s --run-id %d\n",
		filepath.Dir(a.configFlag), cfg.Warehouse.DuckDBPath, a.configFlag, quickstart.Pipeline, out.RunID)
	return nil
}
