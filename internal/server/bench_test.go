package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/schedule"
	"github.com/etl-craft/etl-craft/internal/server"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// benchPipelines is how many pipelines share the benchmark's tick.
const benchPipelines = 1000

// benchPairs are the Engine DB and warehouse pairs the server benchmarks
// run on.
var benchPairs = []e2e.Pair{e2e.SQLiteDuckDB, e2e.PostgresPostgres}

// benchCloning is the Cloning section of the benchmarks' cloning kind: every
// table, so that each clone copies the runs that just ended.
const benchCloning = "\nCloning:\n  Enabled: true\n  Scope: all\n"

// BenchmarkThousandPipelinesOnOneMinute runs a server (Max_parallel_tasks
// 8) over 1,000 pipelines of one one-row CREATE_TABLE task each, all
// scheduled every minute, and measures their first common tick against
// the same 1,000 statements run directly on the warehouse, one after the
// other, in the same iteration. Each pair runs once without cloning
// (plain) and once with it (cloning, scope all). It reports, from the
// Engine DB's own timestamps:
//
//	direct-s           the 1,000 statements run directly
//	end-s, ratio       the tick to the last run's END_DATE; end-s / direct-s
//	first-p50-s, first-p99-s
//	                   the tick to each run's first attempt STARTED_AT
//	admit-p50-s, admit-p99-s
//	                   admission latency: the tick to each run's START_DATE
//	dispatch-p50-ms, dispatch-p99-ms
//	                   dispatch latency: an attempt ready (its run admitted)
//	                   with a worker of the 8 free (the attempts' ENDED_AT)
//	                   to its STARTED_AT
//	tx/run, stmts/run, reads/run
//	                   Engine DB write transactions, the statements in them,
//	                   and the reads outside them, from the tick to the last
//	                   run's end, per run (engine.DB.Counts)
//	cpu-ms/run, direct-cpu-ms/run
//	                   this process's CPU time from the tick to the last
//	                   run's end, and over the direct statements, per run:
//	                   steadier than wall times on a shared machine (the
//	                   PostgreSQL servers' own CPU is not counted)
//	mirror-s           with cloning: the tick to the clone's copy of the
//	                   run log showing every run ended
//
// bench/server/run.sh runs it.
func BenchmarkThousandPipelinesOnOneMinute(b *testing.B) {
	for _, pair := range benchPairs {
		b.Run(pair.String(), func(b *testing.B) {
			for _, cloning := range []bool{false, true} {
				name := "plain"
				if cloning {
					name = "cloning"
				}
				b.Run(name, func(b *testing.B) {
					for b.Loop() {
						benchTick(b, pair, cloning)
					}
				})
			}
		})
	}
}

// benchTick is one iteration of BenchmarkThousandPipelinesOnOneMinute.
func benchTick(b *testing.B, pair e2e.Pair, cloning bool) {
	extra := ""
	if cloning {
		extra = benchCloning
	}
	p := openBenchProject(b, pair, extra)
	ctx := benchActor()
	directCPU := e2e.CPUTime(b)
	direct := directly(b, p)
	directCPU = e2e.CPUTime(b) - directCPU

	// The pipelines are registered early in a minute, so that the server
	// is running before their first tick, the next minute.
	if s := time.Now().Second(); s > 30 {
		time.Sleep(time.Duration(61-s) * time.Second)
	}
	registerPipelines(b, ctx, p.DB, benchPipelines, "* * * * *")
	at := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	tick := schedule.RunKey(at)
	stop := startServer(b, ctx, p)
	defer stop()
	if time.Until(at) < 5*time.Second {
		b.Fatalf("the pipelines were registered too late in the minute: %s left before their tick", time.Until(at))
	}
	time.Sleep(time.Until(at))
	before, cpu := p.DB.Counts(), e2e.CPUTime(b)
	waitCount(b, p.DB, benchPipelines, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE RUN_KEY = $1 AND STATUS = $2",
		tick, records.RunSuccess)
	counts, cpu := p.DB.Counts().Sub(before), e2e.CPUTime(b)-cpu
	var mirror time.Duration
	if cloning {
		mirror = waitMirror(b, p, tick, at)
	}
	b.StopTimer()
	m := tickTimes(b, p.DB, tick, at)
	b.ReportMetric(direct.Seconds(), "direct-s")
	b.ReportMetric(m.end.Seconds(), "end-s")
	b.ReportMetric(m.end.Seconds()/direct.Seconds(), "ratio")
	b.ReportMetric(e2e.Quantile(m.first, 0.5).Seconds(), "first-p50-s")
	b.ReportMetric(e2e.Quantile(m.first, 0.99).Seconds(), "first-p99-s")
	b.ReportMetric(e2e.Quantile(m.admit, 0.5).Seconds(), "admit-p50-s")
	b.ReportMetric(e2e.Quantile(m.admit, 0.99).Seconds(), "admit-p99-s")
	b.ReportMetric(ms(e2e.Quantile(m.dispatch, 0.5)), "dispatch-p50-ms")
	b.ReportMetric(ms(e2e.Quantile(m.dispatch, 0.99)), "dispatch-p99-ms")
	b.ReportMetric(float64(counts.Transactions)/benchPipelines, "tx/run")
	b.ReportMetric(float64(counts.Statements)/benchPipelines, "stmts/run")
	b.ReportMetric(float64(counts.Reads)/benchPipelines, "reads/run")
	b.ReportMetric(ms(cpu)/benchPipelines, "cpu-ms/run")
	b.ReportMetric(ms(directCPU)/benchPipelines, "direct-cpu-ms/run")
	if cloning {
		b.ReportMetric(mirror.Seconds(), "mirror-s")
	}
	b.Logf("%s: attempt p50 %s p99 %s; admission to first start p50 %s p99 %s; last attempt end to run end p50 %s p99 %s",
		tick, e2e.Quantile(m.attempt, 0.5), e2e.Quantile(m.attempt, 0.99), e2e.Quantile(m.wait, 0.5), e2e.Quantile(m.wait, 0.99), e2e.Quantile(m.close, 0.5), e2e.Quantile(m.close, 0.99))
	b.StartTimer()
}

