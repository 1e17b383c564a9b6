package sqltask_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// source makes staging.src (id, name, amount) hold the rows, each written as
// SQL values such as (1, 'a', 1.5).
func (e *env) source(rows ...string) {
	e.t.Helper()
	e.exec("DROP TABLE IF EXISTS staging.src", "CREATE TABLE staging.src (id INTEGER, name VARCHAR, amount DECIMAL(10, 2))")
	if len(rows) > 0 {
		e.exec("INSERT INTO staging.src VALUES " + strings.Join(rows, ", "))
	}
}

const selectSrc = "SELECT id, name, amount FROM staging.src"

// W09: CREATE_TABLE creates the target from the SELECT, appending the
// identity columns and ROW_ID; a second run replaces it.
func TestW09CreateTable(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1.5)", "(2, 'b', 2)")
		task := params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc)
		wantCounts(t, e.must(task), "source=2 target=2 insert=2 update=- delete=- written=2")
		if got := e.columns("staging", "orders"); got != "ID,NAME,AMOUNT,PIPELINE_ID,PIPELINE_RUN_ID,TASK_RUN_ID,ROW_ID" {
			t.Fatalf("columns %s", got)
		}
		run := e.value("SELECT CAST(MAX(pipeline_run_id) AS VARCHAR) FROM staging.orders")
		e.wantRows("SELECT id, name, CAST(amount AS VARCHAR), row_id, CAST(task_run_id AS VARCHAR), pipeline_id FROM staging.orders ORDER BY id",
			"1 a 1.50 1 101 1", "2 b 2.00 2 101 1")
		if run != "1" {
			t.Fatalf("PIPELINE_RUN_ID %s", run)
		}
		if n := e.scratchTables(); n != "0" {
			t.Fatalf("%s scratch tables left", n)
		}

		e.source("(3, 'c', 3)")
		wantCounts(t, e.must(task), "source=1 target=1 insert=1 update=- delete=- written=1")
		e.wantRows("SELECT id, row_id, task_run_id FROM staging.orders", "3 1 102")
	})
}

// W10: OVERWRITE_TABLE needs an existing target and replaces every row,
// stamping UPDATE_DATE.
func TestW10OverwriteTable(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1.5)", "(2, 'b', 2)")
		task := params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc)
		_, err := e.run(task)
		wantGuard(t, err, "does not exist. Only CREATE_TABLE and SETUP_TABLE create targets")

		wantCounts(t, e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc)),
			"source=- target=0 insert=- update=- delete=- written=0")
		if got := e.columns("staging", "orders"); got != "ID,NAME,AMOUNT,PIPELINE_ID,PIPELINE_RUN_ID,TASK_RUN_ID,UPDATE_DATE,ROW_ID" {
			t.Fatalf("columns %s", got)
		}
		wantCounts(t, e.must(task), "source=2 target=2 insert=2 update=- delete=- written=2")
		e.source("(7, 'z', 0)")
		wantCounts(t, e.must(task), "source=1 target=1 insert=1 update=- delete=- written=1")
		e.wantRows("SELECT id, name, task_run_id, update_date IS NOT NULL, pipeline_run_id FROM staging.orders", "7 z 104 true 1")
		if n := e.scratchTables(); n != "0" {
			t.Fatalf("%s scratch tables left", n)
		}
	})
}

