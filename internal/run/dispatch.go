package run

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/span"
)

// state is where a task stands in a supervisor's session.
type state int

const (
	// pending: may start once its dependencies allow.
	pending state = iota
	// running: an attempt of this supervisor runs.
	running
	// retrying: a retry is queued and starts when due; it holds no slot.
	retrying
	// gated: its gate of dependencies on other pipelines waits for a
	// running upstream and looks again when due; it holds no slot.
	gated
	// foreign: another process runs an attempt of it.
	foreign
	// Settled: succeeded, skipped, or failed and not started again in
	// this session.
	succeeded
	skipped
	failed
)

// task is one task of the run in the dispatcher.
type task struct {
	t      *pipeline.Task
	policy Policy
	st     state
	// up is how the task ended, for its dependents.
	up upstream
	// queued is the waiting attempt of a retrying task, due at due.
	queued queued
	due    time.Time
	// gateAt is when a gated task's gate looks again (on the gate clock).
	gateAt time.Time
	// hasRow is set once the task has a summary row under the run.
	hasRow bool
	// done is set when the task settled in this session (force runs wait
	// for it).
	done bool
}

// dispatcher runs the ready tasks of one run, at most MaxParallel at once,
// until nothing more can start.
type dispatcher struct {
	s     *Supervisor
	g     *pipeline.Graph
	run   runRow
	owner string
	force bool
	// startNothing settles the run without starting any task: a
	// --finalize-only step.
	startNothing bool
	// wind, closed, winds the run down: nothing more starts and the running
	// attempts are waited for until the context ends (see Execute); nil for
	// a foreground run.
	wind <-chan struct{}
	// bypassed are the GATE_BYPASS reasons of the run and its tasks, for
	// the run's summary.
	bypassed []string
	tasks    []*task // in wave order
	byID     map[int64]*task
	running  int
	results  chan result
	// attempts is the context of the running attempts; stop ends it.
	attempts context.Context
	stop     context.CancelCauseFunc
	// records is the context of writes that must happen even after the
	// command was interrupted.
	records context.Context
	// failuresFinal is set once nothing else can start: failed tasks are
	// then final, so FAILURE and ALWAYS edges on them are satisfied and
	// SUCCESS edges never will be.
	failuresFinal bool
	// sla records the breach of a live run (sla.go).
	sla slaWatch
	// settled is the request's Settled, called once; nil for none.
	settled func()
	// unavailable is set when a step found the Engine DB unavailable: the
	// loop waits outageRetry before it tries again (see outage).
	unavailable bool
	// untaken is set while the run, IN-PROGRESS with no owner, is not yet
	// this supervisor's: a server binds its run without a write, and the
	// run's first attempt takes it in the transaction that starts it (one
	// write transaction fewer a run). Meanwhile nothing else starts
	// (taking is that attempt's task), a step that writes anything else
	// first takes the run on its own (hold), and there is no lease to
	// renew or release. The attempt's goroutine clears it and wakes the
	// loop (took).
	untaken atomic.Bool
	taking  *task
	took    chan struct{}
}

// checkEvery is how often a running supervisor checks that its run is
// still its own and its pipeline not paused.
const checkEvery = time.Second

// outageRetry is how long a supervisor that found the Engine DB
// unavailable waits before it tries again.
const outageRetry = time.Second

// RunPipeline runs the pipeline's tasks under a new or resumed run and ends
// the run when nothing more can start. A new run is admitted through its
// pipeline gate (not with Force); when the gate does not pass the run ends
// SKIPPED. It returns the outcome, or an error when nothing could be
// recorded or the run could not go on. Remote mode refuses it.
func (s *Supervisor) RunPipeline(ctx context.Context, req Request) (Outcome, error) {
	return s.runPipeline(ctx, req, nil)
}

