package cli_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the DuckDB database/sql driver, to read the warehouse file

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/fault"
)

// cloning is a Cloning section of the scope.
func cloning(scope string) string {
	return "Cloning:\n  dev:\n    Enabled: true\n    Scope: " + scope + "\n"
}

// pipelineMigration registers a pipeline with JSON parameters, a task and
// one task parameter.
const pipelineMigration = `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, SLA_IN_HOURS, PIPELINE_PARAMETERS)
VALUES ('SALES', 'Sales', 'FULL', 1.5, '{"region": "eu", "days": [1, 2]}');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT 'load', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'SALES';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT TASK_ID, 'SQL_ACTION', 'CREATE_TABLE' FROM CFG_TASKS WHERE TASK_CODE = 'load';
`

// cloneLines splits `etl-craft clone` output into its tab-separated fields.
func cloneLines(t *testing.T, out string) [][]string {
	t.Helper()
	var lines [][]string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Split(l, "\t")
		if len(f) < 3 || len(f) > 4 {
			t.Fatalf("not a clone line: %q", l)
		}
		lines = append(lines, f)
	}
	return lines
}

// mirrorCount counts a mirror's rows in the DuckDB warehouse.
func mirrorCount(p *e2e.Project, table string) int {
	p.T.Helper()
	n, _ := strconv.Atoi(p.WarehouseRows(`SELECT COUNT(*) FROM main."` + table + `"`)[0])
	return n
}

// engineCounts counts the rows of every CFG_ and AUD_ table but the API
// tokens, by upper-cased name.
func engineCounts(p *e2e.Project) map[string]int {
	p.T.Helper()
	db := p.DB()
	tables, err := db.Tables(p.T.Context())
	if err != nil {
		p.T.Fatal(err)
	}
	out := map[string]int{}
	for _, tb := range tables {
		u := strings.ToUpper(tb)
		if (strings.HasPrefix(u, "CFG_") || strings.HasPrefix(u, "AUD_")) && u != "CFG_API_TOKENS" {
			out[u] = e2e.Count(p.T, db, "SELECT count(*) FROM "+engine.QuoteIdent(tb))
		}
	}
	return out
}

func TestCloneCommandMirrorsTheScopeAndReportsEachTable(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.Write("migrations/0001_sales.sql", pipelineMigration)
		p.OK("setup")
		for _, section := range []string{"", "Cloning:\n  dev:\n    Enabled: false\n", "Cloning:\n  dev:\n    Enabled: true\n    Scope: none\n"} {
			p.Write("craft-connector.yml", strings.Split(p.Config(), "Cloning:")[0]+section)
			r := p.Run(nil, "clone")
			if r.Code != 3 || !strings.Contains(r.Stderr, "set Cloning.Enabled: true and a Scope of cfg, aud or all") || r.Stdout != "" {
				t.Fatalf("clone with %q exited %d: %s", section, r.Code, r.Stderr)
			}
		}

		p.Write("craft-connector.yml", strings.Split(p.Config(), "Cloning:")[0]+cloning("cfg"))
		r := p.OK("clone")
		var tables []string
		for _, f := range cloneLines(t, r.Stdout) {
			tables = append(tables, f[0])
			if f[1] != "warehouse.main."+f[0] || len(f) != 4 || f[3] != "created" || !strings.HasPrefix(f[0], "CFG_") {
				t.Fatalf("first clone line %q", f)
			}
		}
		if !slices.IsSorted(tables) || !slices.Contains(tables, "CFG_TASK_PARAMETERS") || slices.Contains(tables, "CFG_API_TOKENS") {
			t.Fatalf("tables %v", tables)
		}
		if !strings.Contains(r.Stdout, "CFG_PIPELINES\twarehouse.main.CFG_PIPELINES\t1\tcreated\n") || strings.Contains(r.Stderr, "\r") {
			t.Fatalf("stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
		}
		second := p.OK("clone")
		if second.Stdout != strings.ReplaceAll(r.Stdout, "\tcreated", "") {
			t.Fatalf("second clone:\n%s", second.Stdout)
		}
		if got := p.WarehouseRows(`SELECT "PIPELINE_PARAMETERS" || ' ' || CAST("SLA_IN_HOURS" AS VARCHAR) FROM main."CFG_PIPELINES"`); len(got) != 1 ||
			(got[0] != `{"region": "eu", "days": [1, 2]} 1.5000000000` && got[0] != `{"days": [1, 2], "region": "eu"} 1.5000000000`) {
			t.Fatalf("the DuckDB mirror holds %q", got)
		}
		if n := e2e.Count(t, p.DB(), "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'clone'"); n != 2 {
			t.Fatalf("%d clone requests recorded, want 2", n)
		}
	})
}

