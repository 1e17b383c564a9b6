package cli_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/quickstart"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// badInput is one bad input a user may give, tried against a copy of the
// quickstart project (issue 35): the refusal it must get, and the check
// that it changed nothing.
type badInput struct {
	name string
	// engines are the Engine DBs the input is tried on: SQLite when nil;
	// bothEngines for inputs whose handling differs by Engine DB.
	engines []engine.Kind
	// prepare changes the copy before the command: writes files, edits
	// craft-connector.yml.
	prepare func(p *e2e.Project)
	env     []string
	args    []string
	code    int
	// want are fragments the output (stdout and stderr) must hold: the
	// file and line, the field, what was wrong.
	want []string
	// never are fragments the output must not hold, such as a secret.
	never []string
	// changes is set for an input whose command may change the databases;
	// otherwise the Engine DB (but for the request AUD_ACTIONS records) and
	// the warehouse must be as they were.
	changes bool
	// after checks more once the command ended.
	after func(t *testing.T, p *e2e.Project, r e2e.Result)
}

// setParameter registers a task parameter of the quickstart pipeline with
// a project migration, applied.
func setParameter(p *e2e.Project, task, name, value string) {
	p.T.Helper()
	p.Write("migrations/0004_parameter.sql", fmt.Sprintf(
		"INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)\n"+
			"SELECT TASK_ID, '%s', '%s' FROM CFG_TASKS WHERE TASK_CODE = '%s' AND ACTIVE_FLAG = 'Y';\n", name, value, task))
	p.OK("migrate")
}

// manyKeys is n unknown keys of the Orchestration section.
func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "  Key_%d: x\n", i)
	}
	return b.String()
}

// bothEngines tries an input on a SQLite and a PostgreSQL Engine DB.
var bothEngines = []engine.Kind{engine.SQLite, engine.Postgres}

