package run

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/span"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Why an attempt's context ended.
var (
	// errInterrupted: the command was interrupted (SIGINT, SIGTERM, SIGHUP).
	errInterrupted = errors.New("the run was interrupted")
	// errLeaseLost: the attempt's lease was fenced by a reconciler.
	errLeaseLost = errors.New("the attempt lost its heartbeat: its lease was fenced")
	// errRunEnded: the run was ended or taken by someone else meanwhile.
	errRunEnded = errors.New("the run was ended or taken over by another process")
	// errCancelled: an operator cancelled the attempt (etl-craft cancel).
	errCancelled = errors.New("the attempt was cancelled by an operator")
)

// CancelPoll is how often a running attempt looks whether an operator
// cancelled it.
const CancelPoll = 2 * time.Second

// timedOut is the cause of an attempt that passed its time limit.
type timedOut struct{ limit time.Duration }

func (t timedOut) Error() string { return fmt.Sprintf("timed out after %s and was stopped", t.limit) }

// slot is one attempt to execute: a task of a run, and the QUEUED attempt to
// claim, when one is waiting (a retry).
type slot struct {
	run    runRow
	g      *pipeline.Graph
	task   *pipeline.Task
	policy Policy
	force  bool
	// rerun is an operator's rerun of the task under its run.
	rerun bool
	// again lets a new attempt run a task whose summary ended SUCCESS or
	// SKIPPED (force, or an orchestrator running it again).
	again bool
	// queued is the waiting attempt to claim; zero queues a new one.
	queued queued
	// ready is when the dispatcher found the task ready with a free slot
	// of its run; zero outside a run's dispatch.
	ready time.Time
	// take, when set, is the owner that takes the run, IN-PROGRESS with no
	// owner, in the transaction that starts the attempt; took is called
	// once that transaction committed (see dispatcher.untaken).
	take string
	took func()
}

// result is what became of an attempt.
type result struct {
	task *pipeline.Task
	// status is the task's summary status afterwards: SUCCESS, FAILED, or
	// IN-PROGRESS when a retry is queued.
	status string
	up     upstream
	// retry is the queued next attempt and when it is due.
	retry     *queued
	retryDue  time.Time
	taskRunID int64
	message   string
	// err is a failure to bind or record the attempt (a stale transition,
	// an injected fault before binding, an Engine DB error); the attempt's
	// own failure is not an error.
	err error
	// notStarted says the attempt never started: the run wound down while
	// it waited for a worker of the shared Pool.
	notStarted bool
	// unbound says err came from binding the attempt, which did not
	// happen: queued is the QUEUED attempt it was to claim, zero for a new
	// one.
	unbound bool
	queued  queued
	// notTaken says err came from taking the run (slot.take): another
	// process took or ended it.
	notTaken bool
}

