package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/inspect"
)

func (a *app) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a run and every active task of its pipeline",
		Long: "status prints the selected run (id, key, trigger kind, run date, status, start, duration,\n" +
			"SLA), the pipeline's pause if it is paused, each active task's status, attempts, rows\n" +
			"written, duration and first error line (NOT RUN while it has no row), and the tasks that\n" +
			"can no longer run because upstream tasks failed. Select the run with --run-id or\n" +
			"--run-key; without either, status shows the pipeline's QUEUED or IN-PROGRESS run, else its\n" +
			"most recent run, and logs which run it chose. A last line gives the pipeline's next tick, as\n" +
			"in list; the ticks are kept by etl-craft server (not in this release yet).",
		Args: cobra.NoArgs,
	}
	scope := addRunScope(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sel, db, err := scope.open(cmd.Context(), a)
		if err != nil {
			return err
		}
		defer db.Close()
		st, err := inspect.RunStatus(cmd.Context(), db, scope.pipe.code, sel, scope.cfg.Orchestration.Location, time.Now())
		if err != nil {
			return err
		}
		r := st.Run
		a.logChosenRun(st.Chosen, r.PipelineCode, r.ID)
		if scope.format.json() {
			return a.printJSON(st)
		}
		a.printf("%s: pipeline_run_id=%d key=%s kind=%s run_date=%s status=%s\n",
			r.PipelineCode, r.ID, field(r.Key), r.TriggerKind, field(r.RunDate), r.Status)
		a.printf("start=%s duration_seconds=%s SLA=%s sla_hours=%s\n",
			field(r.StartDate), field(st.DurationSeconds), field(r.SLAStatus), field(st.Pipeline.SLAInHours))
		if st.Pipeline.Paused != nil {
			a.printf("%s\n", st.Pipeline.Paused.Describe())
		}
		t := newTable("TASK", "STATUS", "ATTEMPTS", "ROWS_WRITTEN", "DURATION_SECONDS", "ERROR")
		for _, ts := range st.Tasks {
			status := "NOT RUN"
			if ts.Status != nil {
				status = *ts.Status
			}
			t.add(ts.TaskCode, status, ts.Attempts, ts.RowsWritten, ts.DurationSeconds, ts.Error)
		}
		a.printTable(t, "no active tasks")
		blocked := "(none)"
		if len(st.BlockedByFailures) > 0 {
			blocked = strings.Join(st.BlockedByFailures, ", ")
		}
		a.printf("blocked by failures: %s\n", blocked)
		a.printf("next tick: %s\n", st.Pipeline.DescribeNextTick())
		return nil
	}
	return cmd
}

// logChosenRun says, at INFO on stderr, which run a read-only command shows
// when no --run-id or --run-key chose it; the result on stdout stays as it is.
func (a *app) logChosenRun(chosen inspect.Choice, pipelineCode string, runID int64) {
	switch chosen {
	case inspect.ChoiceActive:
		a.logger().Info("showing the pipeline's run that has not ended (no --run-id or --run-key given)",
			"pipeline", pipelineCode, "pipeline_run_id", runID)
	case inspect.ChoiceLatest:
		a.logger().Info("showing the pipeline's most recent run: none is QUEUED or IN-PROGRESS "+
			"(--run-id or --run-key chooses another)", "pipeline", pipelineCode, "pipeline_run_id", runID)
	}
}