// badInputs grows with every fix of a bad input.
var badInputs = []badInput{
	// Issue 35 item 1: transaction control in a project migration.
	{
		name: "rollback in a migration", engines: bothEngines,
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_txn.sql",
				"INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('TX4', 'x', 'FULL');\nROLLBACK;\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0004_txn.sql:2: the statement `ROLLBACK` controls the transaction", "nothing was applied"},
	},
	{
		name: "end transaction in a migration", engines: bothEngines,
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_txn.sql",
				"INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('TX4', 'x', 'FULL');\n\nEND TRANSACTION;\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0004_txn.sql:3: the statement `END TRANSACTION` controls the transaction"},
	},
	{
		name: "commit and begin mid-file", engines: bothEngines,
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_txn.sql", "-- two halves\nCREATE TABLE half_one (id INTEGER);\nCOMMIT; BEGIN;\nCREATE TABLE half_two (id INTEGER);\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0004_txn.sql:3: the statement `COMMIT` controls the transaction"},
	},
	{
		name: "savepoint in a migration", engines: bothEngines,
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_txn.sql", "SAVEPOINT s1;\nCREATE TABLE sp (id INTEGER);\nRELEASE s1;\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0004_txn.sql:1: the statement `SAVEPOINT s1` controls the transaction"},
	},
	{
		name: "vacuum in a migration", engines: bothEngines,
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_vacuum.sql", "CREATE TABLE v (id INTEGER);\nVACUUM;\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0004_vacuum.sql:2: the statement `VACUUM` cannot run inside a transaction"},
	},
	{
		name: "a later file refused before an earlier one applies", engines: bothEngines,
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_fine.sql", "CREATE TABLE fine_one (id INTEGER);\n")
			p.Write("migrations/0005_txn.sql", "CREATE TABLE fine_two (id INTEGER);\nCOMMIT;\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0005_txn.sql:2: the statement `COMMIT` controls the transaction"},
	},
	{
		name: "create index concurrently in a migration", engines: []engine.Kind{engine.Postgres},
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_index.sql", "CREATE INDEX CONCURRENTLY ix_tasks_code ON CFG_TASKS (TASK_CODE);\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0004_index.sql:1: the statement `CREATE INDEX CONCURRENTLY ix_tasks_code ON CFG_TASKS (TASK_CODE)` cannot run inside a transaction"},
	},
	// Item 8: migrations out of order, and two files with one number.
	{
		name: "a migration added before an applied one", engines: bothEngines,
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0005_first.sql", "CREATE TABLE first_t (id INTEGER);\n")
			p.OK("migrate")
			p.Write("migrations/0004_late.sql", "CREATE TABLE late (id INTEGER);\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0004_late.sql sorts before project/0005_first.sql, which is already applied",
			"such as 0006_late.sql", "migrate --out-of-order"},
	},
	{
		name: "two migrations with one number", engines: bothEngines,
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0003_other.sql", "CREATE TABLE other (id INTEGER);\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0003_load_rates.sql and project/0003_other.sql share the number 0003", "such as 0004_other.sql"},
	},
	{
		name: "two pending migrations with one number",
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_a.sql", "CREATE TABLE a (id INTEGER);\n")
			p.Write("migrations/0004_b.sql", "CREATE TABLE b (id INTEGER);\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0004_a.sql and project/0004_b.sql share the number 0004", "such as 0005_b.sql"},
	},
	{
		name: "doctor names a migration with a number taken",
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0002_late.sql", "CREATE TABLE late (id INTEGER);\n")
		},
		args: []string{"doctor"}, code: 1,
		want: []string{"[FAIL] Engine DB migrations: project/0002_check_orders.sql and project/0002_late.sql share the number 0002"},
	},
	// Item 9: empty and comment-only migrations.
	{
		name: "an empty migration", engines: bothEngines,
		prepare: func(p *e2e.Project) { p.Write("migrations/0004_empty.sql", "") },
		args:    []string{"migrate"}, code: 13,
		want: []string{"project/0004_empty.sql holds no statement (it is empty, or only comments)"},
	},
	{
		name: "a comment-only migration", engines: bothEngines,
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_todo.sql", "-- TODO: add the orders pipeline\n/* later */\n;\n")
		},
		args: []string{"migrate"}, code: 13,
		want: []string{"project/0004_todo.sql holds no statement"},
	},
	// Item 10: files that look like migrations but are not read.
	{
		name: "a migration with an upper-case extension",
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_upper.SQL", "CREATE TABLE upper_t (id INTEGER);\n")
		},
		args: []string{"migrate"}, code: 0,
		want: []string{"level=WARN", "0004_upper.SQL is not read: only names ending in .sql, in lower case, are migrations; rename it to 0004_upper.sql",
			"migrate: already up to date"},
	},
	{
		name: "doctor names a file that is not read",
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_upper.SQL", "CREATE TABLE upper_t (id INTEGER);\n")
		},
		args: []string{"doctor"}, code: 0,
		want: []string{"[WARN] Migrations folder: ", "0004_upper.SQL is not read"},
	},
	// Item 3: the value of a variable named where a plain value belongs.
	{
		name: "a secret as the time zone",
		prepare: func(p *e2e.Project) {
			p.EditConfig("  Max_parallel_tasks: 4\n", "  Max_parallel_tasks: 4\n  Timezone: MAIL_SECRET\n")
		},
		env:  []string{"MAIL_SECRET=topsecretvalue123"},
		args: []string{"list"}, code: 3,
		want:  []string{"craft-connector.yml:11: Orchestration.Timezone: must be an IANA time zone name", "got '<value of MAIL_SECRET>'"},
		never: []string{"topsecretvalue123"},
	},
	{
		name:    "a secret as the number of parallel tasks",
		prepare: func(p *e2e.Project) { p.EditConfig("  Max_parallel_tasks: 4\n", "  Max_parallel_tasks: MAIL_SECRET\n") },
		env:     []string{"MAIL_SECRET=topsecretvalue123"},
		args:    []string{"doctor"}, code: 3,
		want:  []string{"craft-connector.yml:10: Orchestration.Max_parallel_tasks: must be a whole number of at least 1; got '<value of MAIL_SECRET>'"},
		never: []string{"topsecretvalue123"},
	},
	{
		name: "a secret as the API address",
		prepare: func(p *e2e.Project) {
			p.EditConfig("  Max_parallel_tasks: 4\n", "  Max_parallel_tasks: 4\n  Api_address: MAIL_SECRET\n")
		},
		env:  []string{"MAIL_SECRET=top:secret:value123"},
		args: []string{"list"}, code: 3,
		want:  []string{"craft-connector.yml:11: Orchestration.Api_address: must be host:port", "<value of MAIL_SECRET>"},
		never: []string{"top:secret:value123", "secret:value123"},
	},
	{
		name: "a secret as the mail port",
		prepare: func(p *e2e.Project) {
			p.EditConfig("  Max_parallel_tasks: 4\n", "  Max_parallel_tasks: 4\n  Email:\n    host: smtp.example.com\n    port: MAIL_SECRET\n    from_address: etl@example.com\n")
		},
		env:  []string{"MAIL_SECRET=topsecretvalue123"},
		args: []string{"list"}, code: 3,
		want:  []string{"craft-connector.yml:13: Orchestration.Email.port: must be a whole number from 1 to 65535; got '<value of MAIL_SECRET>'"},
		never: []string{"topsecretvalue123"},
	},
	// Item 11: YAML syntax errors at their line, and a byte that is not UTF-8.
	{
		name:    "a flow mapping left open",
		prepare: func(p *e2e.Project) { p.EditConfig("  Max_parallel_tasks: 4\n", "  Max_parallel_tasks: {4\n") },
		args:    []string{"list"}, code: 3,
		want: []string{"craft-connector.yml:10: this is not valid YAML: did not find expected ',' or '}' on line 13, inside the flow mapping { … } that starts here"},
	},
	{
		name:    "a bad indent",
		prepare: func(p *e2e.Project) { p.EditConfig("    schema: main\n\nWarehouse", "   schema: main\n\nWarehouse") },
		args:    []string{"list"}, code: 3,
		want: []string{"craft-connector.yml:15: this is not valid YAML: did not find expected key"},
	},
	{
		name:    "a byte that is not UTF-8",
		prepare: func(p *e2e.Project) { p.EditConfig("  Mode: local\n", "  Mode: local\n  Name: caf\xe9\n") },
		args:    []string{"list"}, code: 3,
		want: []string{"craft-connector.yml:10: this is not UTF-8 text: the byte 0xe9 in column 12 is not; save the file as UTF-8"},
	},
	// Item 12: very many unknown keys.
	{
		name: "sixty thousand unknown keys",
		prepare: func(p *e2e.Project) {
			p.EditConfig("  Max_parallel_tasks: 4\n", "  Max_parallel_tasks: 4\n"+manyKeys(60000))
		},
		args: []string{"list"}, code: 3,
		want: []string{"craft-connector.yml:11: Orchestration: unknown key 'Key_0'", "'Key_19' and 59980 more; the keys read here are Mode"},
		after: func(t *testing.T, p *e2e.Project, r e2e.Result) {
			if len(r.Stderr) > 2000 {
				t.Errorf("the message is %d bytes long", len(r.Stderr))
			}
		},
	},
	{
		name: "a configuration file of eleven megabytes",
		prepare: func(p *e2e.Project) {
			p.EditConfig("  Max_parallel_tasks: 4\n", "  Max_parallel_tasks: 4\n"+manyKeys(700000))
		},
		args: []string{"list"}, code: 3,
		want: []string{"craft-connector.yml is 11089", "bytes, more than the 1048576 a craft-connector.yml may have"},
	},
	// Item 5: durations too long for a duration.
	{
		name:    "a task timeout of ten billion seconds",
		prepare: func(p *e2e.Project) { setParameter(p, "load_orders", "TASK_TIMEOUT_SECONDS", "10000000000") },
		args:    []string{"run", "--pipeline_code", "QUICKSTART_SALES"}, code: 4,
		want: []string{"QUICKSTART_SALES.load_orders: CFG_TASK_PARAMETERS TASK_TIMEOUT_SECONDS must be a whole number from 0 to 2147483647; got '10000000000'"},
	},
	{
		name:    "a retry delay of ten billion seconds",
		prepare: func(p *e2e.Project) { setParameter(p, "load_orders", "RETRY_DELAY_SECONDS", "10000000000") },
		args:    []string{"run", "--pipeline_code", "QUICKSTART_SALES"}, code: 4,
		want: []string{"QUICKSTART_SALES.load_orders: CFG_TASK_PARAMETERS RETRY_DELAY_SECONDS must be a whole number from 0 to 2147483647; got '10000000000'"},
	},
	{
		name: "a task timeout too long in the configuration file",
		prepare: func(p *e2e.Project) {
			p.EditConfig("  Max_parallel_tasks: 4\n", "  Max_parallel_tasks: 4\n  Task_timeout_seconds: 10000000000\n")
		},
		args: []string{"run", "--pipeline_code", "QUICKSTART_SALES"}, code: 3,
		want: []string{"craft-connector.yml:11: Orchestration.Task_timeout_seconds: must be a whole number from 0 to 2147483647; got '10000000000'"},
	},
	// Item 6: dates outside 0001-9999.
	{
		name: "a backfill in the year 0",
		args: []string{"run", "--pipeline_code", "QUICKSTART_SALES", "--backfill", "0000-01-01:0000-01-02", "--reason", "x"}, code: 2,
		want: []string{`--backfill 0000-01-01:0000-01-02: "0000-01-01" is not a date from 0001-01-01 to 9999-12-31: write YYYY-MM-DD`},
	},
	{
		name: "a run date in the year 0",
		args: []string{"run", "--pipeline_code", "QUICKSTART_SALES", "--run-date", "0000-06-01"}, code: 2,
		want: []string{`--run-date "0000-06-01" is not a date from 0001-01-01 to 9999-12-31`},
	},
	{
		name: "a run date in the year 10000",
		args: []string{"run", "--pipeline_code", "QUICKSTART_SALES", "--init-only", "--run-date", "10000-01-01"}, code: 2,
		want: []string{`--run-date "10000-01-01" is not a date from 0001-01-01 to 9999-12-31`},
	},
	// Item 7: a warehouse file that cannot be opened or created.
	{
		name: "a warehouse in a folder that does not exist",
		prepare: func(p *e2e.Project) {
			p.EditConfig("jdbc:duckdb:warehouse.duckdb", "jdbc:duckdb:nofolder/warehouse.duckdb")
		},
		args: []string{"run", "--pipeline_code", "QUICKSTART_SALES"}, code: 11,
		want: []string{"could not open the DuckDB warehouse", "nofolder/warehouse.duckdb", "No such file or directory"},
	},
	{
		name: "doctor on a warehouse in a folder that does not exist",
		prepare: func(p *e2e.Project) {
			p.EditConfig("jdbc:duckdb:warehouse.duckdb", "jdbc:duckdb:nofolder/warehouse.duckdb")
		},
		args: []string{"doctor"}, code: 1,
		want: []string{"[FAIL] Warehouse connection: DuckDB, ", "nofolder/warehouse.duckdb does not exist yet, and the first run cannot create it: its folder ",
			"nofolder does not exist"},
	},
	{
		name: "a warehouse file that is not DuckDB's",
		prepare: func(p *e2e.Project) {
			p.Write("garbage.duckdb", "not a database\n")
			p.EditConfig("warehouse.duckdb\n", "garbage.duckdb\n")
		},
		args: []string{"run", "--pipeline_code", "QUICKSTART_SALES"}, code: 11,
		want: []string{"garbage.duckdb", "is not a valid DuckDB database file"},
	},
	{
		name: "a warehouse in a folder no file can be made in",
		prepare: func(p *e2e.Project) {
			p.EditConfig("jdbc:duckdb:warehouse.duckdb", "jdbc:duckdb:/sys/warehouse.duckdb")
		},
		args: []string{"run", "--pipeline_code", "QUICKSTART_SALES"}, code: 11,
		want: []string{"could not open the DuckDB warehouse /sys/warehouse.duckdb", "Permission denied"},
	},
	{
		name: "doctor on a warehouse in a folder no file can be made in",
		prepare: func(p *e2e.Project) {
			p.EditConfig("jdbc:duckdb:warehouse.duckdb", "jdbc:duckdb:/sys/warehouse.duckdb")
		},
		args: []string{"doctor"}, code: 1,
		want: []string{"[FAIL] Warehouse connection: DuckDB, /sys/warehouse.duckdb does not exist yet, and the first run cannot create it: no file can be created in its folder /sys"},
	},
	// Item 4: the warehouse file removed while a task writes it.
	{
		name: "the warehouse file removed while a task writes it",
		prepare: func(p *e2e.Project) {
			p.Write("ingestion_scripts/load_exchange_rates.py", `import os

from etl_craft.scripting import ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    with task.warehouse() as engine, engine.begin() as conn:
        conn.execute("CREATE TABLE main.k_big AS SELECT range AS i FROM range(1000)")
        os.remove(os.path.join(task.config["project_dir"], "warehouse.duckdb"))
    return ScriptResult(1000)
`)
		},
		args: []string{"run", "--pipeline_code", "QUICKSTART_SALES"}, code: 1,
		want:    []string{"load_exchange_rates (FAILED)", "warehouse.duckdb is gone: it was removed while it was open, and what was written to it since is lost"},
		changes: true,
		after: func(t *testing.T, p *e2e.Project, r e2e.Result) {
			db := p.DB()
			status := enginetest.Rows(t, db, `SELECT a.STATUS FROM AUD_TASK_ATTEMPTS a
				JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
				WHERE t.TASK_CODE = 'load_exchange_rates' AND tr.PIPELINE_RUN_ID = 2`)
			if len(status) != 1 || status[0] != "FAILED" {
				t.Errorf("the script's attempts in the second run: %v", status)
			}
		},
	},
	// Item 14: a dependency on a task of a retired pipeline.
	{
		name: "a dependency on a task of a retired pipeline",
		prepare: func(p *e2e.Project) {
			p.Write("migrations/0004_xdep.sql", `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('OLDP', 'Old', 'FULL');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT 'extract', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'OLDP';
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('XDEP', 'Cross', 'FULL');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT 'report', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'XDEP';
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT x.PIPELINE_ID, r.TASK_ID, e.TASK_ID, 'SUCCESS'
FROM CFG_PIPELINES x JOIN CFG_TASKS r ON r.PIPELINE_ID = x.PIPELINE_ID AND r.TASK_CODE = 'report'
JOIN CFG_TASKS e ON e.TASK_CODE = 'extract'
WHERE x.PIPELINE_CODE = 'XDEP';
UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_CODE = 'OLDP';
`)
			p.OK("migrate")
		},
		args: []string{"run", "--pipeline_code", "XDEP"}, code: 8,
		want: []string{"XDEP.report depends on task id 8 (CFG_TASK_DEPENDENCY id 8), which is OLDP.extract, a task of the retired pipeline OLDP, not of XDEP"},
	},
}

