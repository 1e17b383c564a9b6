package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// RunTask runs one task under the selected run: the run named by id or key,
// or the pipeline's one run that has not ended. It refuses, recording
// nothing, when the task already ended SUCCESS or SKIPPED (exit 0), is
// running (exit 22) or waits for dependencies (exit 23). A task whose
// dependencies can never be met is recorded SKIPPED. Force runs it whatever
// its status and dependencies; forced onto an ended run, it reopens the run
// and ends it again afterwards when every task has ended.
func (s *Supervisor) RunTask(ctx context.Context, req Request) (Outcome, error) {
	g, policies, err := s.load(ctx, req.PipelineCode)
	if err != nil {
		return Outcome{}, err
	}
	t, err := g.FindTask(req.TaskCode)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{PipelineCode: g.Pipeline.Code, TaskCode: t.Code}
	if paused, err := s.beforeRun(ctx, g, []*pipeline.Task{t}, &out); paused || err != nil {
		return out, err
	}
	r, err := selectRun(ctx, s.opts.DB, g.Pipeline, req)
	if err != nil {
		return out, err
	}
	out.RunID = r.ID
	rows, err := loadTaskRuns(ctx, s.opts.DB, r.ID)
	if err != nil {
		return out, err
	}
	row, hasRow := rows[t.ID]
	under := fmt.Sprintf("under pipeline_run_id=%d", r.ID)
	switch {
	case row.attemptStatus == AttemptClaimed || row.attemptStatus == AttemptRunning:
		out.Status, out.Code = TaskInProgress, exit.Incomplete
		out.Detail = fmt.Sprintf("already IN-PROGRESS %s (task_run_id=%d, held by %s)", under, row.taskRunID, row.owner)
		return out, nil
	case hasRow && !req.Force && (row.up.Status == TaskSuccess || row.up.Status == TaskSkipped):
		out.Status = row.up.Status
		out.Detail = fmt.Sprintf("already %s %s; use --force to run it again", row.up.Status, under)
		return out, nil
	case r.Status == RunQueued:
		return out, exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d is QUEUED and has not been admitted yet", g.Pipeline.Code, r.ID)
	case r.Status == RunCancelled:
		return out, exit.Errorf(exit.RunState,
			"pipeline %s: pipeline_run_id=%d was CANCELLED and is never reopened; start a new run with etl-craft run --pipeline_code %s",
			g.Pipeline.Code, r.ID, g.Pipeline.Code)
	case runEnded(r.Status) && !req.Force:
		return out, exit.Errorf(exit.RunState,
			"pipeline %s: pipeline_run_id=%d ended %s; use --force to run %s again under it",
			g.Pipeline.Code, r.ID, r.Status, t.Code)
	}
	if !req.Force && row.attemptStatus != AttemptQueued {
		ready, unmet, waiting, err := s.judgeTask(ctx, g, t, r.ID, rows)
		if err != nil {
			return out, err
		}
		switch {
		case waiting != "":
			out.Status, out.Code, out.Detail = "WAITING", exit.Waiting, "its dependencies are not met yet: "+waiting
			return out, nil
		case !ready && hasRow:
			out.Status, out.Code = row.up.Status, exit.Failure
			out.Detail = "not run again: its dependencies can never be met: " + strings.Join(unmet, "; ")
			return out, nil
		case !ready:
			reason := "not run: its dependencies can never be met: " + strings.Join(unmet, "; ")
			if err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
				_, err := skipTask(ctx, tx, r.ID, t.ID, reason, time.Now())
				return err
			}); err != nil {
				return out, err
			}
			out.Status, out.Detail = TaskSkipped, reason
			return out, nil
		}
	}
	reopened := false
	if runEnded(r.Status) {
		if err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
			return reopenRun(ctx, tx, r.ID, t.ID, "run --force --task_code "+t.Code+": the task runs again under the ended run")
		}); err != nil {
			return out, err
		}
		reopened, r.Status, r.Owner = true, RunInProgress, ""
	}
	res, err := s.runAttempts(ctx, slot{run: r, g: g, task: t, policy: policies[t.ID], force: req.Force, queued: row.queued})
	if err != nil {
		return out, err
	}
	out.Status, out.Detail = res.status, res.message
	switch {
	case res.retry != nil:
		out.Code = exit.Incomplete
		out.Detail = fmt.Sprintf("interrupted while its retry waited; attempt %d is queued for %s", res.retry.Number,
			res.retryDue.UTC().Format(time.RFC3339))
		return out, nil
	case res.status != TaskSuccess:
		out.Code = exit.Failure
	}
	if reopened {
		if err := s.refinish(ctx, g, r); err != nil {
			return out, err
		}
	}
	return out, nil
}

