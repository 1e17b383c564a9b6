package sqltask_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
)

// check runs the handler's Check on a task with the parameters.
func check(dir string, p map[string]string) (failures, warnings []string) {
	return sqltask.New(nil).Check(&handler.Task{Params: p, ProjectDir: dir, PipelineID: 4, PipelineRunID: 7, TaskRunID: 9})
}

// wantProblem fails unless one of the problems holds text.
func wantProblem(t *testing.T, kind string, problems []string, text string) {
	t.Helper()
	if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, text) }) {
		t.Fatalf("no %s holds %q: %q", kind, text, problems)
	}
}

// Each token is substituted when its switch is true, refused otherwise, and
// left alone inside literals, quoted identifiers, comments and dollar bodies.
func TestTokens(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.exec("CREATE TABLE staging.events (pipeline_run_id BIGINT, v VARCHAR)",
			"INSERT INTO staging.events VALUES (1, 'mine'), (2, 'older')")
		sel := `SELECT $$pipeline_id AS pid, $$pipeline_run_id AS run, $$task_run_id AS trid, $$run_date AS day,
			'$$pipeline_id' AS literal, "$$task_run_id".v -- $$run_date in a comment
			/* $$unknown_token in a block */ FROM staging.events AS "$$task_run_id" WHERE $$pipeline_run_id_filter;`
		task := params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.tokens", "SOURCE_SQL", sel,
			"PIPELINE_ID_SUBSTITUTION", "true", "PIPELINE_RUN_ID_SUBSTITUTION", "true", "TASK_RUN_ID_SUBSTITUTION", "true",
			"RUN_DATE_SUBSTITUTION", "true", "PIPELINE_RUN_ID_FILTER", "true")
		wantCounts(t, e.must(task), "source=2 target=2 insert=2 update=- delete=- written=2")
		e.wantRows(`SELECT pid, run, trid, CAST(day AS VARCHAR), literal, v FROM staging.tokens ORDER BY v`,
			"1 1 101 2024-03-15 $$pipeline_id mine", "1 1 101 2024-03-15 $$pipeline_id older")

		e.refresh = "INCREMENTAL" // the filter reads this run's rows only
		wantCounts(t, e.must(task), "source=1 target=1 insert=1 update=- delete=- written=1")
		e.wantRows("SELECT v FROM staging.tokens", "mine")

		delete(task, "RUN_DATE_SUBSTITUTION")
		_, err := e.run(task)
		wantGuard(t, err, "SOURCE_SQL line 1 uses $$run_date, but RUN_DATE_SUBSTITUTION is not true")
	})
}

func TestTokenRules(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok := func(sql string, kv ...string) {
		t.Helper()
		if f, _ := check(dir, params(append([]string{"SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", sql}, kv...)...)); len(f) > 0 {
			t.Fatalf("%s: %q", sql, f)
		}
	}
	bad := func(sql, text string, kv ...string) {
		t.Helper()
		f, _ := check(dir, params(append([]string{"SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", sql}, kv...)...))
		wantProblem(t, "failure", f, text)
	}
	bad("SELECT $$pipeline_id", "uses $$pipeline_id, but PIPELINE_ID_SUBSTITUTION is not true")
	bad("SELECT $$pipeline_id", "uses $$pipeline_id, but PIPELINE_ID_SUBSTITUTION is not true", "PIPELINE_ID_SUBSTITUTION", "false")
	bad("SELECT 1", "PIPELINE_RUN_ID_SUBSTITUTION is true, but SOURCE_SQL never uses $$pipeline_run_id", "PIPELINE_RUN_ID_SUBSTITUTION", "true")
	bad("SELECT '$$task_run_id'", "TASK_RUN_ID_SUBSTITUTION is true, but SOURCE_SQL never uses $$task_run_id", "TASK_RUN_ID_SUBSTITUTION", "true")
	bad("SELECT 1 WHERE $$pipeline_id_filter", "$$pipeline_id_filter is not a token etl-craft knows; did you mean $$pipeline_run_id_filter?")
	bad("SELECT $$PIPELINE_ID", "$$PIPELINE_ID is not a token etl-craft knows; did you mean $$pipeline_id")
	bad("SELECT $$run_date", "RUN_DATE_SUBSTITUTION is \"yes\": write true or false", "RUN_DATE_SUBSTITUTION", "yes")
	bad("SELECT $$run_date", "RUN_DATE_SUBSTITUTION is \"True\": write true or false", "RUN_DATE_SUBSTITUTION", "True")
	ok("SELECT $$run_date", "RUN_DATE_SUBSTITUTION", "true", "PIPELINE_ID_SUBSTITUTION", "false")
	ok("SELECT '$$x', \"$$y\", $tag$ $$z $tag$, E'\\' $$w' -- $$v\n/* /* $$u */ $$t */")
	ok("SELECT $1::int, a$$b FROM t")
}

