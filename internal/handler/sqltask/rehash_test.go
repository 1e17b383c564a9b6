package sqltask_test

import (
	"context"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
)

// rehash runs Rehash on the env's warehouse.
func (e *env) rehash(target string, dryRun bool) (sqltask.RehashResult, error) {
	w := e.open()
	defer w.Close()
	return sqltask.Rehash(context.Background(), e.db, w, target, dryRun)
}

// W08: a merge target whose hash version was cleared refuses merging; a dry
// run counts and shows the UPDATE without changing anything; rehash
// rewrites every HASH_KEY only and records version 2, after which an
// unchanged merge does nothing.
func TestW08Rehash(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		e.source("(1, 'a', 1)", "(2, 'b', 2)")
		merge := mergeTask("SCD2_MERGE", "MERGE_COMPARE_COLUMNS", "name|amount")
		e.b.Task("P", "merge_customers", "SQL", merge)
		e.mergeTarget("SCD2_MERGE")
		e.must(merge)
		e.source("(1, 'a', 1)", "(2, 'B', 2)")
		e.must(merge) // SCD2 history: three rows

		state := sqltask.NewEngineState(e.db, 0, 0)
		state.SetHashVersion(ctx, e.key("customers"), 0)
		e.exec("UPDATE staging.customers SET hash_key = 'version 1'")
		_, err := e.run(merge)
		wantGuard(t, err, "rehash --target staging.customers")

		const q = "SELECT id, name, hash_key, task_run_id, active_flag FROM staging.customers ORDER BY row_id"
		before := e.rows(q)
		r, err := e.rehash("staging.customers", true)
		if err != nil {
			t.Fatal(err)
		}
		if r.Rows != 3 || !strings.HasPrefix(r.SQL, "UPDATE ") || !strings.Contains(r.SQL, "MD5(") {
			t.Fatalf("dry run %+v", r)
		}
		e.wantRows(q, before...)
		if v, _ := state.HashVersion(ctx, e.key("customers")); v != 0 {
			t.Fatalf("the dry run recorded version %d", v)
		}

		if r, err = e.rehash("staging.customers", false); err != nil || r.Rows != 3 {
			t.Fatalf("rehash %+v, %v", r, err)
		}
		if v, _ := state.HashVersion(ctx, e.key("customers")); v != 2 {
			t.Fatalf("version %d after rehash", v)
		}
		after := e.rows(q)
		for i := range after {
			b, a := strings.Fields(before[i]), strings.Fields(after[i])
			if a[2] == "version" || len(a[2]) != 32 || a[0] != b[0] || a[1] != b[1] || a[len(a)-2] != b[len(b)-2] || a[len(a)-1] != b[len(b)-1] {
				t.Fatalf("row %d was %s, is %s: only HASH_KEY may change", i, before[i], after[i])
			}
		}
		wantCounts(t, e.must(merge), "source=2 target=3 insert=0 update=0 delete=- written=0")
	})
}

func TestRehashRefusals(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)")
		_, err := e.rehash("staging.customers", false)
		wantGuard(t, err, "no active SCD1_MERGE or SCD2_MERGE task writes staging.customers: rehash needs one common ordered merge contract")

		e.b.Task("P", "merge_a", "SQL", mergeTask("SCD1_MERGE", "MERGE_COMPARE_COLUMNS", "name|amount"))
		_, err = e.rehash("staging.customers", false)
		wantGuard(t, err, "the target")
		e.mergeTarget("SCD1_MERGE")
		e.b.Pipeline("Q", "FULL")
		e.b.Task("Q", "merge_b", "SQL", mergeTask("SCD1_MERGE", "MERGE_COMPARE_COLUMNS", "amount|name"))
		_, err = e.rehash("staging.customers", false)
		wantGuard(t, err, "P.merge_a and Q.merge_b merge into staging.customers with different MERGE_KEY or MERGE_COMPARE_COLUMNS: rehash needs one common ordered merge contract")

		sel := "SELECT id, CAST(amount AS DOUBLE PRECISION) AS ratio FROM staging.src"
		e.b.Task("P", "merge_ratios", "SQL", params("SQL_ACTION", "SCD1_MERGE", "TARGET_OBJECT", "staging.ratios", "MERGE_KEY", "id", "SOURCE_SQL", sel))
		e.must(params("SQL_ACTION", "SETUP_TABLE", "TARGET_OBJECT", "staging.ratios", "SOURCE_SQL", sel))
		_, err = e.rehash("staging.ratios", true)
		wantGuard(t, err, "column ratio (")
		wantGuard(t, err, "floats have no stable text form; cast to DECIMAL")

		_, err = e.rehash("ratios", true)
		wantCode(t, err, 2, "the target ratios is a bare table name")
	})
}

