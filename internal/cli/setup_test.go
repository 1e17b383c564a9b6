package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestSetupCreatesThenMigratesThenHasNothingToDo(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		r := p.Run(nil, "doctor")
		if r.Code != 1 || !strings.Contains(r.Stdout, "[FAIL] Engine DB tables: the Engine DB has no etl-craft tables yet: run `etl-craft setup`") ||
			!strings.HasSuffix(lastLine(r.Stdout), "1 failed") {
			t.Fatalf("doctor on a new project: %d\n%s", r.Code, r.Stdout)
		}
		if r := p.OK("setup"); !strings.Contains(r.Stdout, "setup: created the Engine DB tables\n") {
			t.Fatalf("setup:\n%s", r.Stdout)
		}
		if r := p.OK("setup"); !strings.HasSuffix(r.Stdout, "setup: the Engine DB is already up to date\n") {
			t.Fatalf("second setup:\n%s", r.Stdout)
		}
		if r := p.OK("doctor"); !strings.Contains(r.Stdout, "[OK  ] Engine DB migrations: up to date") || !strings.HasSuffix(lastLine(r.Stdout), "0 failed") {
			t.Fatalf("doctor after setup:\n%s", r.Stdout)
		}
		p.Write("migrations/0001_owner.sql", "CREATE TABLE project_owner (name VARCHAR);\n")
		r = p.Run(nil, "doctor")
		if r.Code != 1 || !strings.Contains(r.Stdout, "[FAIL] Engine DB migrations: 1 pending: project/0001_owner.sql; run `etl-craft migrate`") {
			t.Fatalf("doctor with a pending migration:\n%s", r.Stdout)
		}
		if r := p.OK("setup"); !strings.HasSuffix(r.Stdout, "setup: applied 0001_owner.sql\n") {
			t.Fatalf("setup with a pending migration:\n%s", r.Stdout)
		}
		p.OK("doctor")
		db := p.DB()
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'setup'"); n != 3 {
			t.Fatalf("%d setup actions recorded, want 3", n)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'doctor'"); n != 0 {
			t.Fatalf("doctor recorded %d actions", n)
		}
	})
}

func TestSetupWithAFailingCheckChangesNothing(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.EditConfig("jdbc:duckdb:warehouse.duckdb", "\"jdbc:duckdb:\"")
		r := p.Run(nil, "setup")
		if r.Code != 1 || !strings.Contains(r.Stdout, "[FAIL] Warehouse: an in-memory DuckDB warehouse") ||
			!strings.HasSuffix(r.Stdout, "setup: nothing changed; fix the failed check(s) and run setup again\n") {
			t.Fatalf("setup: %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if kind == engine.SQLite {
			if _, err := os.Stat(p.Engine.Path); err == nil {
				t.Fatal("setup created the SQLite file although a check failed")
			}
			return
		}
		if tables, _ := p.DB().Tables(context.Background()); len(tables) != 0 {
			t.Fatalf("setup created %v although a check failed", tables)
		}
	})
}

