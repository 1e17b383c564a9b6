package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

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
	var f runOptions
	fl := cmd.Flags()
	fl.StringVar(&f.task, "task_code", "", "run only this task")
	fl.BoolVar(&f.initOnly, "init-only", false, "start or resume the run without running a task: an orchestrator's first step")
	fl.BoolVar(&f.finalizeOnly, "finalize-only", false, "end the run from its tasks' statuses: an orchestrator's last step")
	fl.BoolVar(&f.force, "force", false, "run tasks whatever their status and dependencies (local mode only)")
	fl.BoolVar(&f.ignoreDeps, "ignore-dependencies", false, "with --task_code: run the task without checking its dependencies (needs --reason)")
	fl.BoolVar(&f.rerun, "rerun", false, "with --task_code: run the task again under its run, even if it ended (needs --reason)")
	fl.BoolVar(&f.withDownstream, "with-downstream", false, "with --rerun: run every task after it again too, in dependency order")
	fl.BoolVar(&f.skip, "skip", false, "record a run SKIPPED on purpose, running nothing (needs --reason)")
	fl.StringVar(&f.runDate, "run-date", "", "YYYY-MM-DD: the date a new run runs as of ($$run_date); today unless given")
	fl.StringVar(&f.backfill, "backfill", "", "FROM:TO (YYYY-MM-DD): run the pipeline once per date, as backfill runs (needs --reason)")
	fl.StringVar(&f.reason, "reason", "", "why, for --ignore-dependencies, --rerun, --skip or --backfill; recorded with the run")
	runSel := addRunFlags(cmd)
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sel, err := selection(pipe, runSel)
		if err != nil {
			return err
		}
		if err := f.check(sel); err != nil {
			return err
		}
		s, sup, done, err := a.supervising(cmd, pipe.code, f.task)
		if err != nil {
			return err
		}
		defer done()
		req := run.Request{PipelineCode: pipe.code, TaskCode: f.task, RunID: sel.ID, RunKey: sel.Key, RunDate: f.runDate,
			Force: f.force, IgnoreDependencies: f.ignoreDeps, Reason: f.reason}
		if f.backfill != "" {
			from, to, _ := strings.Cut(f.backfill, ":")
			done, err := sup.Backfill(s.ctx, run.BackfillRequest{PipelineCode: pipe.code, From: from, To: to, Reason: f.reason})
			if err != nil {
				return err
			}
			a.status = done.Code
			if format.json() {
				return a.printJSON(backfillDocument(done))
			}
			for _, o := range done.Runs {
				a.printf("%s\n", o)
			}
			a.printf("%s\n", done.Message)
			return nil
		}
		var out run.Outcome
		switch {
		case f.skip:
			out, err = sup.Skip(s.ctx, req)
		case f.rerun:
			out, err = sup.Rerun(s.ctx, req, f.withDownstream)
		case f.task != "":
			out, err = sup.RunTask(s.ctx, req)
		case f.initOnly:
			out, err = sup.InitRun(s.ctx, req)
		case f.finalizeOnly:
			out, err = sup.FinalizeRun(s.ctx, req)
		default:
			out, err = sup.RunPipeline(s.ctx, req)
		}
		if err != nil {
			return err
		}
		a.status = out.Code
		if format.json() {
			return a.printJSON(outcomeDocument(out))
		}
		a.printf("%s\n", out)
		return nil
	}
	return cmd
}

// runOptions are the flags of run besides the pipeline, the run selector
// and the format.
type runOptions struct {
	task, runDate, backfill, reason                                        string
	initOnly, finalizeOnly, force, ignoreDeps, rerun, skip, withDownstream bool
}

