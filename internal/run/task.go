package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
)

// RunTask runs one task under the selected run: the run named by id or key,
// or the pipeline's one run that has not ended. It refuses, recording
// nothing, when the task already ended SUCCESS or SKIPPED (exit 0), is
// running (exit 22) or waits for dependencies (exit 23). A task whose
// dependencies can never be met is recorded SKIPPED. Its dependencies on
// other pipelines are judged by its gate in the transaction that admits its
// attempt, waiting (on the supervisor's clock) while an upstream runs.
//
// Force runs it whatever its status and dependencies; forced onto an ended
// run, it reopens the run and ends it again afterwards when every task has
// ended. IgnoreDependencies runs it under the run in progress without
// judging its dependencies, recording the intervention with the reason. In
// remote mode the task runs whenever the orchestrator says (see
// runForOrchestrator).
func (s *Supervisor) RunTask(ctx context.Context, req Request) (Outcome, error) {
	switch {
	case req.IgnoreDependencies && req.Force:
		return Outcome{}, usage("{ignore_dependencies} and {force} are different overrides: choose one")
	case req.IgnoreDependencies:
		if err := s.checkIntervention("{ignore_dependencies}", req.Reason); err != nil {
			return Outcome{}, err
		}
	case req.Force && s.opts.Remote:
		return Outcome{}, exit.Fieldf(exit.RunRefused,
			"{force} is only allowed in local mode: in remote mode run {task} already runs the task whenever the orchestrator says")
	}
	out := Outcome{PipelineCode: req.PipelineCode, TaskCode: req.TaskCode}
	c, paused, err := s.prepareTask(ctx, req, &out)
	if paused || err != nil {
		return out, err
	}
	g, policies, t, r := c.g, c.policies, c.t, c.r
	if s.opts.Remote {
		return s.runForOrchestrator(ctx, g, policies[t.ID], t, r, out)
	}
	rows, err := loadTaskRuns(ctx, s.opts.DB, r.ID)
	if err != nil {
		return out, err
	}
	row, hasRow := rows[t.ID]
	under := fmt.Sprintf("under pipeline_run_id=%d", r.ID)
	again := "use {force} to run it again"
	if req.IgnoreDependencies {
		again = "use {rerun} {reason} to run it again"
	}
	switch {
	case row.attemptStatus == AttemptClaimed || row.attemptStatus == AttemptRunning:
		// A duplicate delivery: the attempt that holds the task finishes it.
		out.Status = TaskInProgress
		out.Detail = fmt.Sprintf("already %s %s (task_run_id=%d, held by %s)", TaskInProgress, under, row.taskRunID, row.owner)
		return out, nil
	case hasRow && !req.Force && (row.up.Status == TaskSuccess || row.up.Status == TaskSkipped):
		out.Status = row.up.Status
		out.Detail = fmt.Sprintf("already %s %s; %s", row.up.Status, under, again)
		return out, nil
	case r.Status == RunQueued:
		return out, exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d is QUEUED and has not been admitted yet", g.Pipeline.Code, r.ID)
	case r.Status == RunCancelled:
		return out, exit.Fieldf(exit.RunState,
			"pipeline %s: pipeline_run_id=%d was CANCELLED and is never reopened; start a new run with etl-craft run {pipeline} %s",
			g.Pipeline.Code, r.ID, g.Pipeline.Code)
	case !hasRow && !req.Force && r.Status == RunSkipped:
		// The run was skipped before the task ran (its pipeline gate, or on
		// purpose), as an orchestrator's later steps find it: so is the task.
		out.Status = TaskSkipped
		out.Detail = fmt.Sprintf("pipeline_run_id=%d ended %s before this task ran, so it runs nothing; use {force} to run it under that run",
			r.ID, RunSkipped)
		return out, nil
	case runEnded(r.Status) && !req.Force:
		return out, exit.Fieldf(exit.RunState,
			"pipeline %s: pipeline_run_id=%d ended %s; use {force}, or {rerun} {reason}, to run %s again under it",
			g.Pipeline.Code, r.ID, r.Status, t.Code)
	}
	q := row.queued
	switch {
	case req.IgnoreDependencies:
		s.log.Warn("running a task without checking its dependencies", "task", t.Code, "pipeline_run_id", r.ID, "reason", req.Reason)
		if q, err = s.queueOverride(ctx, g, r, t, row, hasRow, "IGNORE_DEPENDENCIES", req.Reason); err != nil {
			return out, err
		}
	case !req.Force && row.attemptStatus != AttemptQueued:
		var done bool
		if q, done, err = s.admitSingle(ctx, r, t, rows, &out); done || err != nil {
			return out, err
		}
	}
	reopened := false
	if runEnded(r.Status) {
		if err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
			return reopenRun(ctx, tx, r.ID, t.ID, "", "task "+t.Code+" forced to run again under the ended run")
		}); err != nil {
			return out, err
		}
		reopened, r.Status, r.Owner = true, RunInProgress, ""
	}
	res, err := s.runAttempts(ctx, slot{run: r, g: g, task: t, policy: policies[t.ID], force: req.Force, queued: q})
	if err != nil {
		return out, err
	}
	s.attemptOutcome(&out, res)
	if reopened && out.Code != exit.Incomplete {
		if _, err := s.refinish(ctx, g, r); err != nil {
			return out, err
		}
	}
	return out, nil
}