func TestQuickstartInAnEmptyFolder(t *testing.T) {
	t.Parallel()
	p := &e2e.Project{T: t, Dir: t.TempDir()}
	r := p.OK("quickstart")
	dir := filepath.Join(p.Dir, "etl-craft-quickstart")
	if !strings.Contains(r.Stdout, "quickstart: wrote the example project in "+dir) {
		t.Fatalf("stdout:\n%s", r.Stdout)
	}
	p.Engine = engine.Options{Kind: engine.SQLite, Path: filepath.Join(dir, "etl-craft-engine.db")}
	db := p.DB()
	if n := e2e.Count(t, db, "SELECT count(*) FROM CFG_TASKS t JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID WHERE p.PIPELINE_CODE = 'QUICKSTART_SALES'"); n != 7 {
		t.Fatalf("%d example tasks", n)
	}
	if n := e2e.Count(t, db, "SELECT count(*) FROM CFG_TASK_DEPENDENCY"); n != 7 {
		t.Fatalf("%d example dependencies", n)
	}
	if n := e2e.Count(t, db, "SELECT count(*) FROM CFG_PIPELINES WHERE RUN_SCHEDULE = '0 6 * * *' AND SCHEDULE_TIMEZONE = 'UTC'"); n != 1 {
		t.Fatalf("%d scheduled example pipelines", n)
	}
	for _, want := range []string{"QUICKSTART_SALES: pipeline_run_id=1 SUCCESS\n", "large_order\t103\tREPORT\n",
		"CFG_PIPELINES\twarehouse.main.CFG_PIPELINES\t1\tcreated\n", "AUD_PIPELINES_RUN_LOG\twarehouse.main.AUD_PIPELINES_RUN_LOG\t1\tcreated\n",
		"AUD_TASK_OFFSET_TRACKER\twarehouse.main.AUD_TASK_OFFSET_TRACKER\t1\tcreated\n",
		"PIPELINE_RUN_ID\tSTATUS\tRUN_DATE",
		"The ingestion script ingestion_scripts/load_exchange_rates.py (task load_exchange_rates):\n" +
			"  loaded 6 rate(s) from data/exchange_rates.csv into main.exchange_rates;\n" +
			"  its offset (AUD_TASK_OFFSET_TRACKER), where the next run starts reading, is now TEXT 2026-01-07.\n",
		"QUICKSTART_SALES: RUN_SCHEDULE 0 6 * * *, next tick " + nextSixUTC(time.Now()) + ". To run it on schedule (docs/server.md):\n" +
			"  etl-craft --config " + filepath.Join(dir, "craft-connector.yml") + " server\n" +
			"and watch it at its console, http://127.0.0.1:8730/ (docs/console.md), signing in with a token from\n" +
			"  etl-craft --config " + filepath.Join(dir, "craft-connector.yml") + " token create --name me --role operator\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("quickstart output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stderr, "level=INFO") {
		t.Fatalf("quickstart logged at INFO without --log-level:\n%s", r.Stderr)
	}
	wh := &e2e.Project{T: t, Dir: dir}
	rates := "SELECT rate_date || ' ' || currency || ' ' || per_usd FROM main.exchange_rates ORDER BY 1"
	if got := wh.WarehouseRows(rates); len(got) != 6 || got[0] != "2026-01-05 EUR 0.9312000000" || got[5] != "2026-01-07 GBP 0.7974000000" {
		t.Fatalf("main.exchange_rates: %q", got)
	}
	eur := "SELECT order_date || ' ' || revenue || ' ' || revenue_eur FROM main.daily_revenue_eur ORDER BY 1"
	if got := wh.WarehouseRows(eur); !slices.Equal(got, []string{"2026-01-05 200.50 186.71", "2026-01-06 352.25 327.13"}) {
		t.Fatalf("main.daily_revenue_eur: %q", got)
	}

	r = p.OK("quickstart")
	if !strings.Contains(r.Stdout, "quickstart: reusing the project in "+dir) || !strings.Contains(r.Stdout, "pipeline_run_id=2 SUCCESS") ||
		!strings.Contains(r.Stdout, "AUD_PIPELINES_RUN_LOG\twarehouse.main.AUD_PIPELINES_RUN_LOG\t2\n") ||
		!strings.Contains(r.Stdout, "  found no new rates in data/exchange_rates.csv; its offset (AUD_TASK_OFFSET_TRACKER) stays TEXT 2026-01-07.\n") {
		t.Fatalf("second quickstart:\n%s", r.Stdout)
	}
	if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'"); n != 2 {
		t.Fatalf("%d successful runs", n)
	}
	if got := wh.WarehouseRows(rates); len(got) != 6 {
		t.Fatalf("the second run loaded the rates again: %q", got)
	}

	// A rate added to the file is loaded by the next run, and moves the offset.
	csv := filepath.Join(dir, "data", "exchange_rates.csv")
	b, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(csv, append(b, "2026-01-08,EUR,0.9275\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	r = p.OK("quickstart")
	if !strings.Contains(r.Stdout, "  loaded 1 rate(s) from data/exchange_rates.csv into main.exchange_rates;\n") ||
		!strings.Contains(r.Stdout, "is now TEXT 2026-01-08.\n") {
		t.Fatalf("third quickstart:\n%s", r.Stdout)
	}
}

// nextSixUTC is the first 06:00 UTC after now: the quickstart pipeline's
// next tick.
func nextSixUTC(now time.Time) string {
	next := time.Date(now.Year(), now.Month(), now.Day(), 6, 0, 0, 0, time.UTC)
	if !next.After(now) {
		next = next.AddDate(0, 0, 1)
	}
	return next.Format("2006-01-02 15:04:05-07:00")
}

// TestQuickstartWithoutPython: without python3 the quickstart's run fails
// its script task with an error naming python3 and says so; once python3 is
// found again, running the quickstart again succeeds.
func TestQuickstartWithoutPython(t *testing.T) {
	t.Parallel()
	p := &e2e.Project{T: t, Dir: t.TempDir()}
	r := p.Run([]string{"PATH=" + t.TempDir()}, "quickstart")
	if r.Code != 1 || !strings.Contains(r.Stdout, "QUICKSTART_SALES: pipeline_run_id=1 FAILED — 1 task(s) did not succeed: load_exchange_rates (FAILED)") ||
		!strings.Contains(r.Stdout, "\nload_exchange_rates: the Python interpreter python3 cannot be found: install python3, or set Orchestration.Python\n") ||
		!strings.Contains(r.Stdout, "quickstart: the run failed; fix the cause, run quickstart again, or see\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	r = p.OK("quickstart")
	if !strings.Contains(r.Stdout, "QUICKSTART_SALES: pipeline_run_id=2 SUCCESS\n") || !strings.Contains(r.Stdout, "  loaded 6 rate(s)") {
		t.Fatalf("quickstart with python3:\n%s", r.Stdout)
	}
}