// W11: APPEND_TABLE adds rows with their run ids, CREATE_DATE and
// continuing ROW_IDs; an extra SELECT column fails at the append.
func TestW11AppendTable(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1.5)", "(2, 'b', 2)")
		task := params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc)
		_, err := e.run(task)
		wantGuard(t, err, "does not exist")
		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc))
		if got := e.columns("staging", "orders"); got != "ID,NAME,AMOUNT,PIPELINE_ID,PIPELINE_RUN_ID,TASK_RUN_ID,CREATE_DATE,ROW_ID" {
			t.Fatalf("columns %s", got)
		}
		wantCounts(t, e.must(task), "source=2 target=2 insert=2 update=- delete=- written=2")
		e.source("(3, 'c', 3)")
		wantCounts(t, e.must(task), "source=1 target=3 insert=1 update=- delete=- written=1")
		e.wantRows("SELECT id, task_run_id, row_id, create_date IS NOT NULL FROM staging.orders ORDER BY row_id",
			"1 103 1 true", "2 103 2 true", "3 104 3 true")

		_, err = e.run(params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders",
			"SOURCE_SQL", "SELECT id, name, amount, 'x' AS extra FROM staging.src"))
		wantCode(t, err, 15, "append the SELECT's rows failed for staging.orders")
		if n := e.value("SELECT COUNT(*) FROM staging.orders"); n != "3" {
			t.Fatalf("%s rows after the failed append", n)
		}
	})
}

// An APPEND_TABLE attempt retried in the same task run replaces its own
// earlier batch: after a failure, and after an attempt whose rows committed.
func TestAppendRetriedInTheSameTaskRun(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1.5)", "(2, 'b', 2)")
		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc))
		task := params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders",
			"SOURCE_SQL", "SELECT id, name, CAST(CASE WHEN id = 2 THEN 'oops' ELSE '1' END AS DECIMAL(10, 2)) AS amount FROM staging.src")
		const run = 500
		if _, err := sqltask.New(e.db).Run(context.Background(), e.attempt(run, task)); err == nil {
			t.Fatal("the first attempt did not fail")
		}
		task["SOURCE_SQL"] = selectSrc
		for range 2 { // a second attempt, then a third after the second's rows committed
			r, err := sqltask.New(e.db).Run(context.Background(), e.attempt(run, task))
			if err != nil {
				t.Fatal(err)
			}
			wantCounts(t, r, "source=2 target=2 insert=2 update=- delete=- written=2")
		}
		e.wantRows("SELECT id, task_run_id FROM staging.orders ORDER BY id", "1 500", "2 500")
	})
}

// W18: DROP_TABLE drops only what a successful CREATE_TABLE task of this
// pipeline created in this run; dropping again is fine.
func TestW18DropTable(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1.5)")
		create := params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.scratch", "SOURCE_SQL", selectSrc)
		drop := params("SQL_ACTION", "DROP_TABLE", "TARGET_OBJECT", "staging.scratch")
		e.must(create)
		_, err := e.run(drop)
		wantGuard(t, err, "drops only a table that a CREATE_TABLE task of this pipeline created successfully in this run")
		if n := e.value("SELECT COUNT(*) FROM staging.scratch"); n != "1" {
			t.Fatalf("the refused drop left %s rows", n)
		}

		id := e.b.Task("P", "make_scratch", "SQL", create)
		e.b.Exec("INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS) VALUES ($1, $2, 'SUCCESS')", id, e.runID)
		for range 2 {
			wantCounts(t, e.must(drop), "source=- target=- insert=- update=- delete=- written=0")
		}
		if got := e.columns("staging", "scratch"); got != "" {
			t.Fatalf("the table is still there: %s", got)
		}
		// The sequence of a DuckDB ROW_ID went with it: creating it again numbers from 1.
		e.must(create)
		e.wantRows("SELECT row_id FROM staging.scratch", "1")
	})
}

