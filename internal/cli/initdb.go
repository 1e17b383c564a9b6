package cli

import (
	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/migrate"
)

func (a *app) initDBCommand() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "init-db",
		Short: "Create the Engine DB tables in an empty database",
		Long: "init-db creates every Engine DB table and records the packaged migrations, in one\n" +
			"transaction under the MIGRATE lock. It refuses a database that already has Engine DB\n" +
			"tables; use migrate for those, or --force for a database empty apart from a leftover table.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, err := a.acting(cmd.Context())
			if err != nil {
				return err
			}
			cfg, err := a.loadConfig()
			if err != nil {
				return err
			}
			db, err := a.openEngine(ctx, cfg)
			if err != nil {
				return err
			}
			defer db.Close()
			// The request is recorded once AUD_ACTIONS exists: after the work.
			defer a.record(ctx, db, cmd, "", "")
			r := &migrate.Runner{DB: db}
			res, err := r.InitDB(ctx, force)
			if err != nil {
				return err
			}
			a.printf("init-db: applied %d statement(s) from the packaged schema\n", res.Statements)
			if len(res.Recorded) > 0 {
				a.printf("init-db: recorded %d packaged migration(s) as applied (the schema includes them)\n", len(res.Recorded))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "apply the schema even though Engine DB tables exist")
	return cmd
}