// runPipeline is RunPipeline, wound down when wind is closed (see Execute).
func (s *Supervisor) runPipeline(ctx context.Context, req Request, wind <-chan struct{}) (Outcome, error) {
	if s.opts.Remote {
		return Outcome{}, exit.Fieldf(exit.RunRefused,
			"Orchestration.Mode is remote: the orchestrator runs one task at a time with {task}, between {init_only} and {finalize_only}; only local mode runs a whole pipeline")
	}
	g, policies, err := s.load(ctx, req.PipelineCode)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{PipelineCode: g.Pipeline.Code}
	if paused, err := s.beforeRun(ctx, g, g.Tasks, &out); paused || err != nil {
		return out, err
	}
	if req.Settled != nil {
		req.Settled = sync.OnceFunc(req.Settled)
	}
	owner := NewOwner()
	bctx, stopWait := windContext(ctx, wind)
	b, err := s.bindRun(bctx, g, start{req: req, owner: owner, gated: !req.Force, kind: TriggerManual, key: req.RunKey, date: req.RunDate,
		takeLater: wind != nil})
	stopWait()
	if err != nil {
		return out, err
	}
	if out, done := s.gateOutcome(ctx, g, b); done {
		return out, nil
	}
	d := s.dispatcher(g, policies, b.run, owner)
	d.force, d.wind = req.Force, wind
	d.settled = req.Settled
	d.untaken.Store(b.untaken)
	if b.bypass != "" {
		d.bypassed = append(d.bypassed, b.bypass)
	}
	return d.supervise(ctx)
}

// dispatcher returns the dispatcher of a run this process holds as owner.
func (s *Supervisor) dispatcher(g *pipeline.Graph, policies map[int64]Policy, r runRow, owner string) *dispatcher {
	s.log.Info("supervising a run", "pipeline", g.Pipeline.Code, "pipeline_run_id", r.ID, "run_key", r.Key)
	d := &dispatcher{s: s, g: g, run: r, owner: owner, byID: map[int64]*task{}, results: make(chan result, len(g.Tasks)),
		took: make(chan struct{}, 1)}
	for _, wave := range g.Waves() {
		for _, t := range wave {
			x := &task{t: t, policy: policies[t.ID]}
			d.tasks = append(d.tasks, x)
			d.byID[t.ID] = x
		}
	}
	d.watchSLA()
	return d
}

// supervise is the dispatch loop, in a span of the run that starts a trace
// of its own.
func (d *dispatcher) supervise(ctx context.Context) (Outcome, error) {
	ctx, sp := span.StartTrace(ctx, "run "+d.g.Pipeline.Code, span.String("etl_craft.pipeline", d.g.Pipeline.Code),
		span.Int("etl_craft.pipeline_run_id", d.run.ID), span.String("etl_craft.trigger", d.run.TriggerKind))
	defer sp.End()
	defer hold(d.owner)()
	out, err := d.dispatch(ctx)
	sp.Set(span.String("etl_craft.status", out.Status))
	switch {
	case err != nil:
		sp.Fail("the run could not go on (" + exit.CodeOf(err).Class() + ")")
	case out.Code != exit.Success:
		sp.Fail("the run ended " + out.Status)
	}
	return out, err
}

// dispatch starts the ready tasks, records what their attempts did, and
// ends the run when nothing more can start.
func (d *dispatcher) dispatch(ctx context.Context) (Outcome, error) {
	out := Outcome{PipelineCode: d.g.Pipeline.Code, RunID: d.run.ID, Status: RunInProgress}
	d.records = context.WithoutCancel(ctx)
	d.attempts, d.stop = context.WithCancelCause(d.records)
	defer d.stop(nil)
	defer d.sla.reporting.Wait()
	if err := d.load(d.records); err != nil {
		return out, d.abandon(err)
	}
	renew := time.NewTicker(d.s.renewEvery)
	defer renew.Stop()
	check := time.NewTicker(checkEvery)
	defer check.Stop()
	var look gateTimer
	defer look.stop()
	for {
		if ctx.Err() != nil {
			return d.interrupted(out, context.Cause(ctx))
		}
		if err := d.schedule(d.records); err != nil && !d.outage(err) {
			return out, d.abandon(err)
		}
		next, anyRetry := d.nextDue(retrying)
		nextLook, anyGate := d.nextDue(gated)
		if d.startNothing {
			anyRetry = false
		}
		if d.running == 0 && !anyRetry && !anyGate && !d.unavailable {
			switch {
			case d.count(foreign) > 0:
				return d.leave(out, d.foreignDetail())
			case d.count(pending) > 0 && !d.failuresFinal:
				d.failuresFinal = true
				continue
			}
			if out, err := d.finalize(ctx); !d.outage(err) {
				return out, err
			}
		}
		// Wait for an attempt to end, a retry to be due or a gate's next
		// look; a waiting retry or gate holds no slot. After the Engine DB
		// was found unavailable, try again a little later.
		var due, retry <-chan time.Time
		if anyRetry {
			due = time.After(time.Until(next))
		}
		if d.unavailable {
			d.unavailable = false
			retry = time.After(outageRetry)
		}
		select {
		case r := <-d.results:
			if err := d.settle(d.records, r); err != nil && !d.outage(err) {
				return out, d.abandon(err)
			}
		case <-d.took:
		case <-due:
		case <-retry:
		case <-look.at(d.s.clock(), nextLook, anyGate):
			look.fired = true
		case <-ctx.Done():
			return d.interrupted(out, context.Cause(ctx))
		case <-d.wind:
			return d.windDown(ctx, out)
		case <-renew.C:
			if err := d.renew(); exit.Is(err, exit.StaleTransition) {
				return out, d.abandon(err)
			} else if err != nil {
				d.s.log.Warn("could not renew the run's lease; trying again", "pipeline_run_id", d.run.ID, "error", err)
			}
		case <-check.C:
			ended, detail, err := d.check(d.records)
			switch {
			case d.outage(err):
			case err != nil:
				return out, d.abandon(err)
			case ended != "":
				return d.endedElsewhere(out, ended)
			case detail != "":
				d.s.log.Warn("the pipeline was paused: starting nothing more, waiting for the running tasks",
					"pipeline", d.g.Pipeline.Code, "pipeline_run_id", d.run.ID)
				return d.leave(out, detail)
			}
			d.checkSLA(d.records)
		}
	}
}

