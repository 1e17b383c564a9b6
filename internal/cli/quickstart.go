package cli

import (
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/quickstart"
)

func (a *app) quickstartCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "quickstart [DIR]",
		Short: "Write an example project, set it up, run its pipeline, clone and show the history",
		Long: "quickstart writes a project into DIR (default ./" + quickstart.DefaultDir + "): a\n" +
			"craft-connector.yml with a SQLite Engine DB and a DuckDB warehouse, both files in the\n" +
			"project, and migrations/0001_example_pipeline.sql registering an example pipeline.\n" +
			"Then it runs setup. Running it again reuses the project.",
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
			ctx, err := a.acting(cmd.Context())
			if err != nil {
				return err
			}
			cfg, err := a.loadConfigForChecks()
			if err != nil {
				return err
			}
			if err := a.setup(ctx, cmd, cfg); err != nil || a.status != 0 {
				return err
			}
			a.printf("quickstart: the pipeline %s is registered; try `etl-craft --config %s doctor`\n",
				quickstart.Pipeline, a.configFlag)
			return nil
		},
	}
}