// taskCommand is what a command about one task of a run works on.
type taskCommand struct {
	g        *pipeline.Graph
	policies map[int64]Policy
	t        *pipeline.Task
	r        runRow
}

// prepareTask loads the pipeline and its task, makes the checks before a
// run (beforeRun: paused is set, and out says so, when the pipeline is
// paused) and selects the run, recording the pipeline and the run in out.
func (s *Supervisor) prepareTask(ctx context.Context, req Request, out *Outcome) (c taskCommand, paused bool, err error) {
	if c.g, c.policies, err = s.load(ctx, req.PipelineCode); err != nil {
		return c, false, err
	}
	if c.t, err = c.g.FindTask(req.TaskCode); err != nil {
		return c, false, err
	}
	out.PipelineCode = c.g.Pipeline.Code
	if paused, err = s.beforeRun(ctx, c.g, []*pipeline.Task{c.t}, out); paused || err != nil {
		return c, paused, err
	}
	if c.r, err = s.selectDated(ctx, c.g, req); err == nil {
		out.RunID = c.r.ID
	}
	return c, false, err
}

// selectDated selects the run of a single-task command (see selectRun); a
// run date asked for must be the run's.
func (s *Supervisor) selectDated(ctx context.Context, g *pipeline.Graph, req Request) (runRow, error) {
	r, err := selectRun(ctx, s.opts.DB, g.Pipeline, req)
	if err == nil && req.RunDate != "" && r.RunDate != req.RunDate {
		err = exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d (key %s) has run_date=%s, not %s; a run's date cannot change",
			g.Pipeline.Code, r.ID, r.Key, r.RunDate, req.RunDate)
	}
	return r, err
}

// attemptOutcome writes how the task's attempts ended into out: its status,
// exit 1 unless it succeeded, exit 22 when interrupted while a retry waited.
func (s *Supervisor) attemptOutcome(out *Outcome, res result) {
	out.Status, out.Detail = res.status, res.message
	switch {
	case res.retry != nil:
		out.Code = exit.Incomplete
		out.Detail = fmt.Sprintf("interrupted while its retry waited; attempt %d is queued for %s", res.retry.Number,
			res.retryDue.UTC().Format(time.RFC3339))
	case res.status != TaskSuccess:
		out.Code = exit.Failure
	}
}