// The SELECT must be one read-only statement; comments and a trailing ;
// are fine.
func TestReadOnlyStatement(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := func(sql string) []string {
		f, _ := check(dir, params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", sql))
		return f
	}
	for _, sql := range []string{
		"SELECT 1;", "-- leading\nSELECT 1 -- trailing\n;\n-- after", "with x as (select 1 as a) select * from x",
		"VALUES (1), (2)", "TABLE s.t", "(SELECT 1)", "SELECT t.update, 'DELETE FROM x' AS s, \"insert\" FROM t",
	} {
		if got := f(sql); len(got) > 0 {
			t.Errorf("%q refused: %q", sql, got)
		}
	}
	for sql, text := range map[string]string{
		"":                   "SOURCE_SQL holds no statement",
		"-- only a comment":  "SOURCE_SQL holds no statement",
		"SELECT 1; SELECT 2": "SOURCE_SQL holds 2 statements",
		"DELETE FROM t":      "SOURCE_SQL starts with DELETE: it must be one read-only statement starting with SELECT, WITH, TABLE or VALUES",
		"WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d": "SOURCE_SQL may only read, but line 1 holds DELETE",
		"SELECT *\nINTO copy FROM t":                            "line 2 holds INTO",
		"SELECT * FROM t FOR UPDATE":                            "holds UPDATE",
		"SELECT 'unclosed":                                      "leaves a string literal open",
	} {
		wantProblem(t, "failure", f(sql), text)
	}
}

// SOURCE_SQL_FILE reads a file inside sql_files/ and nothing outside it.
func TestSourceSQLFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(path, text string) {
		full := filepath.Join(dir, path)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sql_files/orders/load.sql", "-- the orders\nSELECT $$run_date AS day;\n")
	write("secret.sql", "SELECT 1")
	if err := os.Symlink(filepath.Join(dir, "secret.sql"), filepath.Join(dir, "sql_files", "escape.sql")); err != nil {
		t.Fatal(err)
	}
	f := func(path string) []string {
		f, _ := check(dir, params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "s.t", "SOURCE_SQL_FILE", path, "RUN_DATE_SUBSTITUTION", "true"))
		return f
	}
	for _, ok := range []string{"orders/load.sql", "sql_files/orders/load.sql"} {
		if got := f(ok); len(got) > 0 {
			t.Errorf("%s: %q", ok, got)
		}
	}
	wantProblem(t, "failure", f("../secret.sql"), "climbs out with ..")
	wantProblem(t, "failure", f(filepath.Join(dir, "secret.sql")), "is absolute")
	wantProblem(t, "failure", f("escape.sql"), "leads outside sql_files/ through a symbolic link")
	wantProblem(t, "failure", f("missing.sql"), "does not exist in")

	write("sql_files/bad.sql", "SELECT $$run_date;\nDROP TABLE x;")
	wantProblem(t, "failure", f("bad.sql"), "SOURCE_SQL_FILE bad.sql holds 2 statements (the second starts on line 2)")
}

