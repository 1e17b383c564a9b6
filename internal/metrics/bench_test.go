package metrics

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"slices"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/e2e"
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

// benchRounds is how many rounds each iteration of BenchmarkObservedEngine
// runs: in each, the pipeline runs once in each setup.
const benchRounds = 5

// BenchmarkObservedEngine measures what being observed costs the engine:
// the same pipeline of 500 tasks, with a handler that does nothing (so only
// the engine works: dispatch, the run's and attempts' rows, leases, logs),
// runs in three setups, each on an Engine DB of its own: observed by nobody
// with tracing off (off); measured by Metrics (its operations and the
// supervisor's waits) while a scrape reads the Engine DB every second
// (metrics); and the same with tracing on, exporting to a receiver on
// loopback (on). Each iteration runs benchRounds rounds, a run of each
// setup per round, in an order that turns from round to round, so that a
// machine whose load changes slows the three alike. It reports the median
// over the rounds of each setup's engine-ms/task, and of the per-round
// ratios metrics-% (metrics / off − 1) and overhead-% (on / off − 1): a
// round slowed by a burst of load moves one ratio, not the median. As the
// machine's load moves wall times most, it reports the same ratios of the
// CPU time this process used in each run too (cpu-metrics-%,
// cpu-overhead-%): what observing costs the engine's process, without the
// PostgreSQL server's share of the work.
func BenchmarkObservedEngine(b *testing.B) {
	eachKind(b, func(b *testing.B, kind engine.Kind, ctx context.Context) {
		receiver := discard(b)
		// measured runs the pipeline once on an Engine DB of its own, measured
		// by Metrics of its own and scraped every second, traced when traced.
		measured := func(traced bool) func() time.Duration {
			m := New(Options{})
			db := benchDB(b, kind, m)
			m.Watch(db, nil)
			return func() time.Duration {
				if traced {
					tracing, err := StartTracing(ctx, receiver, "bench", nil)
					if err != nil {
						b.Fatal(err)
					}
					defer func() {
						if err := tracing.Stop(ctx); err != nil {
							b.Fatal(err)
						}
					}()
				}
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
		setups := [...]func() time.Duration{
			func() time.Duration { return runBench(b, ctx, off, nil) },
			measured(false),
			measured(true),
		}
		names := [len(setups)]string{"off", "metrics", "on"}
		// took and cpu are each setup's wall time per round, and the CPU time
		// this process used meanwhile (tracing's start and flush included).
		// Each setup runs with the profiler labels setup=<name> and engine=<kind>,
		// so that a CPU profile tells their samples apart (pprof -tagfocus
		// setup=on).
		var took, cpu [len(setups)][]time.Duration
		for b.Loop() {
			for round := range benchRounds {
				for i := range setups {
					k := (i + round) % len(setups)
					pprof.Do(ctx, pprof.Labels("setup", names[k], "engine", string(kind)), func(context.Context) {
						before := e2e.CPUTime(b)
						took[k] = append(took[k], setups[k]())
						cpu[k] = append(cpu[k], e2e.CPUTime(b)-before)
					})
				}
			}
		}
		// overhead is the median over the rounds of setup k's ratio to off,
		// as a percentage above it.
		overhead := func(of [len(setups)][]time.Duration, k int) float64 {
			r := make([]float64, len(of[k]))
			for i := range r {
				r[i] = of[k][i].Seconds() / of[0][i].Seconds()
			}
			return (median(r) - 1) * 100
		}
		for k, name := range names {
			b.ReportMetric(median(took[k]).Seconds()*1000/benchTasks, name+"-ms/task")
		}
		b.ReportMetric(overhead(took, 1), "metrics-%")
		b.ReportMetric(overhead(took, 2), "overhead-%")
		b.ReportMetric(overhead(cpu, 1), "cpu-metrics-%")
		b.ReportMetric(overhead(cpu, 2), "cpu-overhead-%")
	})
}

// median is the middle value of some, the mean of the two middle ones
// when they are even in number.
func median[T time.Duration | float64](some []T) T {
	s := slices.Sorted(slices.Values(some))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
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
// of an idle server), as ms/scrape, with the Engine DB queries each sends
// (queries/scrape). The scrapes go through the HTTP handler the server
// serves.
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
		opts := db.Options()
		var q queries
		opts.Observer = &q
		m := New(Options{})
		m.Watch(enginetest.OpenWith(b, opts), nil)
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
		q.n.Store(0)
		for b.Loop() {
			later += scrape()
		}
		b.ReportMetric(first.Seconds()*1000, "first-ms")
		b.ReportMetric(later.Seconds()*1000/float64(b.N), "ms/scrape")
		b.ReportMetric(float64(q.n.Load())/float64(b.N), "queries/scrape")
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