// admitSingle judges a single task's dependencies before it runs. done is
// set, with out filled in, when the task does not run: its dependencies are
// not met yet (exit 23, nothing recorded), can never be met (recorded
// SKIPPED), or the command was interrupted while its gate waited (exit 22).
// Otherwise q is the attempt its gate admitted, or zero when it has no gate
// to pass.
func (s *Supervisor) admitSingle(ctx context.Context, r runRow, t *pipeline.Task, rows map[int64]taskRunRow,
	out *Outcome) (q queued, done bool, err error) {
	row, hasRow := rows[t.ID]
	ready, unmet, waiting, gateNeed := judgeTask(t, rows, r.Backfill)
	never := "not run: its dependencies can never be met: "
	switch {
	case waiting != "":
		out.Status, out.Code, out.Detail = Waiting, exit.Waiting, "its dependencies are not met yet: "+waiting
		return q, true, nil
	case unmet != nil && hasRow:
		out.Status, out.Code = row.up.Status, exit.Failure
		out.Detail = "not run again: its dependencies can never be met: " + strings.Join(unmet, "; ")
		return q, true, nil
	case unmet != nil:
		reason := never + strings.Join(unmet, "; ")
		err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
			_, err := skipTask(ctx, tx, r.ID, t.ID, reason, time.Now())
			return err
		})
		out.Status, out.Detail = TaskSkipped, reason
		return q, true, err
	case ready:
		return q, false, nil
	}
	db := context.WithoutCancel(ctx)
	var a taskAdmission
	var lookErr error
	_, err = gate.Await(ctx, s.clock(), func(_ context.Context, now time.Time) (gate.Outcome, error) {
		a, lookErr = s.admitTask(db, r, t, gateNeed, hasRow, true, now)
		return gate.Outcome{NextCheckAt: a.nextCheck}, lookErr
	})
	switch {
	case err != nil && lookErr == nil:
		// The sleep between two looks was interrupted.
		out.Status, out.Code = Waiting, exit.Incomplete
		out.Detail = fmt.Sprintf("interrupted while its gate waited (next look at %s); nothing was recorded but the wait",
			a.nextCheck.UTC().Format(time.RFC3339))
		return q, true, nil
	case err != nil:
		return q, true, err
	case a.queued.AttemptID != 0:
		return a.queued, false, nil
	case a.notYet:
		out.Status, out.Code, out.Detail = Waiting, exit.Waiting, "its dependencies are not met yet: "+a.unmet
	case a.skipped:
		out.Status, out.Detail = TaskSkipped, never+a.unmet
	default:
		out.Status, out.Code = row.up.Status, exit.Failure
		out.Detail = "not run again: its dependencies can never be met: " + a.unmet
	}
	return q, true, nil
}

// queueOverride queues an attempt of a task an operator runs past its
// checks (action IGNORE_DEPENDENCIES or RERUN), recording the intervention
// with the reason in the same transaction. A task that has a QUEUED attempt
// already keeps it.
func (s *Supervisor) queueOverride(ctx context.Context, g *pipeline.Graph, r runRow, t *pipeline.Task, row taskRunRow, hasRow bool,
	action, reason string) (queued, error) {
	var q queued
	err := inTx(ctx, s.opts.DB, func(tx *wtx) (err error) {
		q, err = queueOverrideIn(ctx, tx, g, r, t, row, hasRow, action, reason)
		return err
	})
	return q, err
}

// queueOverrideIn is queueOverride in the caller's transaction.
func queueOverrideIn(ctx context.Context, tx *wtx, g *pipeline.Graph, r runRow, t *pipeline.Task, row taskRunRow, hasRow bool,
	action, reason string) (queued, error) {
	q := row.queued
	from := ""
	if hasRow {
		from = row.up.Status
	}
	if q.AttemptID == 0 {
		var err error
		if q, err = queueAttempt(ctx, tx, r.ID, t.ID, queueing{}, time.Now()); err != nil {
			return q, err
		}
	}
	return q, recordIntervention(ctx, tx, intervention{PipelineID: g.Pipeline.ID, RunID: r.ID, TaskID: t.ID, Action: action,
		From: from, To: TaskInProgress, Reason: reason})
}