// Check reviews the parameters for validate: unknown ones warn with the
// nearest names; missing and conflicting ones fail.
func TestCheckParameters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f, w := check(dir, params("SQL_ACTION", "SCD1_MERGE", "TARGET_OBJECT", "staging.c", "SOURCE_SQL", "SELECT 1 AS id",
		"MERGE_KY", "id", "PIPELINE_ID_FILTER", "true", "HARD_DELETE", "true", "RETRIES", "2", "DOCUMENTATION", "x"))
	wantProblem(t, "warning", w, "MERGE_KY is not a parameter SQL tasks read; did you mean MERGE_KEY?")
	wantProblem(t, "warning", w, "PIPELINE_ID_FILTER is not a parameter SQL tasks read; did you mean PIPELINE_RUN_ID_FILTER")
	wantProblem(t, "warning", w, "HARD_DELETE is read only by DELETE_ROWS; SCD1_MERGE ignores it")
	wantProblem(t, "failure", f, "SCD1_MERGE needs MERGE_KEY")
	if len(w) != 3 {
		t.Fatalf("warnings %q", w)
	}

	cases := []struct {
		p    map[string]string
		want string
	}{
		{params("TARGET_OBJECT", "s.t"), "SQL_ACTION is missing"},
		{params("SQL_ACTION", "SCD3_MERGE", "TARGET_OBJECT", "s.t"), "SQL_ACTION SCD3_MERGE is not an action; did you mean SCD1_MERGE or SCD2_MERGE?"},
		{params("SQL_ACTION", "CREATE_TABLE", "SOURCE_SQL", "SELECT 1"), "TARGET_OBJECT is missing"},
		{params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "orders", "SOURCE_SQL", "SELECT 1"), "TARGET_OBJECT orders is a bare table name"},
		{params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "s.t"), "CREATE_TABLE needs its SELECT"},
		{params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1", "SOURCE_SQL_FILE", "x.sql"), "SOURCE_SQL and SOURCE_SQL_FILE are both set"},
		{params("SQL_ACTION", "DROP_TABLE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1"), "DROP_TABLE takes no SELECT: remove SOURCE_SQL"},
		{params("SQL_ACTION", "SETUP_TABLE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1", "SETUP_FOR", "DELETE_ROWS"), "SETUP_FOR DELETE_ROWS is not a writing action"},
		{params("SQL_ACTION", "SCD2_MERGE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1", "MERGE_KEY", "id|ID"), "names ID twice"},
		{params("SQL_ACTION", "SCD2_MERGE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1", "MERGE_KEY", "id", "MERGE_DEDUPE_ORDER", "x; DROP TABLE t"), "MERGE_DEDUPE_ORDER holds a semicolon"},
		{params("SQL_ACTION", "SCD2_MERGE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1", "MERGE_KEY", "id", "MERGE_DEDUPE_ORDER", "x -- y"), "MERGE_DEDUPE_ORDER holds a comment"},
		{params("SQL_ACTION", "SCD2_MERGE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1", "MERGE_KEY", "id", "MERGE_DEDUPE_ORDER", "f(x"), "unbalanced parentheses"},
		{params("SQL_ACTION", "SCD1_MERGE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1", "MERGE_KEY", "id", "PRESERVE_TARGET", "1"), `PRESERVE_TARGET is "1": write true or false`},
		{params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1", "TABLE_FORMAT", "delta"), `TABLE_FORMAT is "delta"`},
		{params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "s.t", "SOURCE_SQL", "SELECT 1", "EXTERNAL_VOLUME", "v"), "EXTERNAL_VOLUME and BASE_LOCATION go together"},
	}
	for _, c := range cases {
		f, _ := check(dir, c.p)
		wantProblem(t, "failure", f, c.want)
	}
}

// A problem Check finds stops the run as a SQL guard error, before the
// warehouse is opened.
func TestRunRefusesWhatCheckFails(t *testing.T) {
	t.Parallel()
	e := &env{t: t, dir: t.TempDir()}
	task := e.attempt(1, params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "orders", "SOURCE_SQL", "DELETE FROM x"))
	task.Warehouse = nil
	_, err := sqltask.New(e.db).Run(t.Context(), task)
	wantGuard(t, err, "TARGET_OBJECT orders is a bare table name")
	wantGuard(t, err, "SOURCE_SQL starts with DELETE")
}

// Targets resolve in the warehouse's own database; storage settings and
// Iceberg are refused on these warehouses.
func TestTargetNames(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)")
		w := e.open()
		catalog := w.Catalog()
		w.Close()
		e.must(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", catalog+".staging.Orders", "SOURCE_SQL", selectSrc))
		e.wantRows("SELECT COUNT(*) FROM staging.orders", "1")
		_, err := e.run(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "elsewhere.staging.orders", "SOURCE_SQL", selectSrc))
		wantGuard(t, err, "names the database elsewhere, but the warehouse writes to "+catalog)
		_, err = e.run(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc, "EXTERNAL_LOCATION", "s3://x"))
		wantGuard(t, err, "EXTERNAL_LOCATION names storage for Iceberg and external tables")
		_, err = e.run(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc, "TABLE_FORMAT", "iceberg"))
		wantGuard(t, err, "TABLE_FORMAT iceberg: SQL tasks on the "+string(e.opts.Kind)+" warehouse create native tables")
	})
}
