package rules_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/rules"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// A rule flags the breaking keys of its run's rows with its type, and clears
// them once they pass or have no row left; only this run's rows are newly
// flagged, and bind parameters are bound.
func TestFlagAndClear(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.rule("negative", 1, "REJECT", negative)
		// A :: cast is not a parameter; :pipeline_run_id is bound.
		e.rule("other_run", 1, "REPORT", "SELECT 1 WHERE t.pipeline_run_id::BIGINT <> :pipeline_run_id")
		r1, tr1 := e.newRun()
		e.exec(fmt.Sprintf("INSERT INTO staging.orders VALUES (1, 10, %d), (2, -1, %d), (3, -3, %d)", r1, r1, r1))
		e.must(r1, tr1, plain, "insert=2 update=0 written=0 RULES_CHECKED=2 RULES_ALREADY_SUCCEEDED=0")
		e.wantFlags("negative 2 REJECT", "negative 3 REJECT")
		if got := e.runLog(tr1); got != "negative SUCCESS, other_run SUCCESS" {
			t.Fatalf("run log %s", got)
		}

		// Run 2 rewrites 2 (now passing) and adds 4 (breaking); 3 is gone.
		r2, tr2 := e.newRun()
		e.exec(fmt.Sprintf("UPDATE staging.orders SET amount = 5, pipeline_run_id = %d WHERE id = 2", r2),
			"DELETE FROM staging.orders WHERE id = 3",
			fmt.Sprintf("INSERT INTO staging.orders VALUES (4, -4, %d)", r2))
		e.must(r2, tr2, plain, "insert=1 update=2 written=0 RULES_CHECKED=2 RULES_ALREADY_SUCCEEDED=0")
		e.wantFlags("negative 4 REJECT")
		e.wantCleared("negative 2", "negative 3")
		// Each flag names the rule's run that raised it and its target.
		got := e.query(`SELECT s.BUSINESS_RULE_KEY, s.TARGET_TABLE FROM AUD_BUSINESS_RULES_RESULTS s
JOIN AUD_BUSINESS_RULES_RUN_LOG l ON l.BUSINESS_RULE_RUN_ID = s.BUSINESS_RULE_RUN_ID WHERE l.TASK_RUN_ID = $1`, tr2)
		if len(got) != 1 || got[0] != "4 staging.orders" {
			t.Fatalf("flags of run 2: %v", got)
		}
	})
}

// Every standing flag is checked again on each run, not only the rows of
// this run: a key fixed by hand is cleared by the next run.
func TestStandingFlagRecheck(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.rule("negative", 1, "INCOMPLETE", negative)
		r1, tr1 := e.newRun()
		e.exec(fmt.Sprintf("INSERT INTO staging.orders VALUES (1, -1, %d), (2, -2, %d)", r1, r1))
		e.must(r1, tr1, plain, "insert=2 update=0 written=0 RULES_CHECKED=1 RULES_ALREADY_SUCCEEDED=0")
		e.exec("UPDATE staging.orders SET amount = 1 WHERE id = 1")
		r2, tr2 := e.newRun()
		e.must(r2, tr2, plain, "insert=0 update=1 written=0 RULES_CHECKED=1 RULES_ALREADY_SUCCEEDED=0")
		e.wantFlags("negative 2 INCOMPLETE")
		e.wantCleared("negative 1")
	})
}

// Forced, a rule checks every row of its target, not only this run's.
func TestForceChecksTheWholeTable(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		r1, _ := e.newRun()
		e.exec(fmt.Sprintf("INSERT INTO staging.orders VALUES (1, -1, %d), (2, 2, %d)", r1, r1))
		e.rule("negative", 1, "REJECT", negative)
		r2, tr2 := e.newRun()
		e.must(r2, tr2, plain, "insert=0 update=0 written=0 RULES_CHECKED=1 RULES_ALREADY_SUCCEEDED=0")
		e.wantFlags()
		r3, tr3 := e.newRun()
		e.must(r3, tr3, forced, "insert=1 update=0 written=0 RULES_CHECKED=1 RULES_ALREADY_SUCCEEDED=0")
		e.wantFlags("negative 1 REJECT")
	})
}

