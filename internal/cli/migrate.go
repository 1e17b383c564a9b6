package cli

import (
	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/migrate"
)

func (a *app) migrateCommand() *cobra.Command {
	var dir string
	var outOfOrder bool
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending ENGINE and PROJECT migrations",
		Long: "migrate applies the migrations packaged with etl-craft, then the project's own\n" +
			"(--migrations-dir, else $ETL_CRAFT_MIGRATIONS_DIR, else migrations/ in the project),\n" +
			"each file in its own transaction with its SCHEMA_MIGRATIONS row. Before applying anything it\n" +
			"refuses a pending project file that is empty, that controls the transaction (BEGIN, COMMIT,\n" +
			"ROLLBACK, ...) or holds a statement that cannot run inside one, or, unless --out-of-order,\n" +
			"that sorts before an applied file or shares its number with another file.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.openSession(cmd)
			if err != nil {
				return err
			}
			defer s.db.Close()
			projectDir, _ := s.cfg.MigrationsDir(dir)
			r := &migrate.Runner{DB: s.db, ProjectDir: projectDir, OutOfOrder: outOfOrder, Warn: a.warnNotRead,
				OnApplied: func(f migrate.File) { a.printf("applied %s\n", f.Name) }}
			// An older Engine DB may get AUD_ACTIONS from this very run.
			return a.recordAround(s.ctx, s.db, cmd, func() error {
				applied, err := r.Migrate(s.ctx)
				if err != nil {
					return err
				}
				if len(applied) == 0 {
					a.printf("migrate: already up to date\n")
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&dir, "migrations-dir", "", "the project's migrations folder")
	cmd.Flags().BoolVar(&outOfOrder, "out-of-order", false,
		"apply pending project files that sort before an applied file or share a number with another file (recorded in AUD_ACTIONS)")
	return cmd
}

// warnNotRead logs a file of the migrations folder that looks like a
// migration but is not read.
func (a *app) warnNotRead(message string) {
	a.logger().Warn(message)
}