// outage reports whether err says the Engine DB is unavailable (its server
// down or restarting, see engine.DB.IsUnavailable). The run is then not
// given up: the supervisor logs it, and its loop tries the step again after
// outageRetry, for as long as it takes. A run whose lease expired meanwhile
// and was taken is found taken by the next check once the database is back.
func (d *dispatcher) outage(err error) bool {
	if err == nil || !d.s.opts.DB.IsUnavailable(err) {
		return false
	}
	d.s.log.Warn("the Engine DB is unavailable; the run waits for it", "pipeline_run_id", d.run.ID, "error", err)
	d.unavailable = true
	return true
}

// load reads the run's task runs and their active attempts.
func (d *dispatcher) load(ctx context.Context) error {
	rows, err := loadTaskRuns(ctx, d.s.opts.DB, d.run.ID)
	if err != nil {
		return err
	}
	for _, t := range d.tasks {
		row, ok := rows[t.t.ID]
		if !ok {
			continue
		}
		t.hasRow, t.up = true, row.up
		switch {
		case row.attemptStatus == AttemptQueued:
			t.st, t.queued, t.due = retrying, row.queued, row.notBefore
		case row.attemptStatus != "":
			t.st = foreign
		case d.force:
		case row.up.Status == TaskSuccess:
			t.st = succeeded
		case row.up.Status == TaskSkipped:
			t.st = skipped
		case row.up.Status == TaskCancelled:
			t.st = failed
		}
	}
	return nil
}