// On a target with ACTIVE_FLAG only the active versions are checked: a key
// whose breaking version was closed is not flagged, and its flag is cleared.
func TestActiveVersionsOnly(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.exec("ALTER TABLE staging.orders ADD COLUMN active_flag VARCHAR")
		e.rule("negative", 1, "REJECT", negative)
		r1, tr1 := e.newRun()
		e.exec(fmt.Sprintf("INSERT INTO staging.orders VALUES (1, -1, %d, 'N'), (1, 1, %d, 'Y'), (2, -2, %d, 'Y')", r1, r1, r1))
		e.must(r1, tr1, plain, "insert=1 update=0 written=0 RULES_CHECKED=1 RULES_ALREADY_SUCCEEDED=0")
		e.wantFlags("negative 2 REJECT")
		// Run 2 closes 2's breaking version and writes a passing one.
		r2, tr2 := e.newRun()
		e.exec("UPDATE staging.orders SET active_flag = 'N' WHERE id = 2",
			fmt.Sprintf("INSERT INTO staging.orders VALUES (2, 2, %d, 'Y')", r2))
		e.must(r2, tr2, plain, "insert=0 update=1 written=0 RULES_CHECKED=1 RULES_ALREADY_SUCCEEDED=0")
		e.wantFlags()
		e.wantCleared("negative 2")
	})
}

// Waves run in ascending SEQUENCE_NUMBER order, each rule in its own run
// row; a failed rule fails the task after its wave, whose other rules
// commit, and the later waves are skipped. Another attempt of the task run
// checks only the rules that did not succeed; a forced one checks them all.
func TestWavesFailureAndReruns(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.rule("a_negative", 1, "REJECT", negative)
		e.rule("b_broken", 1, "REJECT", "SELECT 1 WHERE t.no_such_column = 1")
		e.rule("c_large", 2, "REPORT", "SELECT 1 WHERE t.amount > 100")
		r1, tr1 := e.newRun()
		e.exec(fmt.Sprintf("INSERT INTO staging.orders VALUES (1, -1, %d), (2, 200, %d)", r1, r1))
		res, err := e.attempt(r1, tr1, plain, 4)
		wantCode(t, err, exit.Handler, "business rule b_broken failed on staging.orders")
		if got := counts(res); got != "insert=1 update=0 written=0 RULES_CHECKED=1 RULES_ALREADY_SUCCEEDED=0" {
			t.Fatalf("counts %s", got)
		}
		if got := e.runLog(tr1); got != "a_negative SUCCESS, b_broken FAILED, c_large SKIPPED" {
			t.Fatalf("run log %s", got)
		}
		e.wantFlags("a_negative 1 REJECT")

		// The rule is fixed; the next attempt skips a_negative.
		e.b.Exec("UPDATE CFG_BUSINESS_RULES SET BUSINESS_RULE_SQL = 'SELECT 1 WHERE t.amount = 0' WHERE BUSINESS_RULE_NAME = 'b_broken'")
		e.must(r1, tr1, plain, "insert=1 update=0 written=0 RULES_CHECKED=2 RULES_ALREADY_SUCCEEDED=1")
		if got := e.runLog(tr1); got != "a_negative SUCCESS, b_broken SUCCESS, c_large SUCCESS" {
			t.Fatalf("run log %s", got)
		}
		e.wantFlags("a_negative 1 REJECT", "c_large 2 REPORT")
		// The second wave started after the first had ended.
		order := e.query(`SELECT r.BUSINESS_RULE_NAME FROM AUD_BUSINESS_RULES_RUN_LOG l
JOIN CFG_BUSINESS_RULES r ON r.BUSINESS_RULE_ID = l.BUSINESS_RULE_ID
WHERE l.TASK_RUN_ID = $1 AND r.SEQUENCE_NUMBER = 2
  AND l.START_DATE >= (SELECT MAX(x.END_DATE) FROM AUD_BUSINESS_RULES_RUN_LOG x
    JOIN CFG_BUSINESS_RULES y ON y.BUSINESS_RULE_ID = x.BUSINESS_RULE_ID WHERE x.TASK_RUN_ID = $1 AND y.SEQUENCE_NUMBER = 1)`, tr1)
		if len(order) != 1 {
			t.Fatalf("wave 2 did not start after wave 1 ended: %v", order)
		}

		// A rerun (--rerun) checks every rule again, on this run's rows and
		// the standing flags only: a breaking row of another run is left to
		// --force.
		e.exec("UPDATE staging.orders SET amount = 1 WHERE id = 1", fmt.Sprintf("INSERT INTO staging.orders VALUES (3, -3, %d)", r1+1))
		e.must(r1, tr1, rerun, "insert=0 update=1 written=0 RULES_CHECKED=3 RULES_ALREADY_SUCCEEDED=0")
		e.wantFlags("c_large 2 REPORT")
		if n := e.query("SELECT COUNT(*) FROM AUD_BUSINESS_RULES_RUN_LOG WHERE TASK_RUN_ID = $1", tr1); n[0] != "3" {
			t.Fatalf("%s run rows, want one per rule", n[0])
		}
		e.must(r1, tr1, forced, "insert=1 update=0 written=0 RULES_CHECKED=3 RULES_ALREADY_SUCCEEDED=0")
		e.wantFlags("a_negative 3 REJECT", "c_large 2 REPORT")
	})
}

