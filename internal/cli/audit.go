package cli

import (
	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/inspect"
)

func (a *app) auditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show recorded command requests and metadata changes",
		Long: "audit prints two tables: the requests of state-changing commands (AUD_ACTIONS: time, actor\n" +
			"and kind, command, outcome, masked arguments) and the captured changes of CFG_ rows\n" +
			"(AUD_METADATA_CHANGES: time, actor and kind, table, row key, operation, before and after\n" +
			"JSON, migration file). --pipeline_code keeps what concerns one pipeline, including rows of\n" +
			"its tasks since retired or deleted; --since keeps what was recorded from an ISO date or\n" +
			"timestamp on (UTC unless it has an offset). audit itself records nothing.",
		Args: cobra.NoArgs,
	}
	pipe := addPipelineFlag(cmd, false, "keep what concerns this pipeline")
	var since string
	cmd.Flags().StringVar(&since, "since", "", "keep what was recorded from this ISO date or timestamp on")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		f := inspect.AuditFilter{PipelineCode: pipe.code}
		if cmd.Flags().Changed("since") {
			t, err := inspect.ParseSince(since)
			if err != nil {
				return err
			}
			f.Since = t
		}
		_, db, err := a.openForReading(cmd.Context())
		if err != nil {
			return err
		}
		defer db.Close()
		trail, err := inspect.ReadAudit(cmd.Context(), db, f)
		if err != nil {
			return err
		}
		if format.json() {
			return a.printJSON(trail)
		}
		actions := newTable("AT", "ACTOR", "KIND", "COMMAND", "OUTCOME", "ARGUMENTS")
		for _, x := range trail.Actions {
			actions.add(x.At, x.Actor, x.Kind, x.Command, x.Outcome, x.Arguments)
		}
		a.printTable(actions, "no actions")
		a.printf("\n")
		changes := newTable("AT", "ACTOR", "KIND", "TABLE", "ROW", "OPERATION", "BEFORE", "AFTER", "MIGRATION")
		for _, c := range trail.Changes {
			changes.add(c.At, c.Actor, c.Kind, c.TableName, c.RowKey, c.Operation, c.Before, c.After, c.Migration)
		}
		a.printTable(changes, "no metadata changes")
		return nil
	}
	return cmd
}
