package cli_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// duckExec runs statements on the project's DuckDB warehouse file, creating
// it when it does not exist.
func (p *project) duckExec(stmts ...string) {
	p.t.Helper()
	db, err := sql.Open("duckdb", filepath.Join(p.dir, "warehouse.duckdb"))
	if err != nil {
		p.t.Fatal(err)
	}
	defer db.Close()
	mustExec(p.t, db, stmts...)
}

// cloneRecords returns the log lines of stderr that report cloning.
func cloneRecords(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, `msg="cloned `) {
			out = append(out, l)
		}
	}
	return out
}

func TestEveryRunsConnectionTestChecksTheDuckDBCloneSchema(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, cloning("all"))
		p.write("craft-connector.yml", strings.Replace(readFile(t, p.dir+"/craft-connector.yml"), "schema: main\n"+cloning("all"), "schema: mirrors\n"+cloning("all"), 1))
		p.ok("init-db")
		p.register("0001_sales", sqlPipeline("SALES", createTable("totals", "main.totals", "SELECT 1 AS n")))
		// The file exists, with its schema main only.
		p.duckExec("CREATE TABLE main.existing (x INTEGER)")

		wantExit(t, p.run(nil, "run", "--pipeline_code", "SALES"), 11,
			"warehouse: the warehouse schema warehouse.mirrors does not exist: cloning copies the Engine DB into it")
		db := p.db()
		if n := count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); n != 0 {
			t.Fatalf("%d runs recorded after a failed connection test", n)
		}
		if got := p.duckRows(`SELECT CAST(COUNT(*) AS VARCHAR) FROM information_schema.tables WHERE table_name = 'totals'`); got[0] != "0" {
			t.Fatal("the task ran although the connection test failed")
		}

		// With the schema, the run goes ahead and its clone fills it; the
		// clone logs one INFO record, and one DEBUG record per table.
		p.duckExec("CREATE SCHEMA mirrors")
		r := p.ok("run", "--pipeline_code", "SALES")
		if r.stdout != "SALES: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("stdout %q\nstderr %s", r.stdout, r.stderr)
		}
		if got := p.duckRows(`SELECT "STATUS" FROM mirrors."AUD_PIPELINES_RUN_LOG"`); len(got) != 1 || got[0] != "SUCCESS" {
			t.Fatalf("the mirrored run log holds %v", got)
		}
		tables := len(p.engineCounts())
		summary := regexp.MustCompile(fmt.Sprintf(`^time=\S+ level=INFO msg="cloned %d table\(s\), \d+ row\(s\), into the warehouse" tables=%d rows=\d+ seconds=[0-9.]+$`, tables, tables))
		if records := cloneRecords(r.stderr); len(records) != 1 || !summary.MatchString(records[0]) {
			t.Fatalf("the clone's records at INFO, want one summary of %d tables:\n%s", tables, strings.Join(records, "\n"))
		}
		r = p.ok("--log-level", "DEBUG", "run", "--pipeline_code", "SALES")
		records := cloneRecords(r.stderr)
		debug := 0
		for _, l := range records {
			if strings.Contains(l, ` level=DEBUG msg="cloned CFG_`) || strings.Contains(l, ` level=DEBUG msg="cloned AUD_`) {
				debug++
			}
		}
		if debug != tables || len(records) != tables+1 || !summary.MatchString(records[len(records)-1]) {
			t.Fatalf("with --log-level DEBUG, want %d table records and the summary:\n%s", tables, strings.Join(records, "\n"))
		}
	})
}

func TestTheEngineDBsOwnSchemaIsRefusedHoweverItsHostIsSpelled(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.Postgres, cloning("all"))
	u, _ := url.Parse(p.opts.DSN)
	pw, _ := u.User.Password()
	other := "localhost" // the Engine DB's URL names the server by another name
	if u.Hostname() == other {
		other = "127.0.0.1"
	}
	warehouseOn := func(schema string) {
		p.withWarehouse(fmt.Sprintf("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: jdbc:postgresql://%s:%s%s?sslmode=disable\n    schema: %s\n    auth_mode: password\n    user: %s\n    secret: WAREHOUSE_SECRET\n",
			other, u.Port(), u.Path, schema, u.User.Username()), []string{"WAREHOUSE_SECRET=" + pw})
	}
	warehouseOn("PUBLIC")
	p.ok("init-db")
	p.register("0001_sales", sqlPipeline("SALES", createTable("totals", "public.totals", "SELECT 1 AS n")))
	const refusal = "the Warehouse schema PUBLIC is the Engine DB's own schema in the same database"

	r := p.run(nil, "doctor")
	if line := checkLines(r.stdout)["Cloning"]; r.code != 1 || !strings.HasPrefix(line, "[FAIL] Cloning: "+refusal) {
		t.Fatalf("doctor exited %d, Cloning check %q\n%s", r.code, line, r.stdout)
	}
	wantExit(t, p.run(nil, "clone"), 3, refusal)
	wantExit(t, p.run(nil, "run", "--pipeline_code", "SALES"), 3, refusal)
	db := p.db()
	if n := count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); n != 0 {
		t.Fatalf("%d runs recorded although cloning into the Engine DB's schema was refused", n)
	}
	if n := count(t, db, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'CFG%' OR table_name LIKE 'AUD%' OR table_name = 'totals'`); n != 0 {
		t.Fatalf("%d tables written into the Engine DB's schema", n)
	}

	// Another schema of the same database is a warehouse like any other.
	if _, err := db.ExecContext(t.Context(), "CREATE SCHEMA mirrors"); err != nil {
		t.Fatal(err)
	}
	warehouseOn("mirrors")
	if line := checkLines(p.ok("doctor").stdout)["Cloning"]; !strings.HasPrefix(line, "[OK  ] Cloning: scope all") {
		t.Fatalf("Cloning check %q", line)
	}
	if r := p.ok("run", "--pipeline_code", "SALES"); r.stdout != "SALES: pipeline_run_id=1 SUCCESS\n" {
		t.Fatalf("stdout %q\nstderr %s", r.stdout, r.stderr)
	}
	if n := count(t, db, `SELECT count(*) FROM mirrors."AUD_PIPELINES_RUN_LOG" WHERE "STATUS" = 'SUCCESS'`); n != 1 {
		t.Fatalf("the mirrored run log holds %d SUCCESS runs", n)
	}
}

func TestCloneRefusesTheSQLiteEngineDBsOwnFileAsTheDuckDBWarehouse(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, cloning("all"))
	p.ok("init-db")
	// warehouse.duckdb is another name of the Engine DB's file.
	if err := os.Symlink(filepath.Join(p.dir, "state", "engine.db"), filepath.Join(p.dir, "warehouse.duckdb")); err != nil {
		t.Fatal(err)
	}
	const refusal = "is the Engine DB's SQLite file: cloning would write into the tables it copies"
	wantExit(t, p.run(nil, "clone"), 3, refusal)
	if line := checkLines(p.run(nil, "doctor").stdout)["Cloning"]; !strings.HasPrefix(line, "[FAIL] Cloning: ") || !strings.Contains(line, refusal) {
		t.Fatalf("Cloning check %q", line)
	}
}