// The rules of a wave run at the same time: on PostgreSQL each of two
// rules counts itself in and waits until both are in, which only parallel
// rules can satisfy.
func TestParallelRules(t *testing.T) {
	e := newEnv(t, warehouse.Postgres, engine.SQLite)
	e.exec("CREATE SEQUENCE staging.arrivals", `CREATE FUNCTION staging.meet() RETURNS BOOLEAN LANGUAGE plpgsql AS $$
BEGIN
  PERFORM nextval('staging.arrivals');
  FOR i IN 1..200 LOOP
    IF (SELECT last_value FROM staging.arrivals) >= 2 THEN
      RETURN FALSE;
    END IF;
    PERFORM pg_sleep(0.05);
  END LOOP;
  RAISE EXCEPTION 'the other rule never ran beside this one';
END $$`)
	e.rule("left", 1, "REPORT", "SELECT 1 WHERE staging.meet()")
	e.rule("right", 1, "REPORT", "SELECT 1 WHERE staging.meet()")
	r1, tr1 := e.newRun()
	e.exec(fmt.Sprintf("INSERT INTO staging.orders VALUES (1, 1, %d)", r1))
	e.must(r1, tr1, plain, "insert=0 update=0 written=0 RULES_CHECKED=2 RULES_ALREADY_SUCCEEDED=0")

	// One at a time, the first rule waits in vain.
	e.exec("ALTER SEQUENCE staging.arrivals RESTART WITH 1")
	r2, tr2 := e.newRun()
	e.exec(fmt.Sprintf("INSERT INTO staging.orders VALUES (2, 1, %d)", r2))
	_, err := e.attempt(r2, tr2, plain, 1)
	wantCode(t, err, exit.Handler, "the other rule never ran beside this one")
}

// A rule naming an unknown bind parameter or a missing key column fails,
// naming the rule.
func TestRuleProblems(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.rule("unknown_param", 1, "REJECT", "SELECT 1 WHERE t.id = :order_id")
		r1, tr1 := e.newRun()
		e.exec(fmt.Sprintf("INSERT INTO staging.orders VALUES (1, 1, %d)", r1))
		_, err := e.attempt(r1, tr1, plain, 2)
		wantCode(t, err, exit.Metadata, "business rule unknown_param: BUSINESS_RULE_SQL line 1 uses :order_id")
		e.b.Exec("UPDATE CFG_BUSINESS_RULES SET BUSINESS_RULE_SQL = $1, BUSINESS_RULE_KEY_COLUMN = 'order_id'", negative)
		_, err = e.attempt(r1, tr1, plain, 2)
		wantCode(t, err, exit.Metadata, "has no column order_id (BUSINESS_RULE_KEY_COLUMN)")
	})
}

