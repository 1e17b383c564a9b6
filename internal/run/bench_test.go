package run

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// benchTasks is the size of the benchmark pipeline.
const benchTasks = 500

// benchStatement is task i's SELECT.
func benchStatement(i int) string { return fmt.Sprintf("SELECT %d AS id", i) }

// registerBenchPipeline registers BENCH: a root task fanning out to 249
// tasks, and 25 chains of 10 tasks, each a CREATE_TABLE of a one-row SELECT.
// It returns the tasks' targets.
func registerBenchPipeline(b *testing.B, db *engine.DB, schema string) []string {
	b.Helper()
	ctx := actor.With(context.Background(), actor.Actor{Name: "bench@host", Kind: actor.Human})
	targets := make([]string, benchTasks)
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		var pid int64
		if err := tx.QueryRowContext(ctx, `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE)
			VALUES ('BENCH', 'benchmark', 'FULL') RETURNING PIPELINE_ID`).Scan(&pid); err != nil {
			return err
		}
		ids := make([]int64, benchTasks)
		for i := range ids {
			if err := tx.QueryRowContext(ctx, `INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
				VALUES ($1, 'ETL', $2, 'SQL') RETURNING TASK_ID`, fmt.Sprintf("t%03d", i), pid).Scan(&ids[i]); err != nil {
				return err
			}
			targets[i] = fmt.Sprintf("%s.bench_%03d", schema, i)
			for name, value := range map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": targets[i], "SOURCE_SQL": benchStatement(i)} {
				if _, err := tx.ExecContext(ctx, `INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
					VALUES ($1, $2, $3)`, ids[i], name, value); err != nil {
					return err
				}
			}
		}
		dep := func(task, up int) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
				VALUES ($1, $2, $3, 'SUCCESS')`, pid, ids[task], ids[up])
			return err
		}
		for i := 1; i < 250; i++ {
			if err := dep(i, 0); err != nil {
				return err
			}
		}
		for i := 250; i < benchTasks; i++ {
			if (i-250)%10 != 0 {
				if err := dep(i, i-1); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return targets
}

// directly runs the benchmark's statements on the warehouse one after the
// other, each creating its table as a user would by hand, and returns the
// time it took.
func directly(b *testing.B, shared *pool.Pool, targets []string) time.Duration {
	b.Helper()
	ctx := context.Background()
	w, release, err := shared.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	start := time.Now()
	for i, target := range targets {
		tx, err := w.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+target+"_direct"); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE "+target+"_direct AS "+benchStatement(i)); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// handlerAlone runs the SQL handler on each task of the benchmark pipeline,
// one after the other and without the engine, and returns the time it took:
// the warehouse work of the tasks.
func handlerAlone(b *testing.B, db *engine.DB, shared *pool.Pool) time.Duration {
	b.Helper()
	ctx := context.Background()
	g, err := pipeline.Load(ctx, db, "BENCH")
	if err != nil {
		b.Fatal(err)
	}
	var runID int64
	if err := db.QueryRowContext(ctx, "SELECT max(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG").Scan(&runID); err != nil {
		b.Fatal(err)
	}
	h := sqltask.New(db)
	start := time.Now()
	for i, t := range g.Tasks {
		task := &handler.Task{PipelineID: g.Pipeline.ID, PipelineRunID: runID, TaskRunID: int64(i + 1), AttemptID: int64(i + 1),
			AttemptNumber: 1, PipelineCode: g.Pipeline.Code, TaskCode: t.Code, RefreshType: g.Pipeline.RefreshType,
			Params: t.Params, Log: slog.New(slog.DiscardHandler), Warehouse: shared.Acquire}
		if _, err := h.Run(ctx, task); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// noopHandler does nothing: with it a run measures the engine alone.
type noopHandler struct{}

func (noopHandler) Run(context.Context, *handler.Task) (handler.Result, error) {
	return handler.Result{RowsWritten: handler.Int(1)}, nil
}
func (noopHandler) Check(*handler.Task) ([]string, []string) { return nil, nil }

// BenchmarkPipeline500 runs a pipeline of 500 CREATE_TABLE tasks (a fan-out
// of 250 and 25 chains of 10) on a SQLite Engine DB with a DuckDB warehouse,
// and on PostgreSQL for both. It reports the run's wall time against the
// same 500 statements run directly on the warehouse, in the same iteration,
// and the overhead per task: the difference divided by 500. The overhead is
// split in two: the engine alone (the same pipeline with a handler that does
// nothing: dispatch, attempts, leases, logs) as engine-ms/task, and the SQL
// handler's own warehouse work beyond the plain statement (the handler run
// on each task in turn, without the engine, less the direct statements) as
// handler-ms/task.
func BenchmarkPipeline500(b *testing.B) {
	cases := []struct {
		name   string
		kind   engine.Kind
		schema string
		wopts  func(b *testing.B) warehouse.Options
	}{
		{"sqlite+duckdb", engine.SQLite, "main", func(b *testing.B) warehouse.Options {
			return warehouse.Options{Kind: warehouse.DuckDB, Path: filepath.Join(b.TempDir(), "bench.duckdb"), Schema: "main"}
		}},
		{"postgres+postgres", engine.Postgres, "public", func(b *testing.B) warehouse.Options {
			return pgWarehouseOptions(b, enginetest.NewPGDatabase(b))
		}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			db := pipelinetest.DB(b, c.kind)
			targets := registerBenchPipeline(b, db, c.schema)
			shared := pool.New(db, c.wopts(b))
			defer shared.Close()
			opts := Options{
				DB:        db,
				Handlers:  handler.Registry{pipeline.HandlerSQL: sqltask.New(db)},
				Warehouse: shared,
				LogDir:    b.TempDir(),
				Logger:    slog.New(slog.DiscardHandler),
			}
			ctx := actor.With(context.Background(), actor.Actor{Name: "bench@host", Kind: actor.Human})
			run := func(o Options) time.Duration {
				start := time.Now()
				out, err := New(o).RunPipeline(ctx, Request{PipelineCode: "BENCH"})
				if err != nil || out.Status != RunSuccess {
					b.Fatalf("%q %v", out.String(), err)
				}
				return time.Since(start)
			}
			engineOnly := opts
			engineOnly.Handlers = handler.Registry{pipeline.HandlerSQL: noopHandler{}}
			var alone, piped, handled, direct time.Duration
			for b.Loop() {
				alone += run(engineOnly)
				piped += run(opts)
				handled += handlerAlone(b, db, shared)
				direct += directly(b, shared, targets)
			}
			n := float64(b.N)
			perTask := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / n / benchTasks }
			b.ReportMetric(piped.Seconds()/n, "pipeline-s")
			b.ReportMetric(direct.Seconds()/n, "direct-s")
			b.ReportMetric(float64(piped)/float64(direct), "ratio")
			b.ReportMetric(perTask(piped-direct), "overhead-ms/task")
			b.ReportMetric(perTask(alone), "engine-ms/task")
			b.ReportMetric(perTask(handled-direct), "handler-ms/task")
		})
	}
}
