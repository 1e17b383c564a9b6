package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
)

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestSetupCreatesThenMigratesThenHasNothingToDo(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		r := p.run(nil, "doctor")
		if r.code != 1 || !strings.Contains(r.stdout, "[FAIL] Engine DB tables: the Engine DB has no etl-craft tables yet: run `etl-craft setup`") ||
			!strings.HasSuffix(lastLine(r.stdout), "1 failed") {
			t.Fatalf("doctor on a new project: %d\n%s", r.code, r.stdout)
		}
		if r := p.ok("setup"); !strings.Contains(r.stdout, "setup: created the Engine DB tables\n") {
			t.Fatalf("setup:\n%s", r.stdout)
		}
		if r := p.ok("setup"); !strings.HasSuffix(r.stdout, "setup: the Engine DB is already up to date\n") {
			t.Fatalf("second setup:\n%s", r.stdout)
		}
		if r := p.ok("doctor"); !strings.Contains(r.stdout, "[OK  ] Engine DB migrations: up to date") || !strings.HasSuffix(lastLine(r.stdout), "0 failed") {
			t.Fatalf("doctor after setup:\n%s", r.stdout)
		}
		p.write("migrations/0001_owner.sql", "CREATE TABLE project_owner (name VARCHAR);\n")
		r = p.run(nil, "doctor")
		if r.code != 1 || !strings.Contains(r.stdout, "[FAIL] Engine DB migrations: 1 pending: project/0001_owner.sql; run `etl-craft migrate`") {
			t.Fatalf("doctor with a pending migration:\n%s", r.stdout)
		}
		if r := p.ok("setup"); !strings.HasSuffix(r.stdout, "setup: applied 0001_owner.sql\n") {
			t.Fatalf("setup with a pending migration:\n%s", r.stdout)
		}
		p.ok("doctor")
		db := p.db()
		if n := count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'setup'"); n != 3 {
			t.Fatalf("%d setup actions recorded, want 3", n)
		}
		if n := count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'doctor'"); n != 0 {
			t.Fatalf("doctor recorded %d actions", n)
		}
	})
}

func TestSetupWithAFailingCheckChangesNothing(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		yml, _ := os.ReadFile(filepath.Join(p.dir, "craft-connector.yml"))
		p.write("craft-connector.yml", strings.Replace(string(yml), "jdbc:duckdb:warehouse.duckdb", "\"jdbc:duckdb:\"", 1))
		r := p.run(nil, "setup")
		if r.code != 1 || !strings.Contains(r.stdout, "[FAIL] Warehouse: an in-memory DuckDB warehouse") ||
			!strings.HasSuffix(r.stdout, "setup: nothing changed; fix the failed check(s) and run setup again\n") {
			t.Fatalf("setup: %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if kind == engine.SQLite {
			if _, err := os.Stat(p.opts.Path); err == nil {
				t.Fatal("setup created the SQLite file although a check failed")
			}
			return
		}
		if tables, _ := p.db().Tables(context.Background()); len(tables) != 0 {
			t.Fatalf("setup created %v although a check failed", tables)
		}
	})
}

func TestQuickstartInAnEmptyFolder(t *testing.T) {
	t.Parallel()
	p := &project{t: t, dir: t.TempDir()}
	r := p.ok("quickstart")
	dir := filepath.Join(p.dir, "etl-craft-quickstart")
	if !strings.Contains(r.stdout, "quickstart: wrote the example project in "+dir) {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	p.opts = engine.Options{Kind: engine.SQLite, Path: filepath.Join(dir, "etl-craft-engine.db")}
	db := p.db()
	if n := count(t, db, "SELECT count(*) FROM CFG_TASKS t JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID WHERE p.PIPELINE_CODE = 'QUICKSTART_SALES'"); n != 5 {
		t.Fatalf("%d example tasks", n)
	}
	if n := count(t, db, "SELECT count(*) FROM CFG_TASK_DEPENDENCY"); n != 5 {
		t.Fatalf("%d example dependencies", n)
	}
	for _, want := range []string{"QUICKSTART_SALES: pipeline_run_id=1 SUCCESS\n", "large_order\t103\tREPORT\n",
		"CFG_PIPELINES\twarehouse.main.CFG_PIPELINES\t1\tcreated\n", "AUD_PIPELINES_RUN_LOG\twarehouse.main.AUD_PIPELINES_RUN_LOG\t1\tcreated\n",
		"PIPELINE_RUN_ID\tSTATUS\tRUN_DATE"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("quickstart output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stderr, "level=INFO") {
		t.Fatalf("quickstart logged at INFO without --log-level:\n%s", r.stderr)
	}
	r = p.ok("quickstart")
	if !strings.Contains(r.stdout, "quickstart: reusing the project in "+dir) || !strings.Contains(r.stdout, "pipeline_run_id=2 SUCCESS") ||
		!strings.Contains(r.stdout, "AUD_PIPELINES_RUN_LOG\twarehouse.main.AUD_PIPELINES_RUN_LOG\t2\n") {
		t.Fatalf("second quickstart:\n%s", r.stdout)
	}
	if n := count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'"); n != 2 {
		t.Fatalf("%d successful runs", n)
	}
}
