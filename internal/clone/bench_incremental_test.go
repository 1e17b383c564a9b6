package clone

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// runRows is about what one run adds to the AUD_ tables in the incremental
// benchmark.
const runRows = 1000

// BenchmarkIncrementalClone fills an Engine DB with each history size of
// ETL_CRAFT_BENCH_HISTORY (AUD_ACTIONS rows, default 1000000,10000000),
// clones it with scope aud into a PostgreSQL warehouse and into a DuckDB
// file, times one full replacement of every mirror (clone --full), then in
// each iteration adds runRows rows, as a run does, and times the clone that
// follows, which copies only them. It reports the seconds of both and their
// ratio. ETL_CRAFT_BENCH_ENGINES lists the Engine DBs (default
// sqlite,postgres), ETL_CRAFT_BENCH_WAREHOUSES the warehouses (default
// postgres,duckdb).
//
//	ETL_CRAFT_BENCH_HISTORY=1000000 bench/clone/run.sh -bench IncrementalClone
func BenchmarkIncrementalClone(b *testing.B) {
	engines := strings.Split(envOr("ETL_CRAFT_BENCH_ENGINES", "sqlite,postgres"), ",")
	warehouses := strings.Split(envOr("ETL_CRAFT_BENCH_WAREHOUSES", "postgres,duckdb"), ",")
	for _, size := range strings.Split(envOr("ETL_CRAFT_BENCH_HISTORY", "1000000,10000000"), ",") {
		rows, err := strconv.Atoi(size)
		if err != nil || rows <= 0 {
			b.Fatalf("ETL_CRAFT_BENCH_HISTORY: %q is not a positive whole number", size)
		}
		for _, ek := range engines {
			b.Run(fmt.Sprintf("%s/%d", ek, rows), func(b *testing.B) {
				db := pipelinetest.DB(b, engine.Kind(ek))
				fillActions(b, db, rows)
				for _, wk := range warehouses {
					b.Run(wk, func(b *testing.B) { benchIncremental(b, db, warehouse.Kind(wk)) })
				}
			})
		}
	}
}

func benchIncremental(b *testing.B, db *engine.DB, wk warehouse.Kind) {
	ctx := context.Background()
	tg := newTarget(b, db, wk)
	opts := tg.options("aud")
	timed := func(opts Options, want string) time.Duration {
		start := time.Now()
		tables, err := Run(ctx, db, tg.src, opts)
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		for _, t := range tables {
			if t.Engine == "AUD_ACTIONS" && t.Copy() != want {
				b.Fatalf("AUD_ACTIONS was copied %s (%s), want %s", t.Copy(), t.Why, want)
			}
		}
		return d
	}
	timed(opts, "full") // creates the mirrors
	full := opts
	full.Full = true
	fullTime := timed(full, "full")
	var best time.Duration
	for b.Loop() {
		fillActions(b, db, runRows)
		if d := timed(opts, "incremental"); best == 0 || d < best {
			best = d
		}
	}
	b.ReportMetric(fullTime.Seconds(), "full-s")
	b.ReportMetric(best.Seconds(), "incremental-s")
	b.ReportMetric(fullTime.Seconds()/best.Seconds(), "full/incremental")
}