// execute binds, runs and records one attempt in this goroutine. ctx ends
// when the run is interrupted; its cause says why.
func (s *Supervisor) execute(ctx context.Context, sl slot) result {
	res := result{task: sl.task}
	if err := fault.Point("runner.after_timeout"); err != nil {
		res.err = err
		return res
	}
	rctx := context.WithoutCancel(ctx) // records are written even after an interruption
	owner := NewOwner()
	q := sl.queued
	var path string
	notTaken := false
	// The work starts in this goroutine as soon as the attempt is bound:
	// claiming and starting it commit together, with the take of the run
	// when the slot takes it.
	err := inTx(rctx, s.opts.DB, func(tx *wtx) error {
		now := time.Now()
		if sl.take != "" {
			if err := takeRun(rctx, tx, sl.run.ID, sl.take, now); err != nil {
				notTaken = true
				return err
			}
			// The run is taken, its attempt not queued yet.
			if err := fault.Point("runner.after_take"); err != nil {
				return err
			}
		}
		pathOf := func(number int) string {
			path = logPath(s.opts.LogDir, sl.g.Pipeline.Code, sl.run.ID, sl.task.Code, number)
			return path
		}
		if q.AttemptID == 0 {
			// A new attempt is inserted RUNNING; an operator may have
			// marked the task meanwhile.
			how := queueing{unsettled: !sl.force && !sl.again, locked: sl.take != "", start: &starting{owner: owner, logPath: pathOf}}
			var err error
			q, err = queueAttempt(rctx, tx, sl.run.ID, sl.task.ID, how, now)
			return err
		}
		if err := claimAttempt(rctx, tx, q.AttemptID, owner, now); err != nil {
			return err
		}
		return startAttempt(rctx, tx, q.AttemptID, owner, pathOf(q.Number), now)
	})
	if err != nil {
		res.err, res.unbound, res.queued, res.notTaken = err, true, sl.queued, notTaken
		return res
	}
	if sl.took != nil {
		sl.took()
	}
	if o := s.opts.Observer; o != nil && !sl.ready.IsZero() {
		o.Dispatched(sl.task.Handler, time.Since(sl.ready))
	}
	ctx, sp := span.Start(ctx, "attempt "+sl.task.Code, span.String("etl_craft.pipeline", sl.g.Pipeline.Code),
		span.Int("etl_craft.pipeline_run_id", sl.run.ID), span.String("etl_craft.task", sl.task.Code),
		span.String("etl_craft.handler", sl.task.Handler), span.Int("etl_craft.task_run_id", q.TaskRunID),
		span.Int("etl_craft.attempt_id", q.AttemptID), span.Int("etl_craft.attempt", int64(q.Number)))
	defer sp.End()
	res.taskRunID = q.TaskRunID
	t := &handler.Task{
		PipelineID: sl.g.Pipeline.ID, PipelineRunID: sl.run.ID, TaskRunID: q.TaskRunID, AttemptID: q.AttemptID,
		AttemptNumber: q.Number, PipelineCode: sl.g.Pipeline.Code, TaskCode: sl.task.Code,
		RefreshType: sl.g.Pipeline.RefreshType, Backfill: sl.run.Backfill, Force: sl.force, Rerun: sl.rerun,
		Params: sl.task.Params, ProjectDir: s.opts.ProjectDir,
	}
	if d, err := time.Parse(time.DateOnly, sl.run.RunDate); err == nil {
		t.RunDate = d
	}
	a := &attempt{s: s, slot: sl, task: t, owner: owner, q: q, path: path}
	if s.opts.Warehouse != nil {
		t.Warehouse = a.acquire
	}
	t.Spawned = func(pid int) error {
		return inTx(rctx, s.opts.DB, func(tx *wtx) error { return spawnedAttempt(rctx, tx, q.AttemptID, owner, pid) })
	}
	res = a.run(ctx, rctx)
	sp.Set(span.String("etl_craft.task_status", res.status))
	switch {
	case res.retry != nil:
		sp.Fail("the attempt failed; a retry is queued")
	case res.err != nil || res.status != TaskSuccess:
		sp.Fail("the attempt did not succeed: its task is " + res.status)
	}
	return res
}

// acquire gives the handler the warehouse, and notes it for verify.
func (a *attempt) acquire(ctx context.Context) (warehouse.Warehouse, func(), error) {
	w, release, err := a.s.opts.Warehouse.Acquire(ctx)
	if err == nil {
		a.mu.Lock()
		if !slices.Contains(a.used, w) {
			a.used = append(a.used, w)
		}
		a.mu.Unlock()
	}
	return w, release, err
}

// verify checks, before a success is recorded, that every warehouse the
// handler wrote to is still the one it opened (Warehouse.Verify): a file
// removed or replaced meanwhile lost the attempt's writes.
func (a *attempt) verify() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.used {
		if err := w.Verify(); err != nil {
			return err
		}
	}
	return nil
}

// attempt is one bound attempt.
type attempt struct {
	s     *Supervisor
	slot  slot
	task  *handler.Task
	owner string
	q     queued
	path  string
	log   *attemptLog
	// used are the warehouses the handler acquired.
	mu   sync.Mutex
	used []warehouse.Warehouse
}

// run does the bound attempt's work and records its outcome.
func (a *attempt) run(ctx, rctx context.Context) result {
	o := a.work(ctx, rctx)
	if a.log != nil {
		a.log.log.Info("attempt ended", "status", o.Status, "error", o.Error)
		o.Log = taskLog(o.Result, a.log.tail())
		a.log.close()
	}
	if o.Cancelled {
		a.s.log.Warn("task cancelled by an operator", "task", a.slot.task.Code, "attempt", a.q.Number)
		return result{task: a.slot.task, status: TaskCancelled, up: upstream{Status: TaskCancelled}, taskRunID: a.q.TaskRunID,
			message: o.Error}
	}
	return a.record(rctx, o)
}