// openBenchProject writes a project on fresh databases of the pair with
// Max_parallel_tasks 8 and opens it as the server opens it, its Engine DB
// set up.
func openBenchProject(b *testing.B, pair e2e.Pair, extra string) *project.Project {
	ep := e2e.New(b, pair, extra)
	ep.Orchestration("  Max_parallel_tasks: 8\n")
	for _, kv := range ep.Env {
		name, value, _ := strings.Cut(kv, "=")
		b.Setenv(name, value)
	}
	cfg, err := config.Load(filepath.Join(ep.Dir, config.FileName))
	if err != nil {
		b.Fatal(err)
	}
	ctx := benchActor()
	p, err := project.Open(ctx, cfg, project.ForServer())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	mdir, _ := cfg.MigrationsDir("")
	if _, err := (&migrate.Runner{DB: p.DB, ProjectDir: mdir}).Setup(ctx); err != nil {
		b.Fatal(err)
	}
	return p
}

// benchActor is the context of the benchmarks' own writes.
func benchActor() context.Context {
	return actor.With(context.Background(), actor.Actor{Name: "bench@host", Kind: actor.Human})
}

// startServer runs the server in this process until the returned function
// stops it.
func startServer(b *testing.B, ctx context.Context, p *project.Project) func() {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- server.Run(sctx, server.Options{Project: p, Version: "bench"}) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}
}

// benchTable is the table pipeline i's task creates, and benchSelect its
// SELECT.
func benchTable(i int) string  { return fmt.Sprintf("%s.b_%05d", e2e.Schema, i) }
func benchSelect(i int) string { return fmt.Sprintf("SELECT %d AS id", i) }

