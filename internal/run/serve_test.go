package run

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// The runs a supervisor with a Pool executes share its workers: three runs
// of two blocked tasks each never have more than two attempts at once, and
// all end SUCCESS.
func TestExecuteSharesThePool(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f, sup := newServing(t, db, 2)
		pipes := []string{"PA", "PB", "PC"}
		ids := map[string]int64{}
		for _, p := range pipes {
			f.b.Pipeline(p, "FULL")
			f.task(p, p+"1", "block")
			f.task(p, p+"2", "block")
			out, err := sup.InitRun(f.ctx(), Request{PipelineCode: p})
			if err != nil {
				t.Fatal(err)
			}
			ids[p] = out.RunID
		}
		var wg sync.WaitGroup
		outs := make([]Outcome, len(pipes))
		for i, p := range pipes {
			wg.Go(func() {
				var err error
				if outs[i], err = sup.Execute(f.ctx(), Request{PipelineCode: p, RunID: ids[p]}, make(chan struct{})); err != nil {
					t.Error(err)
				}
			})
		}
		first := <-f.h.started
		<-f.h.started
		time.Sleep(300 * time.Millisecond) // a third attempt would start now without the pool
		f.h.mu.Lock()
		active := f.h.active
		f.h.mu.Unlock()
		if active != 2 {
			t.Fatalf("%d attempts running with a pool of 2", active)
		}
		close(f.h.gate(first))
		for _, p := range pipes {
			for _, c := range []string{p + "1", p + "2"} {
				if c != first {
					close(f.h.gate(c))
				}
			}
		}
		wg.Wait()
		for i, out := range outs {
			if out.Status != RunSuccess || out.RunID != ids[pipes[i]] {
				t.Fatalf("run of %s: %+v", pipes[i], out)
			}
		}
		if f.h.peak != 2 {
			t.Fatalf("peak of %d attempts at once with a pool of 2", f.h.peak)
		}
	})
}

// Winding down starts nothing more: a task waiting for a worker never
// starts, the running one is stopped once the context ends, and the run stays
// IN-PROGRESS without an owner (exit 22).
func TestExecuteWindsDown(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f, sup := newServing(t, db, 1)
		f.b.Pipeline("WD", "FULL")
		f.task("WD", "x", "block")
		f.task("WD", "y", "block")
		init, err := sup.InitRun(f.ctx(), Request{PipelineCode: "WD"})
		if err != nil {
			t.Fatal(err)
		}
		wind := make(chan struct{})
		ctx, cancel := context.WithCancel(f.ctx())
		defer cancel()
		done := make(chan Outcome, 1)
		go func() {
			out, err := sup.Execute(ctx, Request{PipelineCode: "WD", RunID: init.RunID}, wind)
			if err != nil {
				t.Error(err)
			}
			done <- out
		}()
		running := <-f.h.started
		close(wind)
		time.Sleep(200 * time.Millisecond) // the grace: the other task must not start
		cancel()
		out := <-done
		if out.Code != exit.Incomplete || out.Status != RunInProgress {
			t.Fatalf("outcome %+v", out)
		}
		if got := f.runStatus(init.RunID); got != RunInProgress {
			t.Fatalf("run %s", got)
		}
		if n := f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE OWNER_ID IS NOT NULL"); n != 0 {
			t.Fatal("the run kept an owner")
		}
		if n := f.count("SELECT count(*) FROM AUD_TASK_ATTEMPTS"); n != 1 {
			t.Fatalf("%d attempts; only %s started", n, running)
		}
		if got := f.attempts(init.RunID, running); len(got) != 1 || got[0] != AttemptFailed {
			t.Fatalf("the stopped attempt: %v", got)
		}
	})
}

// A server's run is taken with its first attempt, in the transaction that
// starts it: a one-task run executed from IN-PROGRESS with no owner writes
// three transactions (the take and the attempt's start, its outcome, the
// run's end), one fewer than a take of its own.
func TestExecuteTakesTheRunWithItsFirstAttempt(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f, sup := newServing(t, db, 2)
		runID := f.initRun(sup, "TK", "a", "succeed")
		before := db.Counts()
		f.executeOnce(sup, "TK", runID, "a")
		if n := db.Counts().Sub(before).Transactions; n != 3 {
			t.Fatalf("%d write transactions for a one-task run, want 3", n)
		}
	})
}

// newServing returns a fixture and its supervisor with a shared pool of
// the workers, as a server's.
func newServing(t *testing.T, db *engine.DB, workers int) (*fixture, *Supervisor) {
	f := newFixture(t, db)
	f.opts.Pool = NewPool(workers)
	return f, f.supervisor()
}