// work runs the handler and returns the outcome to record.
func (a *attempt) work(ctx, rctx context.Context) outcome {
	s, t := a.s, a.task
	if err := fault.Point("runner.after_bind"); err != nil {
		return failure(err)
	}
	l, err := openAttemptLog(a.path, t, s.opts.AttemptLogLevel)
	if err != nil {
		return failure(err)
	}
	a.log, t.Log = l, l.log
	h, err := s.opts.Handlers.For(a.slot.task.Handler)
	if err != nil {
		return failure(err)
	}
	s.log.Info("task started", "pipeline", t.PipelineCode, "task", t.TaskCode, "pipeline_run_id", t.PipelineRunID,
		"attempt", t.AttemptNumber)
	l.log.Info("attempt started", "handler", a.slot.task.Handler, "timeout", a.slot.policy.Timeout.String())

	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if lim := a.slot.policy.Timeout; lim > 0 {
		timer := time.AfterFunc(lim, func() { cancel(timedOut{lim}) })
		defer timer.Stop()
	}
	stopBeat := a.heartbeat(rctx, cancel)
	defer stopBeat()

	type returned struct {
		r   handler.Result
		err error
	}
	done := make(chan returned, 1)
	go func() {
		var ret returned
		defer func() {
			if p := recover(); p != nil {
				l.log.Error("the handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				ret.err = exit.Errorf(exit.Handler, "the %s handler failed unexpectedly: %v", a.slot.task.Handler, p)
			}
			done <- ret
		}()
		ret.r, ret.err = h.Run(hctx, t)
	}()
	var ret returned
	select {
	case ret = <-done:
	case <-hctx.Done():
		select {
		case ret = <-done:
		case <-time.After(StopGrace):
			l.log.Error("the handler did not stop within the grace period; its work is abandoned", "grace", StopGrace.String())
			ret.err = context.Cause(hctx)
		}
	}
	r, herr := ret.r, ret.err
	if herr == nil {
		herr = a.verify()
	}
	if herr == nil {
		return outcome{Status: AttemptSuccess, Result: r}
	}
	o := failure(herr)
	o.Result = r
	switch cause := context.Cause(hctx); {
	case errors.As(cause, new(timedOut)):
		o.Status, o.Error, o.Retryable = AttemptTimedOut, cause.Error(), true
	case errors.Is(cause, errInterrupted):
		o.Error, o.Retryable = "was stopped because the run was interrupted", false
	case errors.Is(cause, errCancelled):
		o.Error, o.Cancelled = "was stopped because an operator cancelled it", true
	case cause != nil:
		o.Error, o.Retryable = cause.Error(), false
	}
	l.log.Error("attempt failed", "error", herr.Error())
	return o
}

// failure is the outcome of an attempt that failed with err.
func failure(err error) outcome {
	return outcome{Status: AttemptFailed, Error: oneLine(err.Error()), ExitCode: exit.CodeOf(err), Retryable: handler.Retryable(err)}
}

// oneLine returns the first line of a message.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	return s
}

// heartbeat renews the attempt's lease every RenewEvery until stopped, and
// looks every CancelPoll whether an operator cancelled it. A fenced lease or
// a cancel stops the attempt's work.
func (a *attempt) heartbeat(ctx context.Context, cancel context.CancelCauseFunc) (stop func()) {
	quit := make(chan struct{})
	go func() {
		tick := time.NewTicker(a.s.renewEvery)
		defer tick.Stop()
		poll := time.NewTicker(a.s.cancelPoll)
		defer poll.Stop()
		for {
			select {
			case <-quit:
				return
			case <-poll.C:
				var status string
				err := a.s.opts.DB.QueryRowContext(ctx, "SELECT STATUS FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = $1",
					a.q.AttemptID).Scan(&status)
				if err == nil && status == AttemptCancelled {
					cancel(errCancelled)
					return
				}
				continue
			case <-tick.C:
			}
			err := inTx(ctx, a.s.opts.DB, func(tx *wtx) error {
				return renewAttempt(ctx, tx, a.q.AttemptID, a.owner, time.Now())
			})
			if exit.Is(err, exit.StaleTransition) {
				a.s.log.Error("an attempt lost its lease and is being stopped", "task", a.task.TaskCode,
					"attempt_id", a.q.AttemptID, "error", err)
				cancel(errLeaseLost)
				return
			}
			if err != nil {
				a.s.log.Warn("could not renew an attempt's lease; trying again", "attempt_id", a.q.AttemptID, "error", err)
			}
		}
	}()
	return func() { close(quit) }
}

// record writes the outcome and its summary in one transaction, with the
// next attempt when the failure is retried, and returns the result. When
// the outcome cannot be written for another reason than a stale transition,
// the attempt is recorded FAILED with that reason instead.
func (a *attempt) record(ctx context.Context, o outcome) result {
	res := a.write(ctx, o)
	if res.err == nil || exit.Is(res.err, exit.StaleTransition) || o.OnBehalf {
		return res
	}
	a.s.log.Error("could not record the attempt's outcome; recording it FAILED", "task", a.slot.task.Code,
		"attempt_id", a.q.AttemptID, "outcome", o.Status, "error", res.err)
	f := failure(res.err)
	f.Log, f.OnBehalf = o.Log, true
	return a.write(ctx, f)
}

