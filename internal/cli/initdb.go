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
			s, err := a.openSession(cmd)
			if err != nil {
				return err
			}
			defer s.db.Close()
			// The request is recorded once AUD_ACTIONS exists: after the work.
			return a.recordAround(s.ctx, s.db, cmd, func() error {
				res, err := (&migrate.Runner{DB: s.db}).InitDB(s.ctx, force)
				if err != nil {
					return err
				}
				a.printf("init-db: applied %d statement(s) from the packaged schema\n", res.Statements)
				if len(res.Recorded) > 0 {
					a.printf("init-db: recorded %d packaged migration(s) as applied (the schema includes them)\n", len(res.Recorded))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "apply the schema even though Engine DB tables exist")
	return cmd
}