// initRun registers a pipeline of one task of the behaviour and leaves a
// run of it IN-PROGRESS with no owner (InitRun), as a server's admission
// does, and returns the run's id.
func (f *fixture) initRun(sup *Supervisor, pipe, task, behave string) int64 {
	f.t.Helper()
	f.b.Pipeline(pipe, "FULL")
	f.task(pipe, task, behave)
	out, err := sup.InitRun(f.ctx(), Request{PipelineCode: pipe})
	if err != nil {
		f.t.Fatal(err)
	}
	return out.RunID
}

// executeOnce executes the run as a server does and fails the test unless
// it ends SUCCESS with one attempt of its task, which succeeded.
func (f *fixture) executeOnce(sup *Supervisor, pipe string, runID int64, task string) {
	f.t.Helper()
	out, err := sup.Execute(f.ctx(), Request{PipelineCode: pipe, RunID: runID}, make(chan struct{}))
	if err != nil || out.Status != RunSuccess {
		f.t.Fatalf("Execute: %+v %v\n%s", out, err, f.logs.String())
	}
	if got := f.attempts(runID, task); len(got) != 1 || got[0] != AttemptSuccess {
		f.t.Fatalf("attempts %v", got)
	}
}

// A crash inside the transaction that takes a server's run and starts its
// first attempt (fault runner.after_take) leaves the run as a crash before
// a take of its own would: IN-PROGRESS, no owner, no task run and no
// attempt; the next Execute runs the task once.
func TestExecuteInterruptedTakingTheRunLeavesItUntaken(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f, sup := newServing(t, db, 1)
		runID := f.initRun(sup, "TF", "a", "succeed")
		t.Setenv(fault.Variable, "runner.after_take")
		_, err := sup.Execute(f.ctx(), Request{PipelineCode: "TF", RunID: runID}, make(chan struct{}))
		wantCode(t, err, exit.InjectedFault, "runner.after_take")
		if got := f.runStatus(runID); got != RunInProgress {
			t.Fatalf("run %s after the fault", got)
		}
		if n := f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE OWNER_ID IS NOT NULL OR LEASE_EXPIRES_AT IS NOT NULL"); n != 0 {
			t.Fatal("the run was left with an owner")
		}
		if n := f.count("SELECT count(*) FROM AUD_TASK_RUN_LOG") + f.count("SELECT count(*) FROM AUD_TASK_ATTEMPTS"); n != 0 {
			t.Fatalf("%d task runs and attempts after the fault, want none", n)
		}
		t.Setenv(fault.Variable, "")
		f.executeOnce(sup, "TF", runID, "a")
	})
}

// A server's run that another process takes while its first attempt waits
// for a worker is left to that process: the attempt's take finds it taken,
// nothing starts, and Execute reports the stale take.
func TestExecuteLeavesARunTakenWhileItWaited(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f, sup := newServing(t, db, 1)
		hold := f.initRun(sup, "HOLD", "h", "block")
		runID := f.initRun(sup, "TW", "a", "succeed")
		held := make(chan Outcome, 1)
		go func() {
			out, _ := sup.Execute(f.ctx(), Request{PipelineCode: "HOLD", RunID: hold}, make(chan struct{}))
			held <- out
		}()
		<-f.h.started // the pool's one worker is busy
		done := make(chan error, 1)
		go func() {
			_, err := sup.Execute(f.ctx(), Request{PipelineCode: "TW", RunID: runID}, make(chan struct{}))
			done <- err
		}()
		// Once the server supervises the run (bound, not taken), another
		// supervisor takes it.
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(f.logs.String(), `msg="supervising a run" pipeline=TW`) {
			if time.Now().After(deadline) {
				t.Fatalf("the run was not bound:\n%s", f.logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := f.tx(func(tx *wtx) error { return takeRun(f.ctx(), tx, runID, "other-owner", time.Now()) }); err != nil {
			t.Fatal(err)
		}
		close(f.h.gate("h"))
		wantCode(t, <-done, exit.StaleTransition, "other-owner")
		if out := <-held; out.Status != RunSuccess {
			t.Fatalf("the holding run: %+v", out)
		}
		if n := f.count("SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1", runID); n != 0 {
			t.Fatalf("%d task runs under the run another process took", n)
		}
		if got := f.nullString("SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", runID); got.String != "other-owner" {
			t.Fatalf("owner %q", got.String)
		}
	})
}
