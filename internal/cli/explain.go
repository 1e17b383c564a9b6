package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/inspect"
)

func (a *app) explainCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "explain",
		Short: "Say why a task is in its state under a run, and what happens next",
		Long: "explain --pipeline_code P --task_code T prints, for the selected run (--run-id, --run-key, or as\n" +
			"status chooses it): T's state (its status, or while it has none READY, WAITING, BLOCKED or GATED, as\n" +
			"the dispatcher's readiness rule decides); the run and T's latest attempt; the pipeline's pause; the\n" +
			"run condition and how many dependencies it needs; one line per dependency with its type, the\n" +
			"upstream's status, whether it is met (yes, no, or open) and why; the waits of the run's gates; when a\n" +
			"queued retry starts; and what happens next. It only reads the Engine DB.",
		Args: cobra.NoArgs,
	}
	scope := addRunScope(cmd)
	var taskCode string
	cmd.Flags().StringVar(&taskCode, "task_code", "", "the task to explain (required)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if !cmd.Flags().Changed("task_code") || taskCode == "" {
			return usagef("--task_code is required")
		}
		sel, db, err := scope.open(cmd.Context(), a)
		if err != nil {
			return err
		}
		defer db.Close()
		e, err := inspect.Explain(cmd.Context(), db, scope.pipe.code, taskCode, sel, time.Now())
		if err != nil {
			return err
		}
		r := e.Run
		a.logChosenRun(e.Chosen, r.PipelineCode, r.ID)
		if scope.format.json() {
			return a.printJSON(e)
		}
		a.printf("%s.%s: %s\n", e.PipelineCode, e.TaskCode, e.State)
		attempt := "attempt=none"
		if at := e.Attempt; at != nil {
			attempt = "attempt=" + field(at.AttemptNumber) + " attempt_id=" + field(at.AttemptID) + " attempt_status=" + at.Status
		}
		a.printf("pipeline_run_id=%d key=%s kind=%s run_date=%s status=%s; %s\n", r.ID, field(r.Key), r.TriggerKind, field(r.RunDate), r.Status, attempt)
		if e.Paused != nil {
			a.printf("%s\n", e.Paused.Describe())
		}
		a.printf("run_condition=%s required_count=%d\n", e.RunCondition, e.RequiredCount)
		for _, d := range e.Dependencies {
			status := "NOT RUN"
			if d.Status != nil {
				status = *d.Status
			}
			a.printf("%s: %s status=%s met=%s; %s\n", d.Upstream, d.Type, status, d.Met, d.Reason)
		}
		for _, w := range e.GateWaits {
			a.printf("gate_wait %s: first_check_at=%s next_check_at=%s looks=%d wait_until=%s\n",
				w.Gate, w.FirstCheckAt, field(w.NextCheckAt), w.Looks, w.WaitUntil)
		}
		if e.RetryAt != nil {
			a.printf("retry_at=%s\n", e.RetryAt)
		}
		a.printf("next: %s\n", e.Next)
		return nil
	}
	return cmd
}