// write records one outcome.
func (a *attempt) write(ctx context.Context, o outcome) result {
	sl := a.slot
	res := result{task: sl.task, taskRunID: a.q.TaskRunID, message: o.Error}
	if o.Status == AttemptSuccess {
		o.ExitCode = exit.Success
	}
	err := inTxRetrying(ctx, a.s.opts.DB, func(tx *wtx) error {
		now := time.Now()
		res.retry = nil
		if err := finishAttempt(ctx, tx, a.q.AttemptID, a.owner, o, now); err != nil {
			return err
		}
		if o.Status == AttemptSuccess {
			// What the task consumed from other pipelines commits with its
			// success: the SATISFIED decisions its attempt was admitted with.
			if err := fault.Point("runner.before_consumption"); err != nil {
				return err
			}
			if _, err := gate.ConsumeAttempt(ctx, tx.Tx, a.q.AttemptID); err != nil {
				return err
			}
			if err := fault.Point("attempt.after_consumption"); err != nil {
				return err
			}
			if o.Result.OnSuccess != nil {
				return o.Result.OnSuccess(ctx, tx.Tx)
			}
			return nil
		}
		if !o.Retryable {
			return nil
		}
		next, due, err := queueRetry(ctx, tx, sl.run.ID, sl.task.ID, a.q, sl.policy, now)
		res.retry, res.retryDue = next, due
		return err
	})
	if err != nil {
		res.err = err
		return res
	}
	if err := fault.Point("child.after_outcome"); err != nil {
		a.s.log.Error("a fault after the outcome was recorded; the outcome stands", "task", sl.task.Code, "error", err)
	}
	res.status = summaryOf(o.Status)
	res.up = upstream{Status: res.status, HasData: records.HasData(nullInt(o.Result.RowsWritten), nullInt(o.Result.TargetCount))}
	if res.retry != nil {
		res.status = TaskInProgress
		a.s.log.Info("task failed; retry queued", "task", sl.task.Code, "attempt", a.q.Number, "status", o.Status,
			"error", o.Error, "retry_at", res.retryDue.UTC().Format(time.RFC3339))
	} else if o.Status != AttemptSuccess {
		a.s.log.Warn("task failed", "task", sl.task.Code, "attempt", a.q.Number, "status", o.Status, "error", o.Error)
	} else {
		a.s.log.Info("task succeeded", "task", sl.task.Code, "attempt", a.q.Number)
	}
	return res
}

// queueRetry queues the next attempt of a failed one when its policy has
// retries left and the run is still IN-PROGRESS, carrying over the gate
// decisions the failed attempt was admitted with. The budget counts the
// persisted retries since the task's last first execution (an attempt queued
// without NOT_BEFORE), so a restart grants nothing.
func queueRetry(ctx context.Context, tx *wtx, runID, taskID int64, failed queued, p Policy, now time.Time) (*queued, time.Time, error) {
	var fresh int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(ATTEMPT_NUMBER), 0) FROM AUD_TASK_ATTEMPTS
		WHERE TASK_RUN_ID = $1 AND NOT_BEFORE IS NULL AND ATTEMPT_NUMBER <= $2`, failed.TaskRunID, failed.Number).Scan(&fresh); err != nil {
		return nil, time.Time{}, exit.Wrap(exit.EngineDB, err, "could not count the retries of task_run_id=%d", failed.TaskRunID)
	}
	used := failed.Number - fresh
	if used >= p.Retries {
		return nil, time.Time{}, nil
	}
	var status string
	if err := tx.QueryRowContext(ctx, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", runID).
		Scan(&status); err != nil || status != RunInProgress {
		return nil, time.Time{}, exit.Wrap(exit.EngineDB, err, "could not read pipeline_run_id=%d", runID)
	}
	due := now.Add(p.RetryDelay(used + 1))
	next, err := queueAttempt(ctx, tx, runID, taskID, queueing{notBefore: &due}, now)
	if err != nil {
		return nil, time.Time{}, err
	}
	if _, err := gate.CarryOver(ctx, tx.Tx, failed.AttemptID, next.AttemptID, now); err != nil {
		return nil, time.Time{}, err
	}
	return &next, due, nil
}

func nullInt(c handler.Count) (n sql.NullInt64) {
	if c != nil {
		n.Int64, n.Valid = *c, true
	}
	return n
}

// waitUntil sleeps until t or until ctx ends.
func waitUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timer.C:
		return nil
	}
}
