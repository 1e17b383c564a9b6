package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/doctor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/project"
)

func (a *app) setupCommand() *cobra.Command {
	var printGrants bool
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Check every connection, then create or upgrade the Engine DB",
		Long: "setup runs doctor's checks (except the Engine DB's tables and migrations); when one\n" +
			"fails it changes nothing. Otherwise it creates the Engine DB tables when there are none\n" +
			"and applies every pending migration. It is idempotent and never prompts.\n" +
			"--print-grants prints the suggested PostgreSQL roles and grants (or, on SQLite, the\n" +
			"file-permission advice) and executes nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.loadConfigForChecks()
			if err != nil {
				return err
			}
			if printGrants {
				a.printf("%s", engine.AccessAdvice(project.EngineOptions(cfg)))
				return nil
			}
			ctx, err := a.acting(cmd.Context())
			if err != nil {
				return err
			}
			return a.setup(ctx, cmd, cfg)
		},
	}
	cmd.Flags().BoolVar(&printGrants, "print-grants", false, "print the suggested roles and grants; execute nothing")
	return cmd
}

// setup checks the deployment and, when every check passes, creates or
// migrates the Engine DB, printing what it did.
func (a *app) setup(ctx context.Context, cmd *cobra.Command, cfg *config.Config) error {
	dir, _ := cfg.MigrationsDir("")
	report := doctor.Run(ctx, doctor.Options{
		Config: cfg, Setup: true, MigrationsDir: dir, Engine: project.EngineOptions(cfg), Warehouse: project.WarehouseOptions(cfg),
	})
	a.printReport(report)
	if report.Failed() {
		a.printf("setup: nothing changed; fix the failed check(s) and run setup again\n")
		a.status = exit.Failure
		return nil
	}
	p, err := project.Open(ctx, cfg, a.projectOptions(project.WithoutWarehouse())...)
	if err != nil {
		return err
	}
	defer p.Close()
	return a.recordAround(ctx, p.DB, cmd, func() error {
		res, err := (&migrate.Runner{DB: p.DB, ProjectDir: dir, Warn: a.warnNotRead}).Setup(ctx)
		if res.Created {
			a.printf("setup: created the Engine DB tables\n")
		}
		for _, f := range res.Applied {
			a.printf("setup: applied %s\n", f.Name)
		}
		if err != nil {
			return err
		}
		if !res.Created && len(res.Applied) == 0 {
			a.printf("setup: the Engine DB is already up to date\n")
		}
		return nil
	})
}
