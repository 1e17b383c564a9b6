package run

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// The runs a supervisor with a Pool executes share its workers: three runs
// of two blocked tasks each never have more than two attempts at once, and
// all end SUCCESS.
func TestExecuteSharesThePool(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.opts.Pool = NewPool(2)
		sup := f.supervisor()
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
		f := newFixture(t, db)
		f.opts.Pool = NewPool(1)
		sup := f.supervisor()
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