// check refuses flags that do not go together (exit 2), before anything is
// recorded.
func (f *runOptions) check(sel inspect.RunSelector) error {
	steps := 0
	for _, on := range []bool{f.task != "", f.initOnly, f.finalizeOnly} {
		if on {
			steps++
		}
	}
	overrides := f.ignoreDeps || f.rerun || f.skip || f.backfill != ""
	switch {
	case steps > 1:
		return usagef("--task_code, --init-only and --finalize-only each select a step: pass only one")
	case f.force && (f.initOnly || f.finalizeOnly):
		return usagef("--force runs tasks; it does not apply to --init-only or --finalize-only")
	case (f.ignoreDeps || f.rerun) && f.task == "":
		return usagef("--ignore-dependencies and --rerun apply to one task: pass --task_code")
	case f.ignoreDeps && f.rerun:
		return usagef("--rerun already runs the task without checking its dependencies: pass one of them")
	case (f.ignoreDeps || f.rerun) && f.force:
		return usagef("--force and --ignore-dependencies or --rerun are different overrides: choose one")
	case f.withDownstream && !f.rerun:
		return usagef("--with-downstream goes with --rerun")
	case f.skip && (steps > 0 || f.force || f.backfill != ""):
		return usagef("--skip records a whole run SKIPPED; it takes only --reason, --run-key and --run-date")
	case f.backfill != "" && (steps > 0 || f.force || !sel.IsZero() || f.runDate != ""):
		return usagef("--backfill runs the whole pipeline once per date; it takes only --reason")
	case f.reason != "" && !overrides:
		return usagef("--reason goes with --ignore-dependencies, --rerun, --skip or --backfill")
	case f.skip && sel.ID > 0:
		return usagef("--skip records a new run: it takes --run-key, not --run-id")
	}
	if f.backfill != "" {
		from, to, ok := strings.Cut(f.backfill, ":")
		if !ok {
			return usagef("--backfill %q is not FROM:TO, such as 2026-09-01:2026-09-07", f.backfill)
		}
		if _, err := run.BackfillDates(from, to); err != nil {
			return err
		}
	}
	if f.runDate != "" {
		if _, err := time.Parse(time.DateOnly, f.runDate); err != nil {
			return usagef("--run-date %q is not a date: write YYYY-MM-DD", f.runDate)
		}
	}
	switch {
	case f.ignoreDeps:
		return run.CheckReason("--ignore-dependencies", f.reason)
	case f.rerun:
		return run.CheckReason("--rerun", f.reason)
	case f.skip:
		return run.CheckReason("--skip", f.reason)
	case f.backfill != "":
		return run.CheckReason("--backfill", f.reason)
	}
	return nil
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
	a.record(s.ctx, s.db, cmd, pipelineCode, taskCode)
	return s, s.p.Supervisor(), func() { s.p.Close() }, nil
}

// outcomeDocument is the JSON form of a run's outcome: etl-craft/run/1, or
// etl-craft/task-run/1 for a single task.
func outcomeDocument(o run.Outcome) map[string]any {
	doc := map[string]any{
		"schema":          "etl-craft/run/1",
		"pipeline_code":   o.PipelineCode,
		"pipeline_run_id": nullable(o.RunID),
		"status":          o.Status,
		"detail":          o.Detail,
		"exit_code":       int(o.Code),
	}
	if o.TaskCode != "" {
		doc["schema"], doc["task_code"] = "etl-craft/task-run/1", o.TaskCode
	}
	return doc
}

// backfillDocument is the JSON form of a backfill: etl-craft/backfill/1,
// with each run's etl-craft/run/1 document, and the one that stopped it.
func backfillDocument(b run.BackfillOutcome) map[string]any {
	runs := make([]map[string]any, len(b.Runs))
	for i, o := range b.Runs {
		runs[i] = outcomeDocument(o)
	}
	var stopped any
	if b.Stopped != nil {
		stopped = outcomeDocument(*b.Stopped)
	}
	return map[string]any{
		"schema":        "etl-craft/backfill/1",
		"pipeline_code": b.PipelineCode,
		"from":          b.From,
		"to":            b.To,
		"status":        b.Status,
		"message":       b.Message,
		"runs":          runs,
		"stopped":       stopped,
		"exit_code":     int(b.Code),
	}
}

// nullable returns nil for a zero id.
func nullable(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}