// benchPipeline is pipeline i's code, and directTable the table the direct
// run of its statement creates.
func benchPipeline(i int) string { return fmt.Sprintf("P%05d", i) }
func directTable(i int) string   { return fmt.Sprintf("%s.d_%05d", e2e.Schema, i) }

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// directly runs the benchmark's 1,000 statements on the warehouse one after
// the other, each replacing its table in a transaction of its own as a
// person would by hand, and returns the time they took. Their tables are
// dropped afterwards, so the runs start from the same warehouse.
func directly(b *testing.B, p *project.Project) time.Duration {
	ctx := context.Background()
	w, release, err := p.Warehouse.Acquire(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	start := time.Now()
	for i := range benchPipelines {
		tx, err := w.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		for _, s := range []string{"DROP TABLE IF EXISTS " + directTable(i), "CREATE TABLE " + directTable(i) + " AS " + benchSelect(i)} {
			if _, err := tx.Exec(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	tx, err := w.Begin(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for i := range benchPipelines {
		if _, err := tx.Exec(ctx, "DROP TABLE "+directTable(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return took
}

// registerPipelines registers n pipelines P00000…, each of one
// CREATE_TABLE task of a one-row SELECT, on the schedule (none when
// empty), in one transaction.
func registerPipelines(b *testing.B, ctx context.Context, db *engine.DB, n int, runSchedule string) {
	var sched any
	if runSchedule != "" {
		sched = runSchedule
	}
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		for i := range n {
			var pid, tid int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, RUN_SCHEDULE)
				VALUES ($1, $1, 'FULL', $2) RETURNING PIPELINE_ID`, benchPipeline(i), sched).Scan(&pid); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
				VALUES ('load', 'ETL', $1, 'SQL') RETURNING TASK_ID`, pid).Scan(&tid); err != nil {
				return err
			}
			for _, nv := range [][2]string{{"SQL_ACTION", "CREATE_TABLE"}, {"TARGET_OBJECT", benchTable(i)}, {"SOURCE_SQL", benchSelect(i)}} {
				if _, err := tx.ExecContext(ctx, "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES ($1, $2, $3)",
					tid, nv[0], nv[1]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// waitCount polls until the count query returns want.
func waitCount(b *testing.B, db e2e.Querier, want int, query string, args ...any) {
	deadline := time.Now().Add(15 * time.Minute)
	for {
		var n int
		if err := db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
			b.Fatal(err)
		}
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("gave up at %d of %d: %s", n, want, query)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitMirror waits until the clone's copy of the run log in the warehouse
// shows every run of the tick ended, and returns how long after the tick
// at that was. The copy may not exist before the first clone commits.
func waitMirror(b *testing.B, p *project.Project, tick string, at time.Time) time.Duration {
	ctx := context.Background()
	deadline := time.Now().Add(15 * time.Minute)
	for {
		n, err := mirroredRuns(ctx, p, tick)
		if n == benchPipelines {
			return time.Since(at)
		}
		if time.Now().After(deadline) {
			b.Fatalf("the mirror of the run log shows %d of %d runs ended (%v)", n, benchPipelines, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mirroredRuns counts the tick's SUCCESS runs in the clone's copy of the
// run log.
func mirroredRuns(ctx context.Context, p *project.Project, tick string) (int, error) {
	w, release, err := p.Warehouse.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	tx, err := w.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	// The copy keeps the Engine DB's upper-case names, quoted.
	log := warehouse.Qualify(w, warehouse.Table{Schema: e2e.Schema, Name: "AUD_PIPELINES_RUN_LOG"})
	rows, err := tx.Query(ctx, `SELECT count(*) FROM `+log+` WHERE "RUN_KEY" = $1 AND "STATUS" = $2`, tick, records.RunSuccess)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := rows.Scan(&n); err != nil {
			return 0, err
		}
	}
	return n, rows.Err()
}

// tickMeasures are the durations of a tick's runs, each sorted.
type tickMeasures struct {
	// end is from the tick to the last run's END_DATE.
	end time.Duration
	// first, admit: from the tick to each run's first attempt start and
	// to its admission.
	first, admit []time.Duration
	// dispatch: from each attempt ready with a worker free to its start.
	dispatch []time.Duration
	// attempt: each attempt's start to its end; wait: each run's
	// admission to its attempt's start; close: each attempt's end to its
	// run's end.
	attempt, wait, close []time.Duration
}

// tickTimes reads the timestamps of the tick's runs and their attempts.
// An attempt is ready with a worker free once its run was admitted (one
// task a run) and fewer than 8 attempts run: the k-th attempt to start,
// k ≥ 8, had a worker once the (k-7)-th attempt to end had ended.
func tickTimes(b *testing.B, db *engine.DB, tick string, at time.Time) tickMeasures {
	rows, err := db.QueryContext(context.Background(), `SELECT r.START_DATE, r.END_DATE, a.STARTED_AT, a.ENDED_AT
		FROM AUD_PIPELINES_RUN_LOG r JOIN AUD_TASK_RUN_LOG t ON t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID
		JOIN AUD_TASK_ATTEMPTS a ON a.TASK_RUN_ID = t.TASK_RUN_ID WHERE r.RUN_KEY = $1 ORDER BY a.STARTED_AT`, tick)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	type attemptTimes struct{ admitted, started, ended, runEnded time.Time }
	var all []attemptTimes
	for rows.Next() {
		var a, e, s, f engine.Time
		if err := rows.Scan(&a, &f, &s, &e); err != nil {
			b.Fatal(err)
		}
		all = append(all, attemptTimes{a.Time, s.Time, e.Time, f.Time})
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	if len(all) != benchPipelines {
		b.Fatalf("%d attempts ran for the %d runs of %s", len(all), benchPipelines, tick)
	}
	var m tickMeasures
	ends := make([]time.Time, len(all))
	for i, a := range all {
		ends[i] = a.ended
	}
	slices.SortFunc(ends, func(x, y time.Time) int { return x.Compare(y) })
	for k, a := range all {
		ready := a.admitted
		if k >= 8 && ends[k-8].After(ready) {
			ready = ends[k-8]
		}
		m.dispatch = append(m.dispatch, max(a.started.Sub(ready), 0))
		m.first = append(m.first, a.started.Sub(at))
		m.admit = append(m.admit, a.admitted.Sub(at))
		m.attempt = append(m.attempt, a.ended.Sub(a.started))
		m.wait = append(m.wait, a.started.Sub(a.admitted))
		m.close = append(m.close, a.runEnded.Sub(a.ended))
		m.end = max(m.end, a.runEnded.Sub(at))
	}
	return m
}

// BenchmarkTenThousandPipelinesIdle starts `etl-craft server` (the built
// binary, a process of its own) over 10,000 active pipelines of one task
// each, none due before next year, and reports:
//
//	idle-cpu-%   its CPU time (user and system) over an idle minute
//	             (ETL_CRAFT_BENCH_IDLE, default 1m), as a share of one core
//	rss-MB       its resident memory at the end of that minute
//	change-s     the longest of five schedule changes, from the commit
//	             that makes a pipeline due at once to the run its tick
//	             recorded (the NEW_RUN intervention's REQUESTED_AT)
//
// bench/server/run.sh runs it.
func BenchmarkTenThousandPipelinesIdle(b *testing.B) {
	idle := time.Minute
	if v := os.Getenv("ETL_CRAFT_BENCH_IDLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("ETL_CRAFT_BENCH_IDLE=%q is not a duration such as 1m", v)
		}
		idle = d
	}
	for _, pair := range benchPairs {
		b.Run(pair.String(), func(b *testing.B) {
			for b.Loop() {
				benchIdle(b, pair, idle)
			}
		})
	}
}

// idlePipelines is how many pipelines the idle server has.
const idlePipelines = 10000

func benchIdle(b *testing.B, pair e2e.Pair, idle time.Duration) {
	p := e2e.New(b, pair, "")
	p.OK("init-db")
	db := p.DB()
	ctx := benchActor()
	registerPipelines(b, ctx, db, idlePipelines, "0 0 1 1 *")
	s := p.StartServer()
	time.Sleep(10 * time.Second) // the first passes read everything
	cpu := s.CPUTime()
	time.Sleep(idle)
	cpu = s.CPUTime() - cpu
	rss := s.ResidentKiB()
	var longest time.Duration
	for i := range 5 {
		// A schedule starting yesterday makes the latest minute due at once.
		code := benchPipeline(i * (idlePipelines / 5))
		yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
		if err := db.Tx(ctx, func(tx *engine.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '* * * * *', SCHEDULE_START_DATE = $1 WHERE PIPELINE_CODE = $2",
				yesterday, code)
			return err
		}); err != nil {
			b.Fatal(err)
		}
		changed := time.Now()
		q := `SELECT count(*) FROM AUD_RUN_INTERVENTIONS i JOIN CFG_PIPELINES p ON p.PIPELINE_ID = i.PIPELINE_ID
			WHERE p.PIPELINE_CODE = $1 AND i.ACTION = 'NEW_RUN' AND i.TO_STATUS = $2`
		waitCount(b, db, 1, q, code, records.RunQueued)
		var recorded engine.Time
		if err := db.QueryRowContext(ctx, `SELECT i.REQUESTED_AT FROM AUD_RUN_INTERVENTIONS i JOIN CFG_PIPELINES p ON p.PIPELINE_ID = i.PIPELINE_ID
			WHERE p.PIPELINE_CODE = $1 AND i.ACTION = 'NEW_RUN' AND i.TO_STATUS = $2`, code, records.RunQueued).Scan(&recorded); err != nil {
			b.Fatal(err)
		}
		longest = max(longest, recorded.Time.Sub(changed))
	}
	if code := s.Stop(); code != 0 {
		b.Fatalf("the server exited %d:\n%s", code, s.Stderr())
	}
	b.ReportMetric(100*cpu.Seconds()/idle.Seconds(), "idle-cpu-%")
	b.ReportMetric(float64(rss)/1024, "rss-MB")
	b.ReportMetric(longest.Seconds(), "change-s")
}