// TestBadInput tries every bad input of badInputs on its own copy of the
// quickstart project, side by side.
func TestBadInput(t *testing.T) {
	t.Parallel()
	q := &quickstarts{parent: t, made: map[engine.Kind]*quickstartFixture{}}
	for _, c := range badInputs {
		kinds := c.engines
		if kinds == nil {
			kinds = []engine.Kind{engine.SQLite}
		}
		for _, kind := range kinds {
			t.Run(c.name+"/"+string(kind), func(t *testing.T) {
				t.Parallel()
				p := q.copyOf(t, kind)
				if c.prepare != nil {
					c.prepare(p)
				}
				before := snapshot(p)
				r := p.Run(c.env, c.args...)
				out := r.Stdout + r.Stderr
				if r.Code != c.code {
					t.Fatalf("etl-craft %s exited %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(c.args, " "), r.Code, c.code, r.Stdout, r.Stderr)
				}
				for _, w := range c.want {
					if !strings.Contains(out, w) {
						t.Errorf("the output lacks %q:\nstdout:\n%s\nstderr:\n%s", w, r.Stdout, r.Stderr)
					}
				}
				for _, n := range c.never {
					if strings.Contains(out, n) {
						t.Errorf("the output holds %q:\nstdout:\n%s\nstderr:\n%s", n, r.Stdout, r.Stderr)
					}
				}
				if !c.changes {
					if gone, added := diffLines(before, snapshot(p)); len(gone)+len(added) > 0 {
						t.Errorf("the command changed the databases:\nrows gone:\n%s\nrows added:\n%s",
							strings.Join(gone, "\n"), strings.Join(added, "\n"))
					}
				}
				if c.after != nil {
					c.after(t, p, r)
				}
			})
		}
	}
}

// quickstarts are the quickstart projects the bad inputs copy, set up once
// per Engine DB by the first copy and removed when the parent test ends.
type quickstarts struct {
	parent *testing.T
	mu     sync.Mutex
	made   map[engine.Kind]*quickstartFixture
}

// quickstartFixture is one quickstart project, set up, with one run of its
// pipeline. On PostgreSQL its Engine DB is the template of every copy's.
type quickstartFixture struct {
	once     sync.Once
	dir      string
	database string // the PostgreSQL template database
	err      error
}

// copyOf returns a copy of the quickstart project on an Engine DB of the
// kind: the project's files, and a copy of its Engine DB (the SQLite file,
// or a PostgreSQL database of its own made from the template).
func (q *quickstarts) copyOf(t *testing.T, kind engine.Kind) *e2e.Project {
	t.Helper()
	q.mu.Lock()
	f := q.made[kind]
	if f == nil {
		f = &quickstartFixture{}
		q.made[kind] = f
	}
	q.mu.Unlock()
	f.once.Do(func() { f.err = f.make(q.parent, kind) })
	if f.err != nil {
		t.Fatalf("setting up the quickstart project: %v", f.err)
	}
	p := &e2e.Project{T: t, Dir: t.TempDir(), Pair: e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}}
	copyTree(t, f.dir, p.Dir)
	if kind == engine.SQLite {
		p.Engine = engine.Options{Kind: engine.SQLite, Path: filepath.Join(p.Dir, "etl-craft-engine.db")}
		return p
	}
	usePostgres(p, enginetest.NewPGDatabaseFrom(t, f.database))
	return p
}