// upgrade runs UpgradeTargets on the env's warehouse.
func (e *env) upgrade(action, target string, dryRun bool) []sqltask.Upgrade {
	e.t.Helper()
	w := e.open()
	defer w.Close()
	ups, err := sqltask.UpgradeTargets(context.Background(), e.db, w, action, target, dryRun)
	if err != nil {
		e.t.Fatal(err)
	}
	return ups
}

// show lists upgrades as target:added columns, - when the target does not
// exist.
func show(ups []sqltask.Upgrade) string {
	var out []string
	for _, u := range ups {
		added := strings.ToUpper(strings.Join(u.Added, "|"))
		if !u.Exists {
			added = "-"
		}
		out = append(out, u.Target+":"+added)
	}
	return strings.Join(out, " ")
}

// upgrade-targets adds the missing identity columns to the configured
// targets that exist, nullable, leaving historical rows NULL.
func TestUpgradeTargets(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)")
		e.exec("CREATE TABLE staging.legacy (id INTEGER, name VARCHAR, amount DECIMAL(10, 2), pipeline_run_id BIGINT, create_date TIMESTAMP WITH TIME ZONE)",
			"INSERT INTO staging.legacy (id) VALUES (7)",
			"CREATE TABLE staging.landing (raw VARCHAR)")
		e.mergeTarget("SCD1_MERGE")
		if got := show(e.upgrade("", "", false)); got != "" {
			t.Fatalf("with no configured targets: %s", got)
		}
		e.b.Task("P", "append_legacy", "SQL", params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.legacy", "SOURCE_SQL", selectSrc))
		e.b.Task("P", "create_fresh", "SQL", params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.fresh", "SOURCE_SQL", selectSrc))
		e.b.Task("P", "drop_landing", "SQL", params("SQL_ACTION", "DROP_TABLE", "TARGET_OBJECT", "staging.landing"))
		e.b.Task("P", "merge_customers", "SQL", mergeTask("SCD1_MERGE"))
		e.b.Task("P", "load_landing", "PYTHON", params("SCRIPT_NAME", "load.py", "TARGET_OBJECT", "staging.landing"))

		dry := e.upgrade("", "", true)
		if got := show(dry); got != "staging.legacy:PIPELINE_ID|TASK_RUN_ID staging.fresh:- staging.landing:PIPELINE_ID|PIPELINE_RUN_ID|TASK_RUN_ID staging.customers:" {
			t.Fatalf("dry run %s", got)
		}
		if len(dry[0].SQL) != 2 || !strings.Contains(dry[0].SQL[0], "ALTER TABLE") || !strings.Contains(dry[0].SQL[0], "BIGINT") {
			t.Fatalf("statements %q", dry[0].SQL)
		}
		if got := e.columns("staging", "legacy"); got != "ID,NAME,AMOUNT,PIPELINE_RUN_ID,CREATE_DATE" {
			t.Fatalf("the dry run changed the table: %s", got)
		}
		if got := show(e.upgrade("APPEND_TABLE", "", false)); got != "staging.legacy:PIPELINE_ID|TASK_RUN_ID" {
			t.Fatalf("--action APPEND_TABLE: %s", got)
		}
		if got := show(e.upgrade("", "staging.LANDING", false)); got != "staging.landing:PIPELINE_ID|PIPELINE_RUN_ID|TASK_RUN_ID" {
			t.Fatalf("--target staging.landing: %s", got)
		}
		if got := show(e.upgrade("", "", false)); got != "staging.legacy: staging.fresh:- staging.landing: staging.customers:" {
			t.Fatalf("after upgrading: %s", got)
		}
		e.must(params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.legacy", "SOURCE_SQL", selectSrc))
		e.wantRows("SELECT id, task_run_id FROM staging.legacy ORDER BY id", "1 102", "7 NULL")

		w := e.open()
		defer w.Close()
		_, err := sqltask.UpgradeTargets(context.Background(), e.db, w, "DROP_TABLE", "", true)
		wantCode(t, err, 2, "--action DROP_TABLE: use one of CREATE_TABLE")
	})
}
