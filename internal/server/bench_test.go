package server_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/schedule"
	"github.com/etl-craft/etl-craft/internal/server"
)

// benchPipelines is how many pipelines share the benchmark's minute.
const benchPipelines = 1000

// pgBlock is the dev profile of a PostgreSQL database in craft-connector.yml,
// its password in the environment variable secret.
func pgBlock(b *testing.B, secret string) string {
	raw := enginetest.NewPGDatabase(b)
	u, _ := url.Parse(raw)
	pw, _ := u.User.Password()
	b.Setenv(secret, pw)
	return fmt.Sprintf("    jdbc_url: jdbc:postgresql://%s%s?sslmode=disable\n    schema: public\n    auth_mode: password\n    user: %s\n    secret: %s\n",
		u.Host, u.Path, u.User.Username(), secret)
}

// BenchmarkThousandPipelinesOnOneMinute runs a server over 1,000 pipelines
// of one trivial SQL task each, all scheduled every minute, and reports the
// delay from their first common tick to each run's first task start (p50,
// p99, max), then the server's CPU time over an idle minute once their
// schedules no longer tick. bench/server/run.sh runs it.
func BenchmarkThousandPipelinesOnOneMinute(b *testing.B) {
	for _, kind := range []string{"sqlite+duckdb", "postgres+postgres"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				benchServer(b, kind)
			}
		})
	}
}

func benchServer(b *testing.B, kind string) {
	dir := b.TempDir()
	engineBlock := "    jdbc_url: jdbc:sqlite:state/engine.db\n    schema: main\n"
	warehouse := "  Name: DuckDB\n  dev:\n    jdbc_url: jdbc:duckdb:warehouse.duckdb\n    schema: main\n"
	schema := "main"
	if kind == "postgres+postgres" {
		engineBlock = pgBlock(b, "BENCH_ENGINE_SECRET")
		warehouse = "  Name: Postgres\n  dev:\n" + pgBlock(b, "BENCH_WAREHOUSE_SECRET")
		schema = "public"
	}
	yml := "Secrets:\n  Source_type: environment\n  Profile: dev\n\nOrchestration:\n  Mode: local\n  Max_parallel_tasks: 8\n\n" +
		"Engine:\n  dev:\n" + engineBlock + "\nWarehouse:\n" + warehouse
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(yml), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, config.FileName))
	if err != nil {
		b.Fatal(err)
	}
	ctx := actor.With(context.Background(), actor.Actor{Name: "bench@host", Kind: actor.Human})
	p, err := project.Open(ctx, cfg, project.ForServer())
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	mdir, _ := cfg.MigrationsDir("")
	if _, err := (&migrate.Runner{DB: p.DB, ProjectDir: mdir}).Setup(ctx); err != nil {
		b.Fatal(err)
	}
	registerScheduled(b, ctx, p.DB, schema)

	b.ResetTimer()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- server.Run(sctx, server.Options{Project: p, Version: "bench"}) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()

	// The first tick after the pipelines were created is their common one.
	tick := schedule.RunKey(time.Now().UTC().Truncate(time.Minute).Add(time.Minute))
	waitCount(b, p.DB, benchPipelines, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE RUN_KEY = $1 AND STATUS = 'SUCCESS'", tick)
	delays := firstStarts(b, p.DB, tick)
	if len(delays) != benchPipelines {
		b.Fatalf("%d runs of %s started a task", len(delays), tick)
	}
	slices.Sort(delays)
	at := func(q float64) float64 { return delays[int(q*float64(len(delays)-1))].Seconds() }
	b.ReportMetric(at(0.5), "p50-s")
	b.ReportMetric(at(0.99), "p99-s")
	b.ReportMetric(delays[len(delays)-1].Seconds(), "max-s")

	// Idle: the schedules move to 1 January, and the server has nothing to
	// do for a minute but look.
	if err := p.DB.Tx(ctx, func(tx *engine.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 0 1 1 *'")
		return err
	}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(5 * time.Second)
	before := cpuTime(b)
	time.Sleep(time.Minute)
	b.ReportMetric(100*(cpuTime(b)-before).Seconds()/60, "idle-cpu-%")
}

// registerScheduled registers the pipelines P0000…, each of one
// CREATE_TABLE task of a one-row SELECT, every minute.
func registerScheduled(b *testing.B, ctx context.Context, db *engine.DB, schema string) {
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		for i := range benchPipelines {
			var pid, tid int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, RUN_SCHEDULE)
				VALUES ($1, $1, 'FULL', '* * * * *') RETURNING PIPELINE_ID`, fmt.Sprintf("P%04d", i)).Scan(&pid); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, `INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
				VALUES ('load', 'ETL', $1, 'SQL') RETURNING TASK_ID`, pid).Scan(&tid); err != nil {
				return err
			}
			for name, value := range map[string]string{"SQL_ACTION": "CREATE_TABLE",
				"TARGET_OBJECT": fmt.Sprintf("%s.b_%04d", schema, i), "SOURCE_SQL": fmt.Sprintf("SELECT %d AS id", i)} {
				if _, err := tx.ExecContext(ctx, "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES ($1, $2, $3)",
					tid, name, value); err != nil {
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
func waitCount(b *testing.B, db *engine.DB, want int, query string, args ...any) {
	deadline := time.Now().Add(10 * time.Minute)
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
		time.Sleep(200 * time.Millisecond)
	}
}

// firstStarts returns, for each run of the tick, the delay from the tick to
// its first attempt's start.
func firstStarts(b *testing.B, db *engine.DB, key string) []time.Duration {
	at, _ := schedule.ParseRunKey(key)
	rows, err := db.QueryContext(context.Background(), `SELECT min(a.STARTED_AT) FROM AUD_PIPELINES_RUN_LOG r
		JOIN AUD_TASK_RUN_LOG t ON t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID JOIN AUD_TASK_ATTEMPTS a ON a.TASK_RUN_ID = t.TASK_RUN_ID
		WHERE r.RUN_KEY = $1 GROUP BY r.PIPELINE_RUN_ID`, key)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var out []time.Duration
	for rows.Next() {
		var started engine.Time
		if err := rows.Scan(&started); err != nil {
			b.Fatal(err)
		}
		out = append(out, started.Time.Sub(at))
	}
	return out
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
