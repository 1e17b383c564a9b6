package run

import (
	"fmt"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// outageFixture is a fixture whose PostgreSQL Engine DB lives on a cluster
// of the test's own, which the test stops and starts.
func outageFixture(t *testing.T) (*fixture, *enginetest.Cluster) {
	t.Helper()
	c := enginetest.NewCluster(t)
	db := enginetest.OpenWith(t, engine.Options{Kind: engine.Postgres, DSN: c.NewDatabase("engine"), Schema: "public"})
	pipelinetest.Init(t, db)
	return newFixture(t, db), c
}

// The Engine DB gone for five seconds while a task runs, and while the
// next one would start: the supervisor waits it out instead of giving the
// run up, the running attempt goes on and its success is recorded, the next
// task starts once the database is back, and the run ends SUCCESS with one
// attempt a task.
func TestAnEngineDBOutageWhileATaskRuns(t *testing.T) {
	t.Parallel()
	f, c := outageFixture(t)
	f.b.Pipeline("OUT", "FULL")
	f.task("OUT", "held", "block")
	f.task("OUT", "after", "succeed")
	f.b.Dep("OUT", "after", "OUT", "held", "SUCCESS")
	type ended struct {
		out Outcome
		err error
	}
	done := make(chan ended, 1)
	go func() {
		out, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "OUT"})
		done <- ended{out, err}
	}()
	f.h.waitStarted(t, "held")
	c.Stop()
	time.Sleep(2 * time.Second)
	close(f.h.gate("held")) // the task ends while the database is gone
	time.Sleep(3 * time.Second)
	c.Start()
	var e ended
	select {
	case e = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not end after the outage\nlog:\n%s", f.logs.String())
	}
	if e.err != nil || e.out.Status != RunSuccess {
		t.Fatalf("the run after an outage: %+v %v\nlog:\n%s", e.out, e.err, f.logs.String())
	}
	for _, task := range []string{"held", "after"} {
		if got := fmt.Sprint(f.attempts(e.out.RunID, task)); got != "[SUCCESS]" {
			t.Fatalf("attempts of %s: %s\nlog:\n%s", task, got, f.logs.String())
		}
	}
}