// runAttempts runs attempts of the slot's task until one ends without a
// retry, waiting for each retry to be due. An interruption stops the
// running attempt, which is recorded FAILED, or the wait for a retry.
func (s *Supervisor) runAttempts(ctx context.Context, sl slot) (result, error) {
	actx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	go func() {
		select {
		case <-ctx.Done():
			stop(errInterrupted)
		case <-actx.Done():
		}
	}()
	for {
		if sl.queued.AttemptID != 0 {
			var due engine.Time
			if err := s.opts.DB.QueryRowContext(context.WithoutCancel(ctx), "SELECT NOT_BEFORE FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = $1",
				sl.queued.AttemptID).Scan(&due); err != nil {
				return result{}, exit.Wrap(exit.EngineDB, err, "could not read attempt_id=%d", sl.queued.AttemptID)
			}
			if waitUntil(actx, due.Time) != nil {
				return result{status: TaskInProgress, retry: &sl.queued, retryDue: due.Time}, nil
			}
		}
		res := s.execute(actx, sl)
		if res.err != nil || res.retry == nil {
			return res, res.err
		}
		sl.queued = *res.retry
	}
}

// refinish ends a reopened run again once every task has ended.
func (s *Supervisor) refinish(ctx context.Context, g *pipeline.Graph, r runRow) error {
	rows, err := loadTaskRuns(ctx, s.opts.DB, r.ID)
	if err != nil {
		return err
	}
	for _, t := range g.Tasks {
		if row, ok := rows[t.ID]; !ok || row.up.Status == TaskInProgress {
			s.log.Info("the reopened run stays IN-PROGRESS: a task has not ended", "pipeline_run_id", r.ID, "task", t.Code)
			return nil
		}
	}
	_, err = s.finish(context.WithoutCancel(ctx), g, r, "")
	return err
}

// judgeTask judges a single task's dependencies against the run's task
// runs. An upstream that ended satisfies its edge as §2.6 says; one that
// ended SUCCESS or SKIPPED without satisfying it makes the edge unmet for
// good. waiting names what is not met yet when the task must wait.
func (s *Supervisor) judgeTask(ctx context.Context, g *pipeline.Graph, t *pipeline.Task, runID int64,
	rows map[int64]taskRunRow) (ready bool, unmet []string, waiting string, err error) {
	need := t.Required()
	sat := 0
	var open []string
	var cross []*pipeline.Dependency
	for _, d := range t.Deps {
		if d.CrossPipeline {
			cross = append(cross, d)
			continue
		}
		row, ok := rows[d.UpstreamTaskID]
		switch {
		case !ok || row.up.Status == TaskInProgress:
			open = append(open, fmt.Sprintf("%s (%s) has not ended", d.Label(), d.Type))
		case satisfies(d.Type, row.up):
			sat++
		case row.up.Status == TaskSuccess || row.up.Status == TaskSkipped:
			unmet = append(unmet, "upstream "+unmetText(d, row.up))
		default:
			open = append(open, fmt.Sprintf("%s (%s) ended %s and may run again", d.Label(), d.Type, row.up.Status))
		}
	}
	switch {
	case sat >= need:
		return true, nil, "", nil
	case sat+len(open)+len(cross) < need:
		return false, unmet, "", nil
	case len(open) > 0:
		return false, nil, strings.Join(open, "; "), nil
	}
	n, reasons, err := s.gates.TaskDeps(ctx, runID, t, cross)
	if err != nil || sat+n >= need {
		return err == nil, nil, "", err
	}
	return false, append(unmet, reasons...), "", nil
}