// validate's Check reports the rules whose SQL cannot run: several
// statements, an open literal, an unknown bind parameter; and a task
// without rules or with parameters it does not read.
func TestCheck(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := pipelinetest.New(t, db)
		pipe := b.Pipeline("P", "FULL")
		params := map[string]string{"SQL_ACTION": "CREATE_TABLE", "RETRIES": "1"}
		task := b.Task("P", "check", pipeline.HandlerBusinessRules, params)
		h := rules.New(db, 2)
		check := func() string {
			failures, warnings := h.Check(&handler.Task{PipelineID: pipe, PipelineCode: "P", TaskCode: "check", Params: params})
			return strings.Join(append(failures, warnings...), "\n")
		}
		if got, want := check(), "SQL_ACTION is not a parameter BUSINESS_RULES tasks read: their rules are the CFG_BUSINESS_RULES rows of the task\n"+
			"the task has no active business rules: add CFG_BUSINESS_RULES rows for it"; got != want {
			t.Fatalf("Check:\n%s\nwant\n%s", got, want)
		}
		for i, sql := range []string{negative + ";", "SELECT 1;\nSELECT 2", "SELECT 1 WHERE t.name = 'x", "SELECT 1\nWHERE t.id = :order_id AND t.run::BIGINT = :pipeline_run_id"} {
			b.Exec(`INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
  BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER) VALUES ($1, $2, $3, $4, 'REJECT', 'id', 'staging.orders', 1)`,
				fmt.Sprintf("r%d", i), pipe, task, sql)
		}
		want := "business rule r1: BUSINESS_RULE_SQL holds 2 statements (the second starts on line 2): write one correlated SELECT on the target row t\n" +
			"business rule r2: BUSINESS_RULE_SQL leaves a string literal open\n" +
			"business rule r3: BUSINESS_RULE_SQL line 2 uses :order_id, which is not a bind parameter etl-craft knows (parameters: :pipeline_id, :pipeline_run_id, :task_run_id, :run_date)\n" +
			"SQL_ACTION is not a parameter BUSINESS_RULES tasks read: their rules are the CFG_BUSINESS_RULES rows of the task"
		if got := check(); got != want {
			t.Fatalf("Check:\n%s\nwant\n%s", got, want)
		}
	})
}

// Against the warehouse, validate's review finds a rule whose target table
// is missing, whose key column is missing, or whose SQL does not parse or
// does not run there (an unknown column: the text alone is fine); a good
// rule, and a rule whose text Check already refuses (an unknown bind
// parameter), add nothing; nothing is recorded.
func TestCheckWarehouseFindsMissingTablesColumnsAndBrokenSQL(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.rule("a_good", 1, "REJECT", negative)
		e.rule("b_unknown_column", 1, "REJECT", "SELECT 1 WHERE t.no_such_column < 0")
		e.rule("c_unclosed", 1, "REJECT", "SELECT 1 WHERE (t.amount < 0")
		e.rule("c_unknown_parameter", 1, "REJECT", "SELECT 1 WHERE t.amount < :nope")
		e.b.Exec(`INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
  BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER) VALUES
  ('d_no_table', $1, $2, 'SELECT 1', 'REJECT', 'id', 'staging.nowhere', 2),
  ('e_no_key', $1, $2, 'SELECT 1', 'REJECT', 'order_id', 'staging.orders', 2)`, e.pipeID, e.taskID)
		e.exec("INSERT INTO staging.orders VALUES (1, -1, 1)")
		ctx := context.Background()
		w, err := warehouse.Open(ctx, e.opts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		h := rules.New(e.db, 4)
		task := &handler.Task{PipelineID: e.pipeID, PipelineCode: "P", TaskCode: "check"}
		checkFailures, _ := h.Check(task)
		failures, warnings, notes := h.(handler.WarehouseChecker).CheckWarehouse(ctx, w, task)
		if len(failures) != 4 || len(warnings) != 0 || len(notes) != 0 {
			t.Fatalf("failures %q warnings %q notes %q", failures, warnings, notes)
		}
		for i, want := range []string{"business rule b_unknown_column: BUSINESS_RULE_SQL does not run against staging.orders: ",
			"business rule c_unclosed: BUSINESS_RULE_SQL does not run against staging.orders: ",
			"business rule d_no_table: the TARGET_TABLE staging.nowhere does not exist, and no task that runs before check creates it",
			"business rule e_no_key: the TARGET_TABLE staging.orders has no column order_id (BUSINESS_RULE_KEY_COLUMN)"} {
			if !strings.HasPrefix(failures[i], want) {
				t.Errorf("failure %d: %q, want %q…", i, failures[i], want)
			}
		}
		if !strings.Contains(failures[0], "no_such_column") || !strings.Contains(strings.ToLower(failures[1]), "syntax error") ||
			len(checkFailures) != 1 || !strings.Contains(checkFailures[0], "c_unknown_parameter") {
			t.Errorf("failures %q; Check's %q", failures, checkFailures)
		}
		if got := e.query("SELECT COUNT(*) FROM AUD_BUSINESS_RULES_RUN_LOG"); fmt.Sprint(got) != "[0]" {
			t.Errorf("the review recorded rule runs: %v", got)
		}
	})
}