// make writes the quickstart project and sets it up on an Engine DB of the
// kind; the test t removes them when it ends.
func (f *quickstartFixture) make(t *testing.T, kind engine.Kind) error {
	f.dir = t.TempDir()
	if _, err := quickstart.Write(f.dir); err != nil {
		return err
	}
	p := &e2e.Project{T: t, Dir: f.dir, Pair: e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}}
	if kind == engine.Postgres {
		raw := enginetest.NewPGDatabase(t)
		u, _ := url.Parse(raw)
		f.database = strings.TrimPrefix(u.Path, "/")
		usePostgres(p, raw)
	}
	for _, args := range [][]string{{"setup"}, {"run", "--pipeline_code", quickstart.Pipeline}} {
		if r := p.Run(nil, args...); r.Code != 0 {
			return fmt.Errorf("etl-craft %s exited %d:\n%s%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
		}
	}
	return nil
}

// usePostgres points the project's Engine DB at the PostgreSQL database raw
// (an administrator URL), its password in ENGINE_SECRET.
func usePostgres(p *e2e.Project, raw string) {
	p.T.Helper()
	u, _ := url.Parse(raw)
	pw, _ := u.User.Password()
	yml, err := os.ReadFile(filepath.Join(p.Dir, "craft-connector.yml"))
	if err != nil {
		p.T.Fatal(err)
	}
	engineBlock := regexp.MustCompile(`(?m)^    jdbc_url: jdbc:(sqlite|postgresql):.*\n    schema: .*(\n    auth_mode: .*\n    user: .*\n    secret: .*)?$`)
	p.Write("craft-connector.yml", engineBlock.ReplaceAllLiteralString(string(yml), fmt.Sprintf(
		"    jdbc_url: jdbc:postgresql://%s%s?sslmode=disable\n    schema: public\n    auth_mode: password\n    user: %s\n    secret: ENGINE_SECRET",
		u.Host, u.Path, u.User.Username())))
	p.Env = []string{"ENGINE_SECRET=" + pw}
	p.Engine = engine.Options{Kind: engine.Postgres, DSN: raw, Schema: "public"}
}

