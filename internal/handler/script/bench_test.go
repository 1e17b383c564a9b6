package script_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// benchRows is how many rows the load benchmark writes.
const benchRows = 1_000_000

// benchScript loads benchRows rows of (id, name, amount) with task.load.
const benchScript = `
from etl_craft.scripting import ScriptResult

def run(task):
    n = task.input_params["rows"]
    rows = ((i, "name-%d" % i, i * 7) for i in range(n))
    return ScriptResult(task.load("bench_script", rows, mode="replace"))
`

// BenchmarkLoad1M loads 1,000,000 rows into each warehouse with a script's
// task.load (a whole pipeline run: the child process, the pipe, staging and
// publishing) and, in the same iteration, the same rows with the
// warehouse's bulk load directly (the DuckDB appender, PostgreSQL COPY). It
// reports both times and ratio = direct / script: 1 is as fast as the
// direct load.
func BenchmarkLoad1M(b *testing.B) {
	for _, kind := range []warehouse.Kind{warehouse.DuckDB, warehouse.Postgres} {
		b.Run(string(kind), func(b *testing.B) {
			e := newEnv(b, kind, engine.SQLite)
			cols := []warehouse.Column{{Name: "id", Type: warehouse.BigInt}, {Name: "name", Type: warehouse.String}, {Name: "amount", Type: warehouse.BigInt}}
			e.exec("CREATE TABLE staging.bench_script (id BIGINT, name VARCHAR, amount BIGINT)")
			e.script("bench.py", benchScript)
			e.task("bench", "bench.py", map[string]string{"INPUT_PARAMS": fmt.Sprintf(`{"rows": %d}`, benchRows)})
			var script, direct time.Duration
			for b.Loop() {
				start := time.Now()
				out := e.run()
				if out.Status != run.RunSuccess {
					b.Fatalf("%s: %s", out, e.latest("bench").message)
				}
				script += time.Since(start)
				start = time.Now()
				directLoad(b, e, cols)
				direct += time.Since(start)
			}
			n := float64(b.N)
			b.ReportMetric(script.Seconds()/n, "script-s")
			b.ReportMetric(direct.Seconds()/n, "direct-s")
			b.ReportMetric(direct.Seconds()/script.Seconds(), "ratio")
		})
	}
}

// directLoad writes the benchmark's rows with the warehouse's bulk load
// into a fresh table, as the script's staging table is made.
func directLoad(b *testing.B, e *env, cols []warehouse.Column) {
	ctx := context.Background()
	w, err := warehouse.Open(ctx, e.opts)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	tx, err := w.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	t := w.Table("staging", "bench_direct")
	if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+warehouse.Qualify(w, t)); err != nil {
		b.Fatal(err)
	}
	if _, err := tx.Exec(ctx, w.CreateTable(t, cols)); err != nil {
		b.Fatal(err)
	}
	rows := func(yield func([]any, error) bool) {
		row := make([]any, 3)
		for i := range benchRows {
			row[0], row[1], row[2] = int64(i), fmt.Sprintf("name-%d", i), int64(i*7)
			if !yield(row, nil) {
				return
			}
		}
	}
	if n, err := tx.BulkLoad(ctx, t, cols, rows); err != nil || n != benchRows {
		b.Fatal(n, err)
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
