package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

func (a *app) rehashCommand() *cobra.Command {
	var target string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "rehash --target schema.table",
		Short: "Recompute a merge target's change hash with version 2",
		Long: "rehash recomputes the HASH_KEY of every row of an SCD1_MERGE or SCD2_MERGE target,\n" +
			"history included, with change hash version 2, in one statement, then records version 2\n" +
			"in AUD_TARGET_HASH_VERSION so merges into it may run. The hashed columns are the merge\n" +
			"contract (MERGE_KEY, MERGE_COMPARE_COLUMNS) of the active tasks merging into the target,\n" +
			"which must agree. --dry-run counts the rows and prints the statement, changing nothing.\n" +
			"The warehouse and the Engine DB commit separately: after a failure, run rehash again.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if target == "" {
				return usagef("--target is required: name the merge target as schema.table")
			}
			return a.withWarehouse(cmd, !dryRun, func(ctx context.Context, db *engine.DB, w warehouse.Warehouse) error {
				r, err := sqltask.Rehash(ctx, db, w, target, dryRun)
				if err != nil {
					return err
				}
				if dryRun {
					a.printf("%s: would rehash %d row(s) with hash version 2\n%s\n", target, r.Rows, r.SQL)
				} else {
					a.printf("%s: rehashed %d row(s) with hash version 2\n", target, r.Rows)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&target, "target", "", "the merge target, schema.table or database.schema.table")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count the rows and print the statement without running it")
	return cmd
}

// withWarehouse runs fn with the Engine DB and the configured warehouse,
// held as the only writer where the warehouse has one writer at a time.
// A command that changes something (writes) records its request.
func (a *app) withWarehouse(cmd *cobra.Command, writes bool, fn func(ctx context.Context, db *engine.DB, w warehouse.Warehouse) error) error {
	s, err := a.openProject(cmd)
	if err != nil {
		return err
	}
	defer s.p.Close()
	if s.p.Warehouse == nil {
		return exit.Errorf(exit.Configuration, "%s needs the warehouse: add a Warehouse section to %s", cmd.Name(), config.FileName)
	}
	if writes {
		if err := a.record(s.ctx, s.db, cmd, "", ""); err != nil {
			return err
		}
	}
	w, release, err := s.p.Warehouse.Acquire(s.ctx)
	if err != nil {
		return err
	}
	defer release()
	return fn(s.ctx, s.db, w)
}
