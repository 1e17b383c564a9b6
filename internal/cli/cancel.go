package cli

import (
	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/run"
)

func (a *app) cancelCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cancel",
		Short: "Cancel a run and stop its running tasks",
		Long: "cancel --pipeline_code P --reason R ends the selected run (--run-id, --run-key, or the pipeline's\n" +
			"one run not yet ended; a QUEUED run too) CANCELLED, with its running tasks. The process running\n" +
			"each task stops it within a few seconds, and a process supervising the run starts nothing more\n" +
			"and exits 1. A cancelled run is never reopened: the next run is a new run. The cancel of each\n" +
			"task and of the run is recorded in AUD_RUN_INTERVENTIONS with the reason. Refused in remote mode.",
		Args: cobra.NoArgs,
	}
	pipe := addPipelineFlag(cmd, true, "the pipeline (required)")
	var reason string
	cmd.Flags().StringVar(&reason, "reason", "", "why (required); recorded with the cancel")
	runSel := addRunFlags(cmd)
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sel, err := selection(pipe, runSel)
		if err != nil {
			return err
		}
		if err := run.CheckReason("cancel", reason); err != nil {
			return err
		}
		s, sup, done, err := a.supervising(cmd, pipe.code, "")
		if err != nil {
			return err
		}
		defer done()
		c, err := sup.Cancel(s.ctx, run.CancelRequest{PipelineCode: pipe.code, RunID: sel.ID, RunKey: sel.Key, Reason: reason})
		if err != nil {
			return err
		}
		return a.printOperation(s, format, c)
	}
	return cmd
}
