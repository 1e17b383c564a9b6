package retention_test

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/retention"
)

// benchPipelines and benchTasks shape the benchmark's history: runs of
// benchPipelines pipelines of benchTasks tasks, one attempt per task run.
const (
	benchPipelines = 100
	benchTasks     = 4
)

// BenchmarkPurge fills an Engine DB with ETL_CRAFT_BENCH_ATTEMPTS attempts
// (default 1000000) with their task runs, runs and one AUD_ACTIONS row per
// run, half of them 800 days old and half a day old (then VACUUM and
// ANALYZE), and times a dry run (the plan alone) and one purge with the
// default retention (the old half goes), without and with an archive. Meanwhile a one-task run's Engine DB work (its run,
// task run and attempt recorded, then ended: two transactions) runs in a
// loop; its p99 latency is reported against the same work alone just
// before the purge.
// ETL_CRAFT_BENCH_ENGINES lists the Engine DBs (default sqlite,postgres).
//
//	ETL_CRAFT_BENCH_ATTEMPTS=1000000 scripts/test.sh -run '^$' -bench Purge -benchtime 1x ./internal/retention/
func BenchmarkPurge(b *testing.B) {
	attempts, err := strconv.Atoi(envOr("ETL_CRAFT_BENCH_ATTEMPTS", "1000000"))
	if err != nil || attempts < 2*benchPipelines*benchTasks {
		b.Fatalf("ETL_CRAFT_BENCH_ATTEMPTS: %q is not a whole number of at least %d", os.Getenv("ETL_CRAFT_BENCH_ATTEMPTS"), 2*benchPipelines*benchTasks)
	}
	for _, ek := range strings.Split(envOr("ETL_CRAFT_BENCH_ENGINES", "sqlite,postgres"), ",") {
		for _, archive := range []bool{false, true} {
			name := ek + "/plain"
			if archive {
				name = ek + "/archive"
			}
			b.Run(name, func(b *testing.B) {
				for range b.N {
					b.StopTimer()
					db := pipelinetest.DB(b, engine.Kind(ek))
					latency := fillHistory(b, db, attempts)
					opts := retention.Options{Policy: retention.FromConfig(config.DefaultRetention())}
					if archive {
						opts.ArchiveDir = b.TempDir()
					}
					start := time.Now()
					if _, err := retention.Purge(acting(), db, retention.Options{Policy: opts.Policy, DryRun: true}); err != nil {
						b.Fatal(err)
					}
					plan := time.Since(start)
					quiet := taskLatencies(b, db, latency, nil, 200)
					done := make(chan struct{})
					during := make(chan []time.Duration)
					go func() { during <- taskLatencies(b, db, latency, done, 0) }()
					b.StartTimer()
					start = time.Now()
					res, err := retention.Purge(acting(), db, opts)
					elapsed := time.Since(start)
					b.StopTimer()
					close(done)
					busy := <-during
					if err != nil {
						b.Fatal(err)
					}
					if want := int64(attempts / 2); res.Tables[slices.IndexFunc(res.Tables, func(t retention.Table) bool {
						return t.Name == "AUD_TASK_ATTEMPTS"
					})].Rows != want {
						b.Fatalf("the purge deleted %+v, want %d attempts", res.Tables, want)
					}
					b.ReportMetric(plan.Seconds(), "dry-run-s")
					b.ReportMetric(elapsed.Seconds(), "purge-s")
					b.ReportMetric(float64(res.Rows()), "rows")
					b.ReportMetric(float64(res.Batches), "batches")
					b.ReportMetric(e2e.Quantile(quiet, 0.99).Seconds()*1000, "quiet-p99-ms")
					b.ReportMetric(e2e.Quantile(busy, 0.99).Seconds()*1000, "during-p99-ms")
					b.ReportMetric(e2e.Quantile(busy, 0.99).Seconds()/e2e.Quantile(quiet, 0.99).Seconds(), "p99-ratio")
					b.ReportMetric(float64(len(busy)), "tasks-during")
				}
			})
		}
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// fillHistory writes the benchmark's history and returns the latency
// pipeline and its task.
func fillHistory(b testing.TB, db *engine.DB, attempts int) [2]int64 {
	b.Helper()
	ctx := acting()
	bl := pipelinetest.New(b, db)
	for p := range benchPipelines {
		code := fmt.Sprintf("B%03d", p)
		bl.Pipeline(code, "FULL")
		for t := range benchTasks {
			bl.Task(code, fmt.Sprintf("t%d", t), "SQL", nil)
		}
	}
	runs := attempts / benchTasks
	now := time.Now()
	old, recent := db.TimeArg(now.Add(-800*retention.Day)), db.TimeArg(now.Add(-retention.Day))
	exec := func(q string, args ...any) {
		b.Helper()
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			_, err := tx.ExecContext(ctx, q, args...)
			return err
		})
		if err != nil {
			b.Fatalf("%s: %v", q, err)
		}
	}
	first := "(SELECT min(PIPELINE_ID) FROM CFG_PIPELINES)"
	for _, half := range []struct {
		from, to int
		at       any
	}{{1, runs / 2, old}, {runs/2 + 1, runs, recent}} {
		exec(`WITH RECURSIVE s(i) AS (SELECT CAST($1 AS INTEGER) UNION ALL SELECT i + 1 FROM s WHERE i < $2)
			INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND, START_DATE, END_DATE, BACKFILL)
			SELECT `+first+` + s.i % `+strconv.Itoa(benchPipelines)+`, 'SUCCESS', 'manual:' || s.i, 'MANUAL', $3, $3, 'N' FROM s`,
			half.from, half.to, half.at)
	}
	// Task runs in the order of their runs, as a task's runs come: the
	// latest task run of a task is of its latest run.
	exec(`INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS, START_DATE, END_DATE)
		SELECT t.TASK_ID, r.PIPELINE_RUN_ID, 'SUCCESS', r.START_DATE, r.END_DATE FROM AUD_PIPELINES_RUN_LOG r JOIN CFG_TASKS t ON t.PIPELINE_ID = r.PIPELINE_ID
		ORDER BY r.PIPELINE_RUN_ID, t.TASK_ID`)
	exec(`INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, ENDED_AT)
		SELECT TASK_RUN_ID, 1, 'SUCCESS', START_DATE, END_DATE FROM AUD_TASK_RUN_LOG ORDER BY TASK_RUN_ID`)
	exec(`INSERT INTO AUD_ACTIONS (STARTED_AT, ENDED_AT, ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS, PIPELINE_RUN_ID, OUTCOME)
		SELECT END_DATE, END_DATE, 'bench', 'HUMAN', 'host', 'run', '{}', PIPELINE_RUN_ID, 'REQUESTED' FROM AUD_PIPELINES_RUN_LOG`)

	// Vacuumed (on PostgreSQL: the rows' visibility known, as autovacuum
	// leaves a table that grew over time) and with the planner's statistics.
	if err := db.Vacuum(ctx, retention.Tables()); err != nil {
		b.Fatal(err)
	}
	if _, err := db.SQL().ExecContext(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	return [2]int64{bl.Pipeline("LATENCY", "FULL"), bl.Task("LATENCY", "t", "SQL", nil)}
}

// taskLatencies runs the Engine DB work of a one-task run of the latency
// pipeline (its run, task run and attempt recorded, then all three ended)
// n times, or until done is closed when n is 0,
// and returns how long each took.
func taskLatencies(b *testing.B, db *engine.DB, latency [2]int64, done <-chan struct{}, n int) []time.Duration {
	ctx := acting()
	var out []time.Duration
	for i := 0; n == 0 || i < n; i++ {
		if done != nil {
			select {
			case <-done:
				return out
			default:
			}
		}
		start := time.Now()
		var run, taskRun, attempt int64
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			if err := tx.QueryRowContext(ctx, `INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND, START_DATE, BACKFILL)
				VALUES ($1, 'IN-PROGRESS', $2, 'MANUAL', $3, 'N') RETURNING PIPELINE_RUN_ID`, latency[0], fmt.Sprintf("latency:%d:%d", start.UnixNano(), i),
				db.TimeArg(start)).Scan(&run); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS, START_DATE)
				VALUES ($1, $2, 'IN-PROGRESS', $3) RETURNING TASK_RUN_ID`, latency[1], run, db.TimeArg(start)).Scan(&taskRun); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, `INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT)
				VALUES ($1, 1, 'RUNNING', $2) RETURNING ATTEMPT_ID`, taskRun, db.TimeArg(start)).Scan(&attempt)
		})
		if err == nil {
			err = db.Tx(ctx, func(tx *engine.Tx) error {
				if _, err := tx.ExecContext(ctx, "UPDATE AUD_TASK_ATTEMPTS SET STATUS = 'SUCCESS', ENDED_AT = $2 WHERE ATTEMPT_ID = $1",
					attempt, db.TimeArg(time.Now())); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, "UPDATE AUD_TASK_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = $2 WHERE TASK_RUN_ID = $1",
					taskRun, db.TimeArg(time.Now())); err != nil {
					return err
				}
				_, err := tx.ExecContext(ctx, "UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = $2 WHERE PIPELINE_RUN_ID = $1",
					run, db.TimeArg(time.Now()))
				return err
			})
		}
		if err != nil {
			b.Error(err)
			return out
		}
		out = append(out, time.Since(start))
	}
	return out
}