func TestCloneFollowsProjectMigrationsAndNeverDropsAMirror(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, cloning("all"))
		p.Write("migrations/0001_sales.sql", pipelineMigration+
			`CREATE TABLE "AUD_Odd Notes" ("Note Id" INTEGER, "Body ""Quoted""" VARCHAR, OBSOLETE VARCHAR);
INSERT INTO "AUD_Odd Notes" ("Note Id", "Body ""Quoted""", OBSOLETE) VALUES (1, 'first', 'x'), (2, 'second', 'y');
`)
		p.OK("setup")
		r := p.OK("clone")
		if !strings.Contains(r.Stdout, "AUD_Odd Notes\twarehouse.main.AUD_ODD NOTES\t2\tcreated\n") {
			t.Fatalf("the quoted project table:\n%s", r.Stdout)
		}
		db, err := sql.Open("duckdb", filepath.Join(p.Dir, "warehouse.duckdb"))
		if err != nil {
			t.Fatal(err)
		}
		e2e.MustExec(t, db, `CREATE VIEW main.pipeline_owners AS SELECT "PIPELINE_CODE" FROM main."CFG_PIPELINES"`,
			`CREATE VIEW main.odd_notes AS SELECT "NOTE ID", "BODY ""QUOTED""" FROM main."AUD_ODD NOTES"`)
		db.Close()

		p.Write("migrations/0002_upgrade.sql", `ALTER TABLE CFG_PIPELINES ADD COLUMN OWNER_TEAM VARCHAR;
UPDATE CFG_PIPELINES SET OWNER_TEAM = 'data';
ALTER TABLE "AUD_Odd Notes" DROP COLUMN OBSOLETE;
`)
		p.OK("migrate")
		r = p.OK("clone")
		for _, want := range []string{"CFG_PIPELINES\twarehouse.main.CFG_PIPELINES\t1\tadded OWNER_TEAM\n", "AUD_Odd Notes\twarehouse.main.AUD_ODD NOTES\t2\n"} {
			if !strings.Contains(r.Stdout, want) {
				t.Fatalf("after the upgrade, no %q in\n%s", want, r.Stdout)
			}
		}
		if got := p.WarehouseRows(`SELECT "OWNER_TEAM" FROM main."CFG_PIPELINES"`); !slices.Equal(got, []string{"data"}) {
			t.Fatalf("OWNER_TEAM mirrored as %v", got)
		}
		if got := p.WarehouseRows(`SELECT CAST("NOTE ID" AS VARCHAR) || ' ' || "BODY ""QUOTED""" || ' ' || COALESCE("OBSOLETE", 'NULL') FROM main."AUD_ODD NOTES" ORDER BY 1`); !slices.Equal(got, []string{"1 first NULL", "2 second NULL"}) {
			t.Fatalf("the project table's mirror holds %v", got)
		}
		if got := p.WarehouseRows(`SELECT "PIPELINE_CODE" FROM main.pipeline_owners`); !slices.Equal(got, []string{"SALES"}) {
			t.Fatalf("the view on the mirror reads %v", got)
		}
		if got := p.WarehouseRows(`SELECT "BODY ""QUOTED""" FROM main.odd_notes ORDER BY 1`); !slices.Equal(got, []string{"first", "second"}) {
			t.Fatalf("the view on the quoted mirror reads %v", got)
		}
	})
}

