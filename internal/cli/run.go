package cli

import (
	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/run"
)

func (a *app) runCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a pipeline, one of its tasks, or an orchestrator's first or last step",
		Long: "run --pipeline_code P runs the pipeline: it resumes the pipeline's run in progress, or starts\n" +
			"a new one (admitted through its pipeline gate: unmet dependencies on other pipelines record it\n" +
			"SKIPPED), starts every task whose dependencies are met (at most Max_parallel_tasks at once),\n" +
			"and ends the run when nothing more can start. It prints\n" +
			"  P: pipeline_run_id=<id> <STATUS>[ — detail]\n" +
			"and exits 0 for SUCCESS or SKIPPED, 1 for FAILED or CANCELLED, 22 when the run was left\n" +
			"unfinished. A paused pipeline starts nothing and exits 0.\n\n" +
			"run --pipeline_code P --task_code T runs one task under the selected run (--run-id, --run-key,\n" +
			"or the pipeline's one run not yet ended). A task already SUCCESS or SKIPPED is not run again\n" +
			"(exit 0), a task running elsewhere is left alone (exit 22), and a task whose dependencies are\n" +
			"not met yet records nothing (exit 23). --force runs it anyway, reopening an ended run.\n\n" +
			"Operator overrides, each recorded in AUD_RUN_INTERVENTIONS with its --reason (local mode only):\n" +
			"--task_code T --ignore-dependencies, --task_code T --rerun [--with-downstream], --skip, and\n" +
			"--backfill FROM:TO (one BACKFILL run per date, oldest first, stopping at the first that does not\n" +
			"end SUCCESS or SKIPPED). An orchestrator runs --init-only, then each task, then --finalize-only.\n\n" +
			"SIGINT, SIGTERM and SIGHUP stop the running tasks, record them FAILED and leave the run\n" +
			"IN-PROGRESS for the next run to resume.",
		Args: cobra.NoArgs,
	}
	pipe := addPipelineFlag(cmd, true, "the pipeline to run (required)")
	var o run.Order
	fl := cmd.Flags()
	fl.StringVar(&o.TaskCode, "task_code", "", "run only this task")
	fl.BoolVar(&o.InitOnly, "init-only", false, "start or resume the run without running a task: an orchestrator's first step")
	fl.BoolVar(&o.FinalizeOnly, "finalize-only", false, "end the run from its tasks' statuses: an orchestrator's last step")
	fl.BoolVar(&o.Force, "force", false, "run tasks whatever their status and dependencies (local mode only)")
	fl.BoolVar(&o.IgnoreDependencies, "ignore-dependencies", false, "with --task_code: run the task without checking its dependencies (needs --reason)")
	fl.BoolVar(&o.Rerun, "rerun", false, "with --task_code: run the task again under its run, even if it ended (needs --reason)")
	fl.BoolVar(&o.WithDownstream, "with-downstream", false, "with --rerun: run every task after it again too, in dependency order")
	fl.BoolVar(&o.Skip, "skip", false, "record a run SKIPPED on purpose, running nothing (needs --reason)")
	fl.StringVar(&o.RunDate, "run-date", "", "YYYY-MM-DD: the date a new run runs as of ($$run_date); today unless given")
	fl.StringVar(&o.Backfill, "backfill", "", "FROM:TO (YYYY-MM-DD): run the pipeline once per date, as backfill runs (needs --reason)")
	fl.StringVar(&o.Reason, "reason", "", "why, for --ignore-dependencies, --rerun, --skip or --backfill; recorded with the run")
	runSel := addRunFlags(cmd)
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sel, err := selection(pipe, runSel)
		if err != nil {
			return err
		}
		o.PipelineCode, o.RunID, o.RunKey = pipe.code, sel.ID, sel.Key
		if err := o.Validate(); err != nil {
			return err
		}
		s, sup, done, err := a.supervising(cmd, pipe.code, o.TaskCode)
		if err != nil {
			return err
		}
		defer done()
		req := o.Request
		if o.Backfill != "" {
			from, to, _ := o.BackfillRange()
			done, err := sup.Backfill(s.ctx, run.BackfillRequest{PipelineCode: pipe.code, From: from, To: to, Reason: o.Reason})
			if err != nil {
				return err
			}
			a.status = done.Code
			if format.json() {
				return a.printJSON(done.Document(exit.Flag))
			}
			for _, o := range done.Runs {
				a.printf("%s\n", exit.Flags(o.String()))
			}
			a.printf("%s\n", exit.Flags(done.Message))
			return nil
		}
		var out run.Outcome
		switch {
		case o.Skip:
			out, err = sup.Skip(s.ctx, req)
		case o.Rerun:
			out, err = sup.Rerun(s.ctx, req, o.WithDownstream)
		case o.TaskCode != "":
			out, err = sup.RunTask(s.ctx, req)
		case o.InitOnly:
			out, err = sup.InitRun(s.ctx, req)
		case o.FinalizeOnly:
			out, err = sup.FinalizeRun(s.ctx, req)
		default:
			out, err = sup.RunPipeline(s.ctx, req)
		}
		if err != nil {
			return err
		}
		a.status = out.Code
		if format.json() {
			return a.printJSON(out.Document(exit.Flag))
		}
		a.printf("%s\n", exit.Flags(out.String()))
		return nil
	}
	return cmd
}

// selection checks --pipeline_code and returns the run selector (exit 2 for
// either mistake).
func selection(pipe *pipelineFlag, runSel *runFlags) (inspect.RunSelector, error) {
	if err := pipe.check(); err != nil {
		return inspect.RunSelector{}, err
	}
	return runSel.selector()
}

// supervising opens the project of a command that runs or changes runs,
// records its request, and returns the project's supervisor; done closes
// the project.
func (a *app) supervising(cmd *cobra.Command, pipelineCode, taskCode string) (*session, *run.Supervisor, func(), error) {
	s, err := a.openProject(cmd)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := a.record(s.ctx, s.db, cmd, pipelineCode, taskCode); err != nil {
		s.p.Close()
		return nil, nil, nil, err
	}
	return s, s.p.Supervisor(), func() { s.p.Close() }, nil
}

// nullable returns nil for a zero id.
func nullable(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}
