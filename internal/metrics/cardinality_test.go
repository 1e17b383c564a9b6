package metrics

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/run"
)

// series returns the series of etl-craft's metrics in a gathering of m (a
// histogram is one), each written name{label=value,…}, and fails the test
// if a label value is a number: an id where only codes, statuses and kinds
// belong.
func series(t *testing.T, m *Metrics) map[string]bool {
	t.Helper()
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), Namespace+"_") {
			continue
		}
		for _, s := range f.GetMetric() {
			var labels []string
			for _, l := range s.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
				if _, err := strconv.Atoi(l.GetValue()); err == nil {
					t.Errorf("%s has the label %s=%s, a number", f.GetName(), l.GetName(), l.GetValue())
				}
			}
			out[f.GetName()+"{"+strings.Join(labels, ",")+"}"] = true
		}
	}
	return out
}

// 1,000 runs of 20 pipelines, half of which fail, add no series once each
// pipeline has run once (ETL_CRAFT_METRICS_RUNS sets another number): the
// labels are codes, handlers, statuses and kinds, never a run's id. The
// runs are counted all the same.
func TestRunsAddNoSeries(t *testing.T) {
	t.Parallel()
	const pipelines = 20
	runs := 1000
	if s := os.Getenv("ETL_CRAFT_METRICS_RUNS"); s != "" {
		var err error
		if runs, err = strconv.Atoi(s); err != nil || runs < pipelines {
			t.Fatalf("ETL_CRAFT_METRICS_RUNS=%s: want a whole number of %d or more", s, pipelines)
		}
	}
	db := pipelinetest.DB(t, engine.SQLite)
	ctx := actor.With(context.Background(), actor.Actor{Name: "metrics@test", Kind: actor.Human})
	b := pipelinetest.New(t, db)
	var codes []string
	for i := range pipelines {
		code := fmt.Sprintf("P%02d", i)
		codes = append(codes, code)
		b.Pipeline(code, pipeline.Full)
		var params map[string]string
		if i%2 == 1 {
			params = map[string]string{"FAIL": "yes"}
		}
		b.Task(code, "load", pipeline.HandlerPython, params)
	}
	m := New(Options{})
	sup := run.New(run.Options{DB: db, Handlers: handler.Registry{pipeline.HandlerPython: outcomeHandler{}},
		LogDir: t.TempDir(), Observer: m})
	m.Watch(db, nil)
	series(t, m) // the first read: the runs below end after it, and are timed
	// runEach runs every pipeline n times, the pipelines at once.
	runEach := func(n int) {
		var wg sync.WaitGroup
		for _, code := range codes {
			wg.Go(func() {
				for range n {
					if _, err := sup.RunPipeline(ctx, run.Request{PipelineCode: code}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	runEach(1)
	first := series(t, m)
	runEach(runs/pipelines - 1)
	if t.Failed() {
		t.FailNow()
	}
	later := series(t, m)
	for s := range later {
		if !first[s] {
			t.Errorf("after %d runs, a series the first %d did not have: %s", runs, pipelines, s)
		}
	}
	if len(later) != len(first) || len(first) == 0 {
		t.Errorf("%d series after %d runs, %d after the first %d", len(later), runs, len(first), pipelines)
	}
	agree(t, db, m)
}