// W18: SETUP_TABLE takes the audit columns of the pipeline's real writer,
// leaves an existing table alone and refuses conflicting writers.
func TestW18SetupTable(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1.5)")
		setup := params("SQL_ACTION", "SETUP_TABLE", "TARGET_OBJECT", "staging.customers", "SOURCE_SQL", selectSrc)
		_, err := e.run(setup)
		wantGuard(t, err, "no task of this pipeline writes the target")

		e.b.Task("P", "merge_customers", "SQL", params("SQL_ACTION", "SCD2_MERGE", "TARGET_OBJECT", "staging.customers", "MERGE_KEY", "id", "SOURCE_SQL", selectSrc))
		setup["SETUP_FOR"] = "APPEND_TABLE"
		_, err = e.run(setup)
		wantGuard(t, err, "SETUP_FOR is APPEND_TABLE, but this pipeline writes the target with SCD2_MERGE")
		delete(setup, "SETUP_FOR")
		e.must(setup)
		if got := e.columns("staging", "customers"); got != "ID,NAME,AMOUNT,PIPELINE_ID,PIPELINE_RUN_ID,TASK_RUN_ID,HASH_KEY,CREATE_DATE,CREATED_BY,UPDATE_DATE,UPDATED_BY,DELETE_FLAG,ACTIVE_FLAG,ROW_ID" {
			t.Fatalf("columns %s", got)
		}
		if v, _ := sqltask.NewEngineState(e.db, 0, 0).HashVersion(context.Background(), e.key("customers")); v != 2 {
			t.Fatalf("hash version %d after SETUP_TABLE of a merge target", v)
		}

		e.exec("INSERT INTO staging.customers (id) VALUES (9)")
		wantCounts(t, e.must(setup), "source=- target=1 insert=- update=- delete=- written=0")
		if got := e.columns("staging", "customers"); !strings.HasPrefix(got, "ID,NAME,AMOUNT,") {
			t.Fatalf("the existing table changed: %s", got)
		}

		e.b.Task("P", "append_customers", "SQL", params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.customers", "SOURCE_SQL", selectSrc))
		_, err = e.run(setup)
		wantGuard(t, err, "this pipeline's tasks write the target with APPEND_TABLE and SCD2_MERGE")
	})
}

// key returns the AUD_TARGET_HASH_VERSION key of staging.<table>.
func (e *env) key(table string) string {
	w := e.open()
	defer w.Close()
	return strings.ToLower(w.Catalog()) + ".staging." + table
}

// W22: ROW_IDs stay unique when appends to one target run at once.
func TestW22ConcurrentAppendsKeepRowIDsUnique(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)", "(2, 'b', 2)", "(3, 'c', 3)", "(4, 'd', 4)", "(5, 'e', 5)")
		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc))
		tasks := make([]*handler.Task, 4)
		for i := range tasks {
			tasks[i] = e.task(params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc))
		}
		start := make(chan struct{})
		errs := make(chan error, len(tasks))
		for _, task := range tasks {
			go func() {
				<-start
				_, err := sqltask.New(e.db).Run(context.Background(), task)
				errs <- err
			}()
		}
		close(start)
		for range tasks {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		e.wantRows("SELECT COUNT(*), COUNT(DISTINCT row_id), MIN(row_id), MAX(row_id) FROM staging.orders", "20 20 1 20")
	})
}

// statementLog is a log handler keeping the step and the text of each
// statement an attempt runs.
type statementLog struct{ steps, statements []string }

func (l *statementLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *statementLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *statementLog) WithGroup(string) slog.Handler            { return l }
func (l *statementLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "running a statement" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "step":
			l.steps = append(l.steps, a.Value.String())
		case "statement":
			l.statements = append(l.statements, a.Value.String())
		}
		return true
	})
	return nil
}

// statements runs a task that must succeed and returns the steps of the
// statements it ran, and whether any of them named a scratch table.
func (e *env) statements(p map[string]string) (steps string, scratch bool) {
	e.t.Helper()
	l := &statementLog{}
	task := e.task(p)
	task.Log = slog.New(l)
	if _, err := sqltask.New(e.db).Run(context.Background(), task); err != nil {
		e.t.Fatalf("%s: %v", p["SQL_ACTION"], err)
	}
	return strings.Join(l.steps, "|"), slices.ContainsFunc(l.statements, func(s string) bool { return strings.Contains(s, "etl_stage") })
}

