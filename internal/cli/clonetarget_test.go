package cli_test

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

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
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, cloning("all"))
		p.Write("craft-connector.yml", strings.Replace(p.Config(), "schema: main\n"+cloning("all"), "schema: mirrors\n"+cloning("all"), 1))
		p.OK("init-db")
		p.Register("0001_sales", e2e.Pipeline("SALES", e2e.CreateTable("totals", "main.totals", "SELECT 1 AS n")))
		// The file exists, with its schema main only.
		p.WarehouseExec("CREATE TABLE main.existing (x INTEGER)")

		e2e.WantExit(t, p.Run(nil, "run", "--pipeline_code", "SALES"), 11,
			"warehouse: the warehouse schema warehouse.mirrors does not exist: cloning copies the Engine DB into it")
		db := p.DB()
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); n != 0 {
			t.Fatalf("%d runs recorded after a failed connection test", n)
		}
		if got := p.WarehouseRows(`SELECT CAST(COUNT(*) AS VARCHAR) FROM information_schema.tables WHERE table_name = 'totals'`); got[0] != "0" {
			t.Fatal("the task ran although the connection test failed")
		}

		// With the schema, the run goes ahead and its clone fills it; the
		// clone logs one INFO record, and one DEBUG record per table.
		p.WarehouseExec("CREATE SCHEMA mirrors")
		r := p.OK("run", "--pipeline_code", "SALES")
		if r.Stdout != "SALES: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("stdout %q\nstderr %s", r.Stdout, r.Stderr)
		}
		if got := p.WarehouseRows(`SELECT "STATUS" FROM mirrors."AUD_PIPELINES_RUN_LOG"`); len(got) != 1 || got[0] != "SUCCESS" {
			t.Fatalf("the mirrored run log holds %v", got)
		}
		tables := len(engineCounts(p))
		summary := regexp.MustCompile(fmt.Sprintf(`^time=\S+ level=INFO msg="cloned %d table\(s\), \d+ row\(s\), into the warehouse" tables=%d rows=\d+ seconds=[0-9.]+$`, tables, tables))
		if records := cloneRecords(r.Stderr); len(records) != 1 || !summary.MatchString(records[0]) {
			t.Fatalf("the clone's records at INFO, want one summary of %d tables:\n%s", tables, strings.Join(records, "\n"))
		}
		r = p.OK("--log-level", "DEBUG", "run", "--pipeline_code", "SALES")
		records := cloneRecords(r.Stderr)
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
	u, _ := url.Parse(p.Engine.DSN)
	pw, _ := u.User.Password()
	other := "localhost" // the Engine DB's URL names the server by another name
	if u.Hostname() == other {
		other = "127.0.0.1"
	}
	warehouseOn := func(schema string) {
		p.WithWarehouse(fmt.Sprintf("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: jdbc:postgresql://%s:%s%s?sslmode=disable\n    schema: %s\n    auth_mode: password\n    user: %s\n    secret: WAREHOUSE_SECRET\n",
			other, u.Port(), u.Path, schema, u.User.Username()), []string{"WAREHOUSE_SECRET=" + pw})
	}
	warehouseOn("PUBLIC")
	p.OK("init-db")
	p.Register("0001_sales", e2e.Pipeline("SALES", e2e.CreateTable("totals", "public.totals", "SELECT 1 AS n")))
	const refusal = "the Warehouse schema PUBLIC is the Engine DB's own schema in the same database"

	r := p.Run(nil, "doctor")
	if line := checkLines(r.Stdout)["Cloning"]; r.Code != 1 || !strings.HasPrefix(line, "[FAIL] Cloning: "+refusal) {
		t.Fatalf("doctor exited %d, Cloning check %q\n%s", r.Code, line, r.Stdout)
	}
	e2e.WantExit(t, p.Run(nil, "clone"), 3, refusal)
	e2e.WantExit(t, p.Run(nil, "run", "--pipeline_code", "SALES"), 3, refusal)
	db := p.DB()
	if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); n != 0 {
		t.Fatalf("%d runs recorded although cloning into the Engine DB's schema was refused", n)
	}
	if n := e2e.Count(t, db, `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'CFG%' OR table_name LIKE 'AUD%' OR table_name = 'totals'`); n != 0 {
		t.Fatalf("%d tables written into the Engine DB's schema", n)
	}

	// Another schema of the same database is a warehouse like any other.
	if _, err := db.ExecContext(t.Context(), "CREATE SCHEMA mirrors"); err != nil {
		t.Fatal(err)
	}
	warehouseOn("mirrors")
	if line := checkLines(p.OK("doctor").Stdout)["Cloning"]; !strings.HasPrefix(line, "[OK  ] Cloning: scope all") {
		t.Fatalf("Cloning check %q", line)
	}
	if r := p.OK("run", "--pipeline_code", "SALES"); r.Stdout != "SALES: pipeline_run_id=1 SUCCESS\n" {
		t.Fatalf("stdout %q\nstderr %s", r.Stdout, r.Stderr)
	}
	if n := e2e.Count(t, db, `SELECT count(*) FROM mirrors."AUD_PIPELINES_RUN_LOG" WHERE "STATUS" = 'SUCCESS'`); n != 1 {
		t.Fatalf("the mirrored run log holds %d SUCCESS runs", n)
	}
}

func TestCloneRefusesTheSQLiteEngineDBsOwnFileAsTheDuckDBWarehouse(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, cloning("all"))
	p.OK("init-db")
	// warehouse.duckdb is another name of the Engine DB's file.
	if err := os.Symlink(filepath.Join(p.Dir, "state", "engine.db"), filepath.Join(p.Dir, "warehouse.duckdb")); err != nil {
		t.Fatal(err)
	}
	const refusal = "is the Engine DB's SQLite file: cloning would write into the tables it copies"
	e2e.WantExit(t, p.Run(nil, "clone"), 3, refusal)
	if line := checkLines(p.Run(nil, "doctor").Stdout)["Cloning"]; !strings.HasPrefix(line, "[FAIL] Cloning: ") || !strings.Contains(line, refusal) {
		t.Fatalf("Cloning check %q", line)
	}
}
