package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/run"
)

// benchTasks is the size of BenchmarkObservedEngine's pipeline.
const benchTasks = 500

// benchDB returns a fresh initialized Engine DB of the kind whose
// operations observer is told of (none when nil), holding the pipeline
// BENCH of benchTasks tasks: a root and the others after it.
func benchDB(b *testing.B, kind engine.Kind, observer engine.Observer) *engine.DB {
	b.Helper()
	opts := enginetest.NewOptions(b, kind)
	opts.Observer = observer
	db := enginetest.OpenWith(b, opts)
	pipelinetest.Init(b, db)
	p := pipelinetest.New(b, db)
	p.Pipeline("BENCH", pipeline.Full)
	p.Task("BENCH", "root", pipeline.HandlerPython, nil)
	for i := 1; i < benchTasks; i++ {
		code := fmt.Sprintf("t%03d", i)
		p.Task("BENCH", code, pipeline.HandlerPython, nil)
		p.Dep("BENCH", code, "BENCH", "root", pipeline.Success)
	}
	return db
}

// discard is an OTLP/HTTP receiver that takes every export and keeps
// nothing: tracing's cost without a collector's.
func discard(b *testing.B) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// BenchmarkObservedEngine measures what being observed costs the engine:
// in each iteration the same pipeline of 500 tasks, with a handler that does
// nothing (so only the engine works: dispatch, the run's and attempts'
// rows, leases, logs), runs three times, each on an Engine DB of its own:
// observed by nobody with tracing off (off); measured by Metrics (its
// operations and the supervisor's waits) while a scrape reads the Engine DB
// every second (metrics); and the same with tracing on, exporting to a
// receiver on loopback (on). It reports each one's engine-ms/task and the
// overheads metrics-% (metrics / off − 1) and overhead-% (on / off − 1).
func BenchmarkObservedEngine(b *testing.B) {
	eachKind(b, func(b *testing.B, kind engine.Kind, ctx context.Context) {
		receiver := discard(b)
		// measured runs the pipeline once on an Engine DB of its own, measured
		// by Metrics of its own and scraped every second.
		measured := func() func() time.Duration {
			m := New(Options{})
			db := benchDB(b, kind, m)
			m.Watch(db, nil)
			return func() time.Duration {
				stop, scraped := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(scraped)
					for {
						select {
						case <-stop:
							return
						case <-time.After(time.Second):
							m.reg.Gather()
						}
					}
				}()
				defer func() { close(stop); <-scraped }()
				return runBench(b, ctx, db, m)
			}
		}
		off := benchDB(b, kind, nil)
		metrics, traced := measured(), measured()
		var tOff, tMetrics, tOn time.Duration
		for b.Loop() {
			tOff += runBench(b, ctx, off, nil)
			tMetrics += metrics()
			tracing, err := StartTracing(ctx, receiver, "bench", nil)
			if err != nil {
				b.Fatal(err)
			}
			tOn += traced()
			if err := tracing.Stop(ctx); err != nil {
				b.Fatal(err)
			}
		}
		perTask := func(d time.Duration) float64 { return d.Seconds() * 1000 / float64(b.N) / benchTasks }
		b.ReportMetric(perTask(tOff), "off-ms/task")
		b.ReportMetric(perTask(tMetrics), "metrics-ms/task")
		b.ReportMetric(perTask(tOn), "on-ms/task")
		b.ReportMetric((tMetrics.Seconds()/tOff.Seconds()-1)*100, "metrics-%")
		b.ReportMetric((tOn.Seconds()/tOff.Seconds()-1)*100, "overhead-%")
	})
}

// runBench runs the pipeline BENCH once with a handler that does nothing,
// told to observer when not nil, and returns how long it took.
func runBench(b *testing.B, ctx context.Context, db *engine.DB, observer run.Observer) time.Duration {
	opts := run.Options{DB: db, Handlers: handler.Registry{pipeline.HandlerPython: outcomeHandler{}},
		LogDir: b.TempDir(), MaxParallel: 8, Observer: observer}
	start := time.Now()
	if _, err := run.New(opts).RunPipeline(ctx, run.Request{PipelineCode: "BENCH"}); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkScrape measures a scrape of the metrics of an Engine DB holding
// 1,000 pipelines with a run each: the first, which counts every run stored, as first-ms, and each
// later one, which reads what changed (nothing here: the cost of a scrape
// of an idle server), as ms/scrape. The scrapes go through the HTTP handler
// the server serves.
func BenchmarkScrape(b *testing.B) {
	eachKind(b, func(b *testing.B, kind engine.Kind, ctx context.Context) {
		db := pipelinetest.DB(b, kind)
		p := pipelinetest.New(b, db)
		var codes []string
		for i := range 1000 {
			code := fmt.Sprintf("P%04d", i)
			codes = append(codes, code)
			p.Pipeline(code, pipeline.Full)
			p.Task(code, "load", pipeline.HandlerPython, nil)
		}
		sup := run.New(run.Options{DB: db, Handlers: handler.Registry{pipeline.HandlerPython: outcomeHandler{}}, LogDir: b.TempDir()})
		for _, code := range codes {
			if _, err := sup.RunPipeline(ctx, run.Request{PipelineCode: code}); err != nil {
				b.Fatal(err)
			}
		}
		m := New(Options{})
		m.Watch(db, nil)
		srv := httptest.NewServer(m.Handler())
		defer srv.Close()
		scrape := func() time.Duration {
			start := time.Now()
			resp, err := http.Get(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("scrape: %s", resp.Status)
			}
			return time.Since(start)
		}
		first := scrape()
		if n := value(b, m, "etl_craft_runs_ended_total", "pipeline", codes[len(codes)-1]); n != 1 {
			b.Fatalf("%s: %v runs ended, want 1", codes[len(codes)-1], n)
		}
		var later time.Duration
		for b.Loop() {
			later += scrape()
		}
		b.ReportMetric(first.Seconds()*1000, "first-ms")
		b.ReportMetric(later.Seconds()*1000/float64(b.N), "ms/scrape")
	})
}

// eachKind runs body as a sub-benchmark per Engine DB dialect, with the
// context of a person's command; PostgreSQL needs the test server.
func eachKind(b *testing.B, body func(b *testing.B, kind engine.Kind, ctx context.Context)) {
	for _, kind := range enginetest.Kinds {
		b.Run(string(kind), func(b *testing.B) {
			if kind == engine.Postgres {
				enginetest.AdminURL(b)
			}
			body(b, kind, actor.With(context.Background(), actor.Actor{Name: "bench@test", Kind: actor.Human}))
		})
	}
}