// copyTree copies the files of one folder into another, leaving out the
// lock files beside the Engine DB.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		target := filepath.Join(to, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if strings.HasSuffix(path, ".lock") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot describes the project's databases, one line a row: every
// Engine DB table but AUD_ACTIONS (a refused request may be recorded, and
// its clone change-log entry with it), and every warehouse table with its
// row count.
func snapshot(p *e2e.Project) []string {
	p.T.Helper()
	var out []string
	db := p.DB()
	defer db.Close()
	tables, err := db.Tables(context.Background())
	if err != nil {
		p.T.Fatal(err)
	}
	for _, table := range tables {
		if strings.EqualFold(table, "AUD_ACTIONS") {
			continue
		}
		for _, row := range enginetest.Rows(p.T, db, "SELECT * FROM "+table) {
			if !strings.Contains(row, "|AUD_ACTIONS|") {
				out = append(out, table+": "+row)
			}
		}
	}
	file := filepath.Join(p.Dir, "warehouse.duckdb")
	if _, err := os.Stat(file); err != nil {
		return append(out, "no warehouse file")
	}
	wh, err := sql.Open("duckdb", file+"?access_mode=read_only")
	if err != nil {
		p.T.Fatal(err)
	}
	defer wh.Close()
	for _, table := range enginetest.Rows(p.T, wh, "SELECT table_schema || '.' || table_name FROM information_schema.tables") {
		out = append(out, "warehouse "+table+": "+enginetest.Rows(p.T, wh, "SELECT count(*) FROM "+table)[0]+" rows")
	}
	return out
}

// diffLines returns the lines only before has and those only after has.
func diffLines(before, after []string) (gone, added []string) {
	count := map[string]int{}
	for _, l := range before {
		count[l]++
	}
	for _, l := range after {
		count[l]--
	}
	for l, n := range count {
		for ; n > 0; n-- {
			gone = append(gone, l)
		}
		for ; n < 0; n++ {
			added = append(added, l)
		}
	}
	slices.Sort(gone)
	slices.Sort(added)
	return gone, added
}
