package cli

import (
	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/run"
)

func (a *app) markCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mark",
		Short: "Set a task's or a run's status by hand, or record a stand-in run",
		Long: "mark --pipeline_code P --task_code T --status S --reason R sets T's status under the selected run\n" +
			"(--run-id, --run-key, or the pipeline's one run not yet ended) to SUCCESS, FAILED or SKIPPED. A run\n" +
			"that had ended is reopened, and the tasks the engine skipped are reset, so the next run of the\n" +
			"pipeline goes on from there: a task marked SUCCESS lets its dependents run, one marked FAILED gets\n" +
			"another attempt. --rows N states a SUCCESS task's row count, which HAS_DATA dependencies read. A\n" +
			"running task is refused; --stale reconciles it first, for a task whose process is gone.\n\n" +
			"Without --task_code the run itself gets the status, ending it now if it had not ended; its tasks\n" +
			"keep theirs. --new-run records a finished stand-in run instead (with --task_code, that task too),\n" +
			"which downstream gates judge like a real run.\n\n" +
			"Every mark is recorded in AUD_RUN_INTERVENTIONS with its reason. Refused in remote mode.",
		Args: cobra.NoArgs,
	}
	pipe := addPipelineFlag(cmd, true, "the pipeline (required)")
	var req run.MarkRequest
	var rows int64
	var newRun bool
	fl := cmd.Flags()
	fl.StringVar(&req.TaskCode, "task_code", "", "the task to mark; without it the run itself is marked")
	fl.StringVar(&req.Status, "status", "", "SUCCESS, FAILED or SKIPPED (required)")
	fl.StringVar(&req.Reason, "reason", "", "why (required); recorded with the change")
	fl.Int64Var(&rows, "rows", 0, "with SUCCESS: the task's row count, which a HAS_DATA dependency reads")
	fl.BoolVar(&req.Stale, "stale", false, "reconcile the task first: mark a task whose process is gone once its lease expired")
	fl.BoolVar(&newRun, "new-run", false, "record a finished stand-in run with the status instead of marking a run")
	runSel := addRunFlags(cmd)
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sel, err := selection(pipe, runSel)
		if err != nil {
			return err
		}
		switch {
		case req.Status == "":
			return usagef("--status is required: SUCCESS, FAILED or SKIPPED")
		case newRun && !sel.IsZero():
			return usagef("--new-run records a new run: it takes no --run-id or --run-key")
		case newRun && req.Stale:
			return usagef("--stale marks a task of an existing run: it does not go with --new-run")
		}
		if err := run.CheckReason("mark", req.Reason); err != nil {
			return err
		}
		if cmd.Flags().Changed("rows") {
			req.Rows = &rows
		}
		req.PipelineCode, req.RunID, req.RunKey = pipe.code, sel.ID, sel.Key
		s, sup, done, err := a.supervising(cmd, pipe.code, req.TaskCode)
		if err != nil {
			return err
		}
		defer done()
		var c run.Change
		if newRun {
			c, err = sup.StandIn(s.ctx, req)
		} else {
			c, err = sup.Mark(s.ctx, req)
		}
		if err != nil {
			return err
		}
		return a.printOperation(s, format, c)
	}
	return cmd
}
