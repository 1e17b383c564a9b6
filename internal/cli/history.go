package cli

import (
	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/report"
)

func (a *app) historyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show a pipeline's runs, or one task's, and their interventions",
		Long: "history shows the pipeline's most recent runs, newest first (--limit, default 20), or the\n" +
			"one run --run-id or --run-key selects. The pipeline view gives each run's status, run date,\n" +
			"start and end, SLA status and who started and ended it; with --task_code, that task's status,\n" +
			"attempts, counts and error in each run. Operator interventions on the runs shown follow.",
		Args: cobra.NoArgs,
	}
	scope := addRunScope(cmd)
	var taskCode string
	var all bool
	var limit int
	cmd.Flags().StringVar(&taskCode, "task_code", "", "show this task's runs instead of the pipeline's")
	cmd.Flags().BoolVar(&all, "all", false, "list the most recent runs (the default without --run-id or --run-key)")
	cmd.Flags().IntVar(&limit, "limit", inspect.DefaultHistoryLimit, "how many of the most recent runs to list, newest first")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sel, db, err := scope.open(cmd.Context(), a)
		if err != nil {
			return err
		}
		defer db.Close()
		h, err := inspect.RunHistory(cmd.Context(), db, inspect.HistoryRequest{
			PipelineCode: scope.pipe.code, TaskCode: taskCode, Selector: sel, All: all, Limit: limit})
		if err != nil {
			return err
		}
		if scope.format.json() {
			return a.printJSON(h)
		}
		a.printHistory(h)
		return nil
	}
	return cmd
}

// printHistory writes the runs table, then the interventions on them.
func (a *app) printHistory(h report.History) {
	if h.Empty() {
		a.printf("(no runs yet)\n")
		return
	}
	if h.TaskCode == nil {
		t := newTable("PIPELINE_RUN_ID", "STATUS", "RUN_DATE", "START_DATE", "END_DATE", "SLA_STATUS",
			"STARTED_BY", "STARTED_BY_KIND", "ENDED_BY", "ENDED_BY_KIND")
		for _, r := range h.Runs {
			runDate := field(r.RunDate)
			if r.Backfill {
				runDate += " (backfill)"
			}
			t.add(r.ID, r.Status, runDate, r.StartDate, r.EndDate, r.SLAStatus,
				r.StartedBy, r.StartedByKind, r.EndedBy, r.EndedByKind)
		}
		a.printTable(t, "no runs yet")
	} else {
		t := newTable("PIPELINE_RUN_ID", "STATUS", "ATTEMPTS", "SOURCE_COUNT", "TARGET_COUNT", "START_DATE",
			"END_DATE", "ERROR_MESSAGE")
		for _, r := range h.TaskRuns {
			t.add(r.PipelineRunID, r.Status, r.AttemptCount, r.SourceCount, r.TargetCount, r.StartDate, r.EndDate,
				r.ErrorMessage)
		}
		a.printTable(t, "no runs yet")
	}
	if len(h.Changes) == 0 {
		return
	}
	a.printf("\nInterventions:\n")
	t := newTable("PIPELINE_RUN_ID", "TASK", "ACTION", "FROM", "TO", "BY", "AT", "REASON")
	for _, c := range h.Changes {
		task, from, to := "(the run)", "-", "(reset)"
		if c.TaskCode != nil {
			task = *c.TaskCode
		}
		if c.FromStatus != nil {
			from = *c.FromStatus
		}
		if c.ToStatus != nil {
			to = *c.ToStatus
		}
		t.add(c.PipelineRunID, task, c.Action, from, to, c.RequestedBy, c.RequestedAt, c.Reason)
	}
	a.printTable(t, "no interventions")
}