// schedule skips the tasks that can never run and starts the ready ones
// while slots are free, in wave order so that skips cascade in one pass. A
// task whose own pipeline's upstreams have settled and whose dependencies on
// other pipelines decide is admitted through its gate when a slot is free.
// While an attempt takes the run (untaken), nothing else starts or writes.
func (d *dispatcher) schedule(ctx context.Context) error {
	now := time.Now()
	for _, t := range d.tasks {
		if d.taking != nil && d.untaken.Load() {
			return nil // an attempt is taking the run: nothing else until it has
		}
		free := d.running < d.s.opts.MaxParallel && !d.startNothing
		switch t.st {
		case retrying:
			if free && !now.Before(t.due) {
				d.start(t, t.queued)
			}
		case pending, gated:
			if t.st == gated && d.s.clock().Now().Before(t.gateAt) {
				continue
			}
			ready, unmet, gateNeed := d.judge(t)
			switch {
			case unmet != nil:
				if err := d.hold(ctx); err != nil {
					return err
				}
				if err := d.skip(ctx, t, unmet); err != nil {
					return err
				}
			case !free:
			case ready:
				d.start(t, queued{})
			case gateNeed > 0:
				if err := d.hold(ctx); err != nil {
					return err
				}
				if err := d.admit(ctx, t, gateNeed); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// admit looks at the gate of a task's dependencies on other pipelines and
// starts its attempt when the gate passes.
func (d *dispatcher) admit(ctx context.Context, t *task, needed int) error {
	a, err := d.s.admitTask(ctx, d.run, t.t, needed, t.hasRow, false, d.s.clock().Now())
	switch {
	case exit.Is(err, exit.StaleTransition):
		d.s.log.Warn("a task changed under the supervisor", "task", t.t.Code, "error", err)
		return d.reload(ctx, t)
	case err != nil:
		return err
	case !a.nextCheck.IsZero():
		t.st, t.gateAt = gated, a.nextCheck
		if d.settled != nil {
			d.settled()
		}
	case a.queued.AttemptID != 0:
		if a.bypass != "" {
			d.bypassed = append(d.bypassed, t.t.Code+": "+a.bypass)
		}
		d.start(t, a.queued)
	case a.skipped:
		d.s.log.Info("task skipped: its gate was not satisfied", "task", t.t.Code, "reason", a.unmet)
		t.st, t.hasRow, t.done, t.up = skipped, true, true, upstream{Status: TaskSkipped}
	default:
		// It failed earlier under this run and keeps its summary.
		t.st, t.done = failed, true
	}
	return nil
}

// judge says whether a pending task is ready, or, with the reasons, that it
// can never run under this run, or how many of its dependencies on other
// pipelines its gate must find satisfied; none of these means it waits. A
// forced run waits for its upstreams to settle in this session; otherwise
// the readiness rule decides, an upstream counting as ended once it settled
// here (a failed one only once failures are final).
func (d *dispatcher) judge(t *task) (ready bool, unmet []string, gateNeed int) {
	if d.force {
		for _, u := range d.g.Upstreams(t.t) {
			if !d.byID[u.ID].done {
				return false, nil, 0
			}
		}
		return true, nil, 0
	}
	failures := readiness.FailuresPending
	if d.failuresFinal {
		failures = readiness.FailuresFinal
	}
	v := readiness.Decide(readiness.Question{Task: t.t, Failures: failures, Backfill: d.run.Backfill,
		Upstream: func(dep *pipeline.Dependency) readiness.Upstream {
			switch u := d.byID[dep.UpstreamTaskID]; u.st {
			case succeeded, skipped, failed:
				return u.up.judged()
			}
			return readiness.Upstream{}
		}})
	return v.Decision == readiness.Start, v.Unmet, v.GateNeed
}

// skip records a task that can never run as SKIPPED. A task that already
// has a summary (it failed earlier) keeps it and is final.
func (d *dispatcher) skip(ctx context.Context, t *task, unmet []string) error {
	if t.hasRow {
		t.st, t.done = failed, true
		return nil
	}
	reason := "not run: its dependencies can never be met: " + strings.Join(unmet, "; ")
	err := inTx(ctx, d.s.opts.DB, func(tx *wtx) error {
		_, err := skipTask(ctx, tx, d.run.ID, t.t.ID, reason, time.Now())
		return err
	})
	if err != nil {
		return err
	}
	d.s.log.Info("task skipped", "task", t.t.Code, "reason", reason)
	t.st, t.hasRow, t.done, t.up = skipped, true, true, upstream{Status: TaskSkipped}
	return nil
}

// start runs an attempt of the task in a goroutine.
func (d *dispatcher) start(t *task, q queued) {
	t.st = running
	d.running++
	sl := slot{run: d.run, g: d.g, task: t.t, policy: t.policy, force: d.force, queued: q, ready: time.Now()}
	if d.untaken.Load() {
		d.taking, sl.take = t, d.owner
		sl.took = func() {
			d.untaken.Store(false)
			select {
			case d.took <- struct{}{}:
			default:
			}
		}
	}
	go func() {
		pool := d.s.opts.Pool
		if !pool.acquire(d.attempts, d.wind) {
			d.results <- result{task: t.t, notStarted: true}
			return
		}
		defer pool.release()
		if d.settled != nil {
			d.settled()
		}
		d.results <- d.s.execute(d.attempts, sl)
	}()
}

// settle applies a finished attempt to its task.
func (d *dispatcher) settle(ctx context.Context, r result) error {
	d.running--
	t := d.byID[r.task.ID]
	if t == d.taking {
		d.taking = nil
	}
	if r.taskRunID != 0 {
		t.hasRow = true
	}
	switch {
	case r.notTaken:
		// The attempt was to take the run, which another process took or
		// ended meanwhile: nothing started.
		return r.err
	case r.notStarted:
		// No worker was free before the run wound down: the task is as
		// it was, for the next supervisor to start.
		t.st = pending
	case exit.Is(r.err, exit.StaleTransition):
		// Someone else changed the task meanwhile: take it as it is now.
		d.s.log.Warn("a task changed under the supervisor", "task", t.t.Code, "error", r.err)
		return d.reload(ctx, t)
	case r.err != nil && r.unbound && d.s.opts.DB.IsUnavailable(r.err):
		// The attempt could not be bound: nothing started, and the task
		// starts again once the Engine DB is back.
		t.st = pending
		if r.queued.AttemptID != 0 {
			t.st, t.queued, t.due = retrying, r.queued, time.Now()
		}
		return r.err
	case r.err != nil:
		return r.err
	case r.retry != nil:
		t.st, t.queued, t.due = retrying, *r.retry, r.retryDue
	case r.status == TaskSuccess:
		t.st, t.up, t.done = succeeded, r.up, true
	default:
		t.st, t.up, t.done = failed, r.up, true
	}
	return nil
}

// reload reads a task's state after someone else changed it.
func (d *dispatcher) reload(ctx context.Context, t *task) error {
	rows, err := loadTaskRuns(ctx, d.s.opts.DB, d.run.ID)
	if err != nil {
		return err
	}
	row := rows[t.t.ID]
	t.up, t.done = row.up, true
	switch {
	case row.attemptStatus == AttemptQueued:
		t.st, t.queued, t.due, t.done = retrying, row.queued, row.notBefore, false
	case row.attemptStatus != "":
		t.st, t.done = foreign, false
	case row.up.Status == TaskSuccess:
		t.st = succeeded
	case row.up.Status == TaskSkipped:
		t.st = skipped
	default:
		t.st = failed
	}
	return nil
}

// nextDue returns when the earliest task in the state is due: a retrying
// task's queued retry (wall clock), or a gated task's next look (gate clock).
func (d *dispatcher) nextDue(st state) (time.Time, bool) {
	var next time.Time
	ok := false
	for _, t := range d.tasks {
		due := t.due
		if st == gated {
			due = t.gateAt
		}
		if t.st == st && (!ok || due.Before(next)) {
			next, ok = due, true
		}
	}
	return next, ok
}

// gateTimer sleeps on the gate clock until the next look of a gated task is
// due. One sleep runs at a time; it is replaced when the due time changes.
type gateTimer struct {
	due    time.Time
	c      chan struct{}
	cancel context.CancelFunc
	// fired is set once c was received from: the look is due, and the timer
	// does not wake the loop again for the same time.
	fired bool
}

// at returns a channel closed when the clock reaches due, or nil when no task
// is gated or this due time has fired already.
func (g *gateTimer) at(clock gate.Clock, due time.Time, on bool) <-chan struct{} {
	switch {
	case !on:
		g.stop()
		return nil
	case g.c != nil && g.due.Equal(due):
		if g.fired {
			return nil
		}
		return g.c
	}
	g.stop()
	ctx, cancel := context.WithCancel(context.Background())
	c := make(chan struct{})
	g.due, g.c, g.cancel, g.fired = due, c, cancel, false
	go func() {
		if clock.Sleep(ctx, due.Sub(clock.Now())) == nil {
			close(c)
		}
	}()
	return c
}

// stop ends the running sleep, if any.
func (g *gateTimer) stop() {
	if g.cancel != nil {
		g.cancel()
	}
	g.c, g.cancel = nil, nil
}

// renew extends the supervisor's lease on its run, once it holds one.
func (d *dispatcher) renew() error {
	if d.untaken.Load() {
		return nil
	}
	return inTx(d.records, d.s.opts.DB, func(tx *wtx) error {
		return renewRun(d.records, tx, d.run.ID, d.owner, time.Now())
	})
}

// hold takes the run in a transaction of its own when it is not taken yet
// and a write other than an attempt's start comes first.
func (d *dispatcher) hold(ctx context.Context) error {
	if !d.untaken.Load() {
		return nil
	}
	err := inTx(ctx, d.s.opts.DB, func(tx *wtx) error { return takeRun(ctx, tx, d.run.ID, d.owner, time.Now()) })
	if err == nil {
		d.untaken.Store(false)
	}
	return err
}

// count returns how many tasks are in the state.
func (d *dispatcher) count(st state) int {
	n := 0
	for _, t := range d.tasks {
		if t.st == st {
			n++
		}
	}
	return n
}

// foreignDetail names the tasks another process is running.
func (d *dispatcher) foreignDetail() string {
	var names []string
	for _, t := range d.tasks {
		if t.st == foreign {
			names = append(names, t.t.Code)
		}
	}
	return strings.Join(names, ", ") + " still " + TaskInProgress + " in another process; run again once it has finished to continue"
}

// check reads the run and its pipeline's pause. It returns the run's
// status when someone else ended it, or what to report when the pipeline
// was paused; a run taken by another supervisor is an error.
func (d *dispatcher) check(ctx context.Context) (ended, paused string, err error) {
	untaken := d.untaken.Load() // before the read: a take may commit meanwhile
	var status string
	var owner sql.NullString
	if err := d.s.opts.DB.QueryRowContext(ctx, "SELECT STATUS, OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1",
		d.run.ID).Scan(&status, &owner); err != nil {
		return "", "", exit.Wrap(exit.EngineDB, err, "could not read pipeline_run_id=%d", d.run.ID)
	}
	if runEnded(status) {
		return status, "", nil
	}
	if owner.String != d.owner && (owner.Valid || !untaken) {
		return "", "", stale(runsTable, d.run.ID, "supervise", fmt.Sprintf("status %s owner='%s'", RunInProgress, d.owner),
			fmt.Sprintf("status %s owner='%s'", status, owner.String))
	}
	p, err := records.PausedBy(ctx, d.s.opts.DB, d.g.Pipeline.ID)
	if err != nil || p == nil {
		return "", "", err
	}
	return "", fmt.Sprintf("the pipeline was %s; running tasks finished and nothing more was started", p), nil
}

// endedElsewhere stops the running attempts of a run someone else ended,
// such as an operator's cancel.
func (d *dispatcher) endedElsewhere(out Outcome, status string) (Outcome, error) {
	d.stop(errRunEnded)
	d.drain(d.records)
	out.Status, out.Detail = status, "the run was ended by another process while it ran"
	if status == RunFailed || status == RunCancelled {
		out.Code = exit.Failure
	}
	return out, nil
}

// drain waits for the running attempts to be recorded.
func (d *dispatcher) drain(ctx context.Context) {
	for d.running > 0 {
		if err := d.settle(ctx, <-d.results); err != nil {
			d.s.log.Error("could not record a task while stopping", "error", err)
		}
	}
}

// leave stops dispatching, lets running attempts finish, and gives the run
// up unfinished (exit 22).
func (d *dispatcher) leave(out Outcome, detail string) (Outcome, error) {
	d.drain(d.records)
	if err := d.release(d.records); err != nil {
		return out, err
	}
	out.Detail, out.Code = detail, exit.Incomplete
	return out, nil
}

// interrupted stops the running attempts, which are recorded FAILED, and
// leaves the run IN-PROGRESS for the next run to resume (exit 22).
func (d *dispatcher) interrupted(out Outcome, cause error) (Outcome, error) {
	d.s.log.Warn("the run was interrupted; stopping its tasks", "pipeline_run_id", d.run.ID, "cause", cause)
	d.stop(errInterrupted)
	stopped := d.running
	d.drain(d.records)
	if err := d.release(d.records); err != nil {
		return out, err
	}
	out.Detail = fmt.Sprintf("interrupted: %d running task(s) were stopped and recorded FAILED; run again to resume", stopped)
	out.Code = exit.Incomplete
	return out, nil
}

// abandon stops everything after an error and gives the run up.
func (d *dispatcher) abandon(err error) error {
	d.stop(errRunEnded)
	d.drain(d.records)
	if rerr := d.release(d.records); rerr != nil && !exit.Is(rerr, exit.StaleTransition) {
		d.s.log.Error("could not release the run", "pipeline_run_id", d.run.ID, "error", rerr)
	}
	return err
}

// release gives up the run's lease; the run stays IN-PROGRESS. A run not
// taken yet has none.
func (d *dispatcher) release(ctx context.Context) error {
	if d.untaken.Load() {
		return nil
	}
	return inTx(ctx, d.s.opts.DB, func(tx *wtx) error { return releaseRun(ctx, tx, d.run.ID, d.owner) })
}