// runForOrchestrator runs a task as a remote orchestrator says: without
// judging its dependencies or its status (a settled task runs again, as a
// new attempt on the same task run), without retries, reopening the run
// when it had ended. A second delivery while the task runs is refused by
// the database's one active attempt per task run (exit 20).
func (s *Supervisor) runForOrchestrator(ctx context.Context, g *pipeline.Graph, p Policy, t *pipeline.Task, r runRow,
	out Outcome) (Outcome, error) {
	rows, err := loadTaskRuns(ctx, s.opts.DB, r.ID)
	if err != nil {
		return out, err
	}
	row := rows[t.ID]
	switch {
	case row.attemptStatus == AttemptClaimed || row.attemptStatus == AttemptRunning:
		return out, exit.Errorf(exit.StaleTransition,
			"%s: already %s under pipeline_run_id=%d (task_run_id=%d, held by %s); one attempt runs at a time, so this delivery runs nothing",
			t.Code, TaskInProgress, r.ID, row.taskRunID, row.owner)
	case r.Status == RunQueued:
		return out, exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d is QUEUED and has not been admitted yet", g.Pipeline.Code, r.ID)
	case r.Status == RunCancelled:
		return out, exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d was CANCELLED and is never reopened", g.Pipeline.Code, r.ID)
	case runEnded(r.Status):
		s.log.Warn("the orchestrator ran a task of an ended run: the run is "+RunInProgress+" again until {finalize_only} ends it",
			"pipeline_run_id", r.ID, "task", t.Code, "was", r.Status)
		if err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
			return reopenRun(ctx, tx, r.ID, t.ID, "", "the orchestrator ran "+t.Code+" again after the run ended "+r.Status)
		}); err != nil {
			return out, err
		}
		r.Status, r.Owner = RunInProgress, ""
	}
	res, err := s.runAttempts(ctx, slot{run: r, g: g, task: t, policy: p, again: true, queued: row.queued})
	if err != nil {
		return out, err
	}
	s.attemptOutcome(&out, res)
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

// refinish ends a reopened run again once every task has ended, and reports
// how it ended; ok is false when a task has not ended and the run stays
// IN-PROGRESS, naming in out.Detail the tasks still to run.
func (s *Supervisor) refinish(ctx context.Context, g *pipeline.Graph, r runRow) (out Outcome, err error) {
	out = Outcome{PipelineCode: g.Pipeline.Code, RunID: r.ID, Status: RunInProgress}
	rows, err := loadTaskRuns(ctx, s.opts.DB, r.ID)
	if err != nil {
		return out, err
	}
	var open []string
	for _, t := range g.Tasks {
		if row, ok := rows[t.ID]; !ok || row.up.Status == TaskInProgress {
			open = append(open, t.Code)
		}
	}
	if len(open) > 0 {
		s.log.Info("the reopened run stays "+RunInProgress+": tasks have not ended", "pipeline_run_id", r.ID, "tasks", open)
		out.Detail = fmt.Sprintf("%d task(s) still need to run: %s; etl-craft run {pipeline} %s runs them",
			len(open), strings.Join(open, ", "), g.Pipeline.Code)
		return out, nil
	}
	return s.finish(context.WithoutCancel(ctx), g, r, r.Owner, "")
}

// judgeTask judges a single task's dependencies on its own pipeline's tasks
// against the run's task runs, by the readiness rule with failures as they
// stand: a FAILED upstream counts where it satisfies its edge and is waited
// for where it does not. waiting names what is not met yet when the task
// must wait. When its own pipeline's upstreams have all ended and its
// dependencies on other pipelines decide, gateNeed is how many of those its
// gate must find satisfied; under a backfill's run they are judged by the
// rule itself.
func judgeTask(t *pipeline.Task, rows map[int64]taskRunRow, backfill bool) (ready bool, unmet []string, waiting string, gateNeed int) {
	v := readiness.Decide(readiness.Question{Task: t, Upstream: rowsUpstream(rows), Failures: readiness.FailuresAsTheyStand,
		Backfill: backfill})
	if v.Decision == readiness.Wait {
		waiting = v.Reason()
	}
	return v.Decision == readiness.Start, v.Unmet, waiting, v.GateNeed
}