func TestAKilledCloneLeavesEachMirrorWithItsOldOrItsNewRows(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, cloning("all"))
		p.Write("migrations/0001_sales.sql", pipelineMigration)
		p.OK("setup")
		old := map[string]int{}
		for _, f := range cloneLines(t, p.OK("clone").Stdout) {
			old[f[0]], _ = strconv.Atoi(f[2])
		}
		p.Write("migrations/0002_more.sql", `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('RETURNS', 'Returns', 'FULL');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT 'load_returns', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'RETURNS';
`)
		p.OK("migrate")

		r := p.Run([]string{fault.Variable + "=clone.after_rows.CFG_TASKS:kill"}, "clone")
		if r.Code != fault.KilledStatus || r.Stdout != "" {
			t.Fatalf("the killed clone exited %d: %s", r.Code, r.Stderr)
		}
		now := engineCounts(p)
		for table, n := range now {
			got := mirrorCount(p, table)
			switch {
			case got != n && got != old[table]:
				t.Errorf("%s mirrors %d rows: neither the old %d nor the new %d", table, got, old[table], n)
			case table < "CFG_TASKS" && got != n:
				t.Errorf("%s committed before the kill but mirrors the old %d rows, not %d", table, got, n)
			case table >= "CFG_TASKS" && got != old[table]:
				t.Errorf("%s was being copied or not yet reached, but mirrors %d rows, not the old %d", table, got, old[table])
			}
		}
		if old["CFG_TASKS"] == now["CFG_TASKS"] || old["CFG_PIPELINES"] == now["CFG_PIPELINES"] {
			t.Fatalf("the migration changed nothing to tell old from new: %v %v", old, now)
		}

		p.OK("clone")
		now = engineCounts(p)
		for table, n := range now {
			if got := mirrorCount(p, table); got != n {
				t.Errorf("after the next clone %s mirrors %d rows, want %d", table, got, n)
			}
		}
	})
}

func TestTwoCloneProcessesAtOnceEndWithTheEngineDBsState(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, cloning("all"))
		p.Write("migrations/0001_sales.sql", pipelineMigration)
		p.OK("setup")
		results := make(chan e2e.Result, 2)
		for range 2 {
			go func() { results <- p.Run(nil, "clone") }()
		}
		var created int
		for range 2 {
			r := <-results
			if r.Code != 0 {
				t.Fatalf("a clone exited %d: %s", r.Code, r.Stderr)
			}
			created += strings.Count(r.Stdout, "\tcreated")
		}
		now := engineCounts(p)
		if created != len(now) {
			t.Fatalf("%d mirrors reported created for %d tables: the clones overlapped", created, len(now))
		}
		for table, n := range now {
			if got := mirrorCount(p, table); got != n {
				t.Errorf("%s mirrors %d rows, want %d", table, got, n)
			}
		}
	})
}

