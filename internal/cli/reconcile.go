package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/run"
)

func (a *app) reconcileCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Fence the attempts whose process is gone or stopped renewing its lease, and release their runs",
		Long: "reconcile finds the CLAIMED and RUNNING attempts whose owner can no longer finish them. On this\n" +
			"host, an attempt whose process is gone is recorded LOST at once, live lease or not, and one whose\n" +
			"process is alive but whose lease expired (stuck) is recorded LOST and its process stopped;\n" +
			"another host's attempt is recorded LOST once its lease has been expired for two more lease\n" +
			"periods. The task then reads FAILED, naming the lost owner, and is retried when its RETRIES\n" +
			"allow. Runs whose supervisor is gone from this host or whose lease expired, and that have no\n" +
			"live attempt, are released so the next run resumes them. Every run does this first.",
		Args: cobra.NoArgs,
	}
	pipe := addPipelineFlag(cmd, false, "only this pipeline's work")
	var taskCode string
	cmd.Flags().StringVar(&taskCode, "task_code", "", "only this task's attempts (needs --pipeline_code)")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if taskCode != "" && pipe.code == "" {
			return usagef("--task_code needs --pipeline_code")
		}
		s, err := a.openSession(cmd)
		if err != nil {
			return err
		}
		defer s.db.Close()
		if err := a.record(s.ctx, s.db, cmd, pipe.code, taskCode); err != nil {
			return err
		}
		sup := run.New(run.Options{DB: s.db, Logger: a.logger()})
		rec, err := sup.Reconcile(s.ctx, run.Scope{PipelineCode: pipe.code, TaskCode: taskCode})
		if err != nil {
			return err
		}
		if format.json() {
			return a.printJSON(reconciliationDocument(rec))
		}
		for _, l := range rec.Lost {
			line := fmt.Sprintf("LOST\t%s.%s\tattempt_id=%d\tpipeline_run_id=%d\towner=%s",
				l.PipelineCode, l.TaskCode, l.AttemptID, l.PipelineRunID, l.Owner)
			if l.Stopped {
				line += "\tprocess stopped"
			}
			if l.RetryAttemptID != 0 {
				line += fmt.Sprintf("\tretry queued: attempt_id=%d", l.RetryAttemptID)
			}
			a.printf("%s\n", line)
		}
		for _, id := range rec.Released {
			a.printf("RELEASED\tpipeline_run_id=%d\n", id)
		}
		a.printf("reconcile: %d attempt(s) LOST, %d run(s) released\n", len(rec.Lost), len(rec.Released))
		return nil
	}
	return cmd
}

// reconciliationDocument is the JSON form of a reconciliation:
// etl-craft/reconciliation/1.
func reconciliationDocument(rec run.Reconciliation) report.Reconciliation {
	doc := report.Reconciliation{Schema: report.SchemaReconciliation, LostAttempts: make([]report.LostAttempt, 0, len(rec.Lost)),
		ReleasedRunIDs: rec.Released}
	for _, l := range rec.Lost {
		doc.LostAttempts = append(doc.LostAttempts, report.LostAttempt{AttemptID: l.AttemptID, TaskRunID: l.TaskRunID,
			PipelineRunID: l.PipelineRunID, PipelineCode: l.PipelineCode, TaskCode: l.TaskCode, AttemptNumber: l.Number,
			OwnerID: l.Owner, ProcessStopped: l.Stopped, RetryAttemptID: nullable(l.RetryAttemptID)})
	}
	if doc.ReleasedRunIDs == nil {
		doc.ReleasedRunIDs = []int64{}
	}
	return doc
}