// A rule's target table that does not exist yet is no failure when a task
// that runs before the rules task creates it: then what can be checked is.
// An SQL task whose SELECT the warehouse can describe must give the table
// the rule's key column; one whose SELECT reads a table not made yet, or a
// script, leaves the key column and the rule's SQL to the first run. The
// rules about one table and creator share one note.
func TestCheckWarehouseAcceptsATableATaskUpstreamCreates(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.b.Exec(`INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
  BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER) VALUES
  ('a_made', $1, $2, 'SELECT 1 WHERE t.amount < 0', 'REJECT', 'id', 'staging.made', 1),
  ('b_made_too', $1, $2, 'SELECT 1 WHERE t.amount > 9', 'REPORT', 'id', 'staging.made', 1),
  ('c_wrong_key', $1, $2, 'SELECT 1', 'REJECT', 'order_id', 'staging.made', 1),
  ('d_later', $1, $2, 'SELECT 1', 'REJECT', 'id', 'staging.later', 2),
  ('e_landed', $1, $2, 'SELECT 1', 'REJECT', 'id', 'staging.landed', 2),
  ('f_appended_only', $1, $2, 'SELECT 1', 'REJECT', 'id', 'staging.appended', 2)`, e.pipeID, e.taskID)
		ctx := context.Background()
		w, err := warehouse.Open(ctx, e.opts)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		task := &handler.Task{PipelineID: e.pipeID, PipelineCode: "P", TaskCode: "check", Upstream: []handler.Upstream{
			{PipelineCode: "P", TaskCode: "make", Handler: pipeline.HandlerSQL, Params: map[string]string{
				"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "staging.made", "SOURCE_SQL": "SELECT 1 AS id, 2 AS amount"}},
			{PipelineCode: "P", TaskCode: "setup_later", Handler: pipeline.HandlerSQL, Params: map[string]string{
				"SQL_ACTION": "SETUP_TABLE", "TARGET_OBJECT": "staging.later", "SOURCE_SQL": "SELECT id FROM staging.not_made_yet"}},
			{PipelineCode: "UP", TaskCode: "land", Handler: pipeline.HandlerPython, Params: map[string]string{
				"SCRIPT_NAME": "land.py", "TARGET_OBJECT": "staging.landed"}},
			{PipelineCode: "P", TaskCode: "append", Handler: pipeline.HandlerSQL, Params: map[string]string{
				"SQL_ACTION": "APPEND_TABLE", "TARGET_OBJECT": "staging.appended", "SOURCE_SQL": "SELECT 1 AS id"}},
		}}
		failures, warnings, notes := rules.New(e.db, 4).(handler.WarehouseChecker).CheckWarehouse(ctx, w, task)
		wantFailures := []string{
			"business rule c_wrong_key: the TARGET_TABLE staging.made does not exist yet, and P.make (CREATE_TABLE), which runs before check, creates it without the column order_id (BUSINESS_RULE_KEY_COLUMN): it will have id, amount, ",
			"business rule f_appended_only: the TARGET_TABLE staging.appended does not exist, and no task that runs before check creates it",
		}
		wantNotes := []string{
			"business rules a_made and b_made_too: the TARGET_TABLE staging.made does not exist yet: P.make (CREATE_TABLE), which runs before check, creates it with the key column id; the rule's SQL is checked at its first run",
			"business rule d_later: the TARGET_TABLE staging.later does not exist yet: P.setup_later (SETUP_TABLE), which runs before check, creates it; its SELECT cannot be described before the tables it reads exist (",
			"business rule e_landed: the TARGET_TABLE staging.landed does not exist yet: UP.land (PYTHON), which runs before check, creates it; its columns are known once it has run, so the key column id and the rule's SQL are checked at its first run",
		}
		if len(failures) != len(wantFailures) || len(notes) != len(wantNotes) || len(warnings) != 0 {
			t.Fatalf("failures %q\nwarnings %q\nnotes %q", failures, warnings, notes)
		}
		for i, want := range wantFailures {
			if !strings.HasPrefix(failures[i], want) {
				t.Errorf("failure %d:\n%s\nwant\n%s…", i, failures[i], want)
			}
		}
		for i, want := range wantNotes {
			if !strings.HasPrefix(notes[i], want) {
				t.Errorf("note %d:\n%s\nwant\n%s…", i, notes[i], want)
			}
		}
		if !strings.Contains(notes[1], "not_made_yet") || !strings.HasSuffix(notes[1], "), so the key column id and the rule's SQL are checked at its first run") {
			t.Errorf("the note of an undescribable SELECT: %q", notes[1])
		}
	})
}
