package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

func (a *app) upgradeTargetsCommand() *cobra.Command {
	var action, target string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "upgrade-targets",
		Short: "Add the run-identity columns older targets lack",
		Long: "upgrade-targets adds PIPELINE_ID, PIPELINE_RUN_ID and TASK_RUN_ID, nullable BIGINT\n" +
			"columns, to the existing targets of the active SQL tasks (any action but DROP_TABLE) and\n" +
			"ingestion scripts that lack them; historical rows keep NULL in them. --action and --target\n" +
			"narrow the targets; --dry-run prints the statements without running them.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.withWarehouse(cmd, !dryRun, func(ctx context.Context, db *engine.DB, w warehouse.Warehouse) error {
				ups, err := sqltask.UpgradeTargets(ctx, db, w, action, target, dryRun)
				for _, u := range ups {
					a.printUpgrade(u, dryRun)
				}
				if err == nil && len(ups) == 0 {
					a.printf("No active configured targets to upgrade\n")
				}
				return err
			})
		},
	}
	cmd.Flags().StringVar(&action, "action", "", "only the targets of tasks with this SQL_ACTION")
	cmd.Flags().StringVar(&target, "target", "", "only this target, schema.table or database.schema.table")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the statements without running them")
	return cmd
}

// printUpgrade prints what upgrade-targets found for one target.
func (a *app) printUpgrade(u sqltask.Upgrade, dryRun bool) {
	cols := strings.Join(u.Added, ", ")
	switch {
	case !u.Exists:
		a.printf("%s: does not exist yet; the task that creates it adds the identity columns\n", u.Target)
	case len(u.Added) == 0:
		a.printf("%s: identity columns already exist\n", u.Target)
	case dryRun:
		a.printf("%s: would add nullable %s\n", u.Target, cols)
		for _, s := range u.SQL {
			a.printf("%s\n", s)
		}
	default:
		a.printf("%s: added nullable %s; historical rows retain NULL\n", u.Target, cols)
	}
}