func TestCloneRefusesAMissingSchemaAndTheEngineDBsOwn(t *testing.T) {
	t.Parallel()
	t.Run("missing PostgreSQL schema", func(t *testing.T) {
		p := newProject(t, engine.SQLite, cloning("all"))
		yml, env, raw := e2e.PGWarehouse(t, "no_such_schema")
		p.WithWarehouse(yml, env)
		p.OK("init-db")
		r := p.Run(nil, "clone")
		if r.Code != 17 || !strings.Contains(r.Stderr, "no_such_schema does not exist") || r.Stdout != "" {
			t.Fatalf("exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
		}
		wh := enginetest.Plain(t, engine.Options{Kind: engine.Postgres, DSN: raw})
		var n int
		if err := wh.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d tables written (%v)", n, err)
		}
	})
	t.Run("missing DuckDB schema", func(t *testing.T) {
		p := newProject(t, engine.SQLite, cloning("all"))
		p.Write("craft-connector.yml", strings.Replace(p.Config(), "schema: main\n"+cloning("all"), "schema: mirrors\n"+cloning("all"), 1))
		p.OK("init-db")
		r := p.Run(nil, "clone")
		if r.Code != 17 || !strings.Contains(r.Stderr, "the warehouse schema warehouse.mirrors does not exist") {
			t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
		}
		if got := p.WarehouseRows(`SELECT CAST(COUNT(*) AS VARCHAR) FROM information_schema.tables`); got[0] != "0" {
			t.Fatalf("%s tables written", got[0])
		}
	})
	t.Run("the Engine DB's own schema", func(t *testing.T) {
		p := newProject(t, engine.Postgres, cloning("all"))
		u, _ := url.Parse(p.Engine.DSN)
		pw, _ := u.User.Password()
		p.WithWarehouse(fmt.Sprintf("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: jdbc:postgresql://%s%s?sslmode=disable\n    schema: PUBLIC\n    auth_mode: password\n    user: %s\n    secret: WAREHOUSE_SECRET\n",
			u.Host, u.Path, u.User.Username()), []string{"WAREHOUSE_SECRET=" + pw})
		p.OK("init-db")
		r := p.Run(nil, "clone")
		if r.Code != 3 || !strings.Contains(r.Stderr, "the Warehouse schema PUBLIC is the Engine DB's own schema") {
			t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
		}
		if n := e2e.Count(t, p.DB(), `SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'CFG%' OR table_name LIKE 'AUD%'`); n != 0 {
			t.Fatalf("%d upper-case mirrors written into the Engine DB", n)
		}
	})
}

// clonedTable is a table of the clone/1 document as a test reads it.
type clonedTable struct {
	Table, Mirror, Copy, Why string
	Rows, Copied             int64
	Created                  bool
	Added                    []string
}

func TestCloneSaysWhatEachCopyWroteAndFullForcesFullCopies(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, cloning("aud"))
		p.Write("migrations/0001_sales.sql", pipelineMigration)
		p.OK("setup")
		parse := func(r e2e.Result) map[string]clonedTable {
			t.Helper()
			var doc struct {
				Schema string
				Tables []clonedTable
			}
			if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.Schema != "etl-craft/clone/1" {
				t.Fatalf("clone --format json printed %v:\n%s", err, r.Stdout)
			}
			out := map[string]clonedTable{}
			for _, tb := range doc.Tables {
				out[tb.Table] = tb
			}
			return out
		}
		first := parse(p.OK("clone", "--format", "json"))
		actions := first["AUD_ACTIONS"]
		if actions.Copy != "full" || !actions.Created || actions.Rows != actions.Copied || actions.Mirror != "warehouse.main.AUD_ACTIONS" {
			t.Fatalf("the first copy of AUD_ACTIONS: %+v", actions)
		}
		second := p.OK("--log-level", "DEBUG", "clone")
		lines := cloneLines(t, second.Stdout)
		if !slices.ContainsFunc(lines, func(f []string) bool {
			return f[0] == "AUD_ACTIONS" && f[2] == strconv.FormatInt(actions.Rows+1, 10) && len(f) == 3
		}) {
			t.Fatalf("the second clone's lines:\n%s", second.Stdout)
		}
		if !strings.Contains(second.Stderr, `msg="cloned AUD_ACTIONS" mirror=warehouse.main.AUD_ACTIONS rows=`+strconv.FormatInt(actions.Rows+1, 10)+
			` copied=1 copy=incremental why="the mirror is as the last clone left it"`) {
			t.Fatalf("the DEBUG log does not say the copy was incremental:\n%s", second.Stderr)
		}
		third := parse(p.OK("clone", "--format", "json"))
		if tb := third["AUD_ACTIONS"]; tb.Copy != "incremental" || tb.Copied != 1 || tb.Rows != actions.Rows+2 {
			t.Fatalf("the third copy of AUD_ACTIONS: %+v", tb)
		}
		forced := parse(p.OK("clone", "--full", "--format", "json"))
		for name, tb := range forced {
			if tb.Copy != "full" || tb.Why != "a full copy was asked for (--full)" || tb.Rows != tb.Copied {
				t.Errorf("clone --full copied %s: %+v", name, tb)
			}
		}
	})
}