// CREATE_TABLE and APPEND_TABLE write the SELECT's rows once. CREATE_TABLE
// reads the SELECT's columns, builds the replacement with one CREATE TABLE
// … AS SELECT, drops the old target (on DuckDB with the ROW_ID sequence an
// older definition had), renames the replacement in its place and counts
// its rows in one statement, numbering ROW_ID from 1; APPEND_TABLE inserts
// straight from the SELECT, staging nothing.
func TestSelectRowsWrittenOnce(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)", "(2, 'b', 2)", "(3, 'c', 3)", "(4, 'd', 4)", "(5, 'e', 5)")
		create := params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.orders",
			"SOURCE_SQL", "SELECT a.id * 10 + b.id AS id FROM staging.src a CROSS JOIN staging.src b")
		publish := "publish the replacement|publish the replacement|"
		if e.opts.Kind == warehouse.DuckDB {
			publish += "publish the replacement|"
		}
		want := "read the SELECT's columns|stage the SELECT|" + publish + "count the rows of orders"
		for range 2 {
			if steps, _ := e.statements(create); steps != want {
				t.Fatalf("CREATE_TABLE ran %s, want %s", steps, want)
			}
			e.wantRows("SELECT COUNT(*), COUNT(DISTINCT row_id), MIN(row_id), MAX(row_id), COUNT(DISTINCT id) FROM staging.orders", "25 25 1 25 25")
			if n := e.scratchTables(); n != "0" {
				t.Fatalf("%s scratch tables left", n)
			}
		}

		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "APPEND_TABLE", "TARGET_OBJECT", "staging.appended", "SOURCE_SQL", selectSrc))
		steps, scratch := e.statements(params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.appended", "SOURCE_SQL", selectSrc))
		if want := "read the SELECT's columns|remove this task run's earlier batch|append the SELECT's rows|count the rows of appended"; steps != want || scratch {
			t.Fatalf("APPEND_TABLE ran %s (scratch: %v), want %s", steps, scratch, want)
		}
	})
}

// A SELECT may read its own target: CREATE_TABLE and OVERWRITE_TABLE
// replace it with rows computed from the old ones, and APPEND_TABLE adds to
// it rows computed from the rows it had before this task run.
func TestSelectReadsItsTarget(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)", "(2, 'b', 2)")
		e.must(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc))
		next := "SELECT id + 10 AS id, name, amount FROM staging.orders"
		wantCounts(t, e.must(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", next)),
			"source=2 target=2 insert=2 update=- delete=- written=2")
		e.wantRows("SELECT id, name, row_id FROM staging.orders ORDER BY id", "11 a 1", "12 b 2")

		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.snapshot", "SOURCE_SQL", selectSrc))
		e.must(params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.snapshot", "SOURCE_SQL", selectSrc))
		wantCounts(t, e.must(params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.snapshot",
			"SOURCE_SQL", "SELECT id + 10 AS id, name, amount FROM staging.snapshot")),
			"source=2 target=2 insert=2 update=- delete=- written=2")
		e.wantRows("SELECT id, name FROM staging.snapshot ORDER BY id", "11 a", "12 b")

		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "APPEND_TABLE", "TARGET_OBJECT", "staging.appended", "SOURCE_SQL", selectSrc))
		e.must(params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.appended", "SOURCE_SQL", selectSrc))
		grow := params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.appended",
			"SOURCE_SQL", "SELECT id + 10 AS id, name, amount FROM staging.appended WHERE id < 10")
		for range 2 { // the retried attempt reads the target without its own earlier batch
			r, err := sqltask.New(e.db).Run(context.Background(), e.attempt(700, grow))
			if err != nil {
				t.Fatal(err)
			}
			wantCounts(t, r, "source=2 target=4 insert=2 update=- delete=- written=2")
		}
		e.wantRows("SELECT id, task_run_id = 700 FROM staging.appended ORDER BY id", "1 false", "2 false", "11 true", "12 true")
	})
}
