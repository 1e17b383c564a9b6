package sqltask_test

import (
	"context"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// mergeTarget sets staging.customers up for a merge action with SETUP_TABLE.
func (e *env) mergeTarget(action string) {
	e.t.Helper()
	e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", action, "TARGET_OBJECT", "staging.customers", "SOURCE_SQL", selectSrc))
}

func mergeTask(action string, kv ...string) map[string]string {
	return params(append([]string{"SQL_ACTION", action, "TARGET_OBJECT", "staging.customers", "MERGE_KEY", "id", "SOURCE_SQL", selectSrc}, kv...)...)
}

// W12: SCD1_MERGE over three runs: inserts, in-place updates of changed
// rows (their run ids change), unchanged rows left as they were.
func TestW12SCD1Merge(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)", "(2, 'b', 2)", "(3, 'c', 3)")
		e.mergeTarget("SCD1_MERGE")
		task := mergeTask("SCD1_MERGE")
		wantCounts(t, e.must(task), "source=3 target=3 insert=3 update=0 delete=- written=3")

		e.source("(1, 'a', 1)", "(2, 'B', 2)", "(3, 'c', 3)", "(4, 'd', 4)")
		wantCounts(t, e.must(task), "source=4 target=4 insert=1 update=1 delete=- written=2")
		const q = "SELECT id, name, task_run_id, delete_flag, created_by IS NOT NULL, update_date >= create_date FROM staging.customers ORDER BY id"
		e.wantRows(q, "1 a 102 N true true", "2 B 103 N true true", "3 c 102 N true true", "4 d 103 N true true")

		wantCounts(t, e.must(task), "source=4 target=4 insert=0 update=0 delete=- written=0")
		e.wantRows(q, "1 a 102 N true true", "2 B 103 N true true", "3 c 102 N true true", "4 d 103 N true true")
	})
}

// W12: PRESERVE_TARGET keeps the target's value where the source's is NULL,
// and the kept row counts as unchanged afterwards.
func TestW12PreserveTarget(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)", "(2, 'b', 2)")
		e.mergeTarget("SCD1_MERGE")
		task := mergeTask("SCD1_MERGE", "PRESERVE_TARGET", "true")
		e.must(task)
		e.source("(1, NULL, 5)", "(2, 'b', 2)")
		wantCounts(t, e.must(task), "source=2 target=2 insert=0 update=1 delete=- written=1")
		e.wantRows("SELECT id, name, CAST(amount AS VARCHAR) FROM staging.customers ORDER BY id", "1 a 5.00", "2 b 2.00")
		wantCounts(t, e.must(task), "source=2 target=2 insert=0 update=0 delete=- written=0")
		delete(task, "PRESERVE_TARGET")
		wantCounts(t, e.must(task), "source=2 target=2 insert=0 update=1 delete=- written=1")
		e.wantRows("SELECT id, name FROM staging.customers ORDER BY id", "1 NULL", "2 b")
	})
}

// W13: SCD2_MERGE keeps history: a changed key's active version is closed
// and a new one inserted; unchanged keys stay.
func TestW13SCD2Merge(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)", "(2, 'b', 2)")
		e.mergeTarget("SCD2_MERGE")
		task := mergeTask("SCD2_MERGE", "MERGE_COMPARE_COLUMNS", "name")
		wantCounts(t, e.must(task), "source=2 target=2 insert=2 update=0 delete=- written=2")
		e.source("(1, 'a', 9)", "(2, 'B', 2)", "(3, 'c', 3)")
		wantCounts(t, e.must(task), "source=3 target=4 insert=2 update=1 delete=- written=3")
		wantCounts(t, e.must(task), "source=3 target=4 insert=0 update=0 delete=- written=0")
		e.wantRows("SELECT id, name, CAST(amount AS VARCHAR), active_flag, task_run_id FROM staging.customers ORDER BY id, row_id",
			"1 a 1.00 Y 102", // amount is not compared
			"2 b 2.00 N 103", "2 B 2.00 Y 103", "3 c 3.00 Y 103")
	})
}

// W14: duplicate keys are refused unless MERGE_DEDUPE_ORDER picks a row,
// ties under that order are refused, identical duplicates are fine, and NULL
// keys are refused before anything is written.
func TestW14MergeKeyGuards(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)")
		e.mergeTarget("SCD1_MERGE")
		task := mergeTask("SCD1_MERGE")
		e.must(task)
		const q = "SELECT id, name, task_run_id FROM staging.customers ORDER BY id"
		before := e.rows(q)

		e.source("(1, 'x', 1)", "(1, 'y', 2)", "(2, 'n', 1)")
		_, err := e.run(task)
		wantGuard(t, err, "MERGE_KEY id has 1 value(s) with different rows in the SELECT: nothing was written")
		e.wantRows(q, before...)

		e.source("(1, 'x', 1)", "(1, 'y', 1)")
		_, err = e.run(mergeTask("SCD1_MERGE", "MERGE_DEDUPE_ORDER", "amount DESC"))
		wantGuard(t, err, `MERGE_DEDUPE_ORDER "amount DESC" ties between different rows for 1 id value(s)`)
		e.wantRows(q, before...)

		e.source("(1, 'x', 1)", "(1, 'y', 2)", "(2, 'n', 1)", "(2, 'n', 1)")
		wantCounts(t, e.must(mergeTask("SCD1_MERGE", "MERGE_DEDUPE_ORDER", "amount DESC")), "source=4 target=2 insert=1 update=1 delete=- written=2")
		e.wantRows("SELECT id, name FROM staging.customers ORDER BY id", "1 y", "2 n")
		before = e.rows(q)

		for _, action := range []string{"SCD1_MERGE", "SCD2_MERGE", "DELETE_ROWS"} {
			e.exec("DROP TABLE IF EXISTS staging.other")
			e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "SCD2_MERGE", "TARGET_OBJECT", "staging.other", "SOURCE_SQL", selectSrc))
			e.source("(NULL, 'x', 1)", "(3, 'z', 3)")
			task := mergeTask(action)
			task["TARGET_OBJECT"] = "staging.other"
			_, err = e.run(task)
			wantGuard(t, err, "MERGE_KEY id is NULL in 1 row(s) of the SELECT: nothing was written")
			e.wantRows(q, before...)
		}
	})
}

// W15: a new SELECT column is refused unless SCHEMA_EVOLUTION is true, which
// adds it; a column the SELECT no longer returns is refused.
func TestW15SchemaDrift(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)")
		e.mergeTarget("SCD1_MERGE")
		e.must(mergeTask("SCD1_MERGE"))
		wide := mergeTask("SCD1_MERGE", "SOURCE_SQL", "SELECT id, name, amount, DATE '2024-01-02' AS since FROM staging.src")
		_, err := e.run(wide)
		wantGuard(t, err, "the SELECT returns since, which the target lacks: set SCHEMA_EVOLUTION=true to add it")
		wide["SCHEMA_EVOLUTION"] = "true"
		wantCounts(t, e.must(wide), "source=1 target=1 insert=0 update=1 delete=- written=1")
		e.wantRows("SELECT id, CAST(since AS VARCHAR) FROM staging.customers", "1 2024-01-02")
		wantCounts(t, e.must(wide), "source=1 target=1 insert=0 update=0 delete=- written=0")

		_, err = e.run(mergeTask("SCD1_MERGE", "SOURCE_SQL", "SELECT id, name, DATE '2024-01-02' AS since FROM staging.src"))
		wantGuard(t, err, "the SELECT does not return amount, which the target has")

		e.exec("CREATE TABLE staging.wide (id INTEGER)")
		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.snapshot", "SOURCE_SQL", "SELECT id FROM staging.src"))
		over := params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", "staging.snapshot", "SOURCE_SQL", selectSrc)
		_, err = e.run(over)
		wantGuard(t, err, "the SELECT returns name, amount, which the target lacks")
		over["SCHEMA_EVOLUTION"] = "true"
		e.must(over)
		if got := e.columns("staging", "snapshot"); got != "ID,PIPELINE_ID,PIPELINE_RUN_ID,TASK_RUN_ID,UPDATE_DATE,ROW_ID,NAME,AMOUNT" {
			t.Fatalf("columns %s", got)
		}
	})
}

// W16: targets lacking their writer's audit columns are refused, a SELECT
// returning engine columns is refused for every action that takes one, and
// so are column names that need quoting.
func TestW16EngineColumns(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)")
		e.exec("CREATE TABLE staging.plain (id INTEGER, name VARCHAR, amount DECIMAL(10, 2), pipeline_id BIGINT, pipeline_run_id BIGINT, task_run_id BIGINT)")
		sqltask.NewEngineState(e.db, 0, 0).SetHashVersion(context.Background(), e.key("plain"), 2)
		_, err := e.run(params("SQL_ACTION", "SCD1_MERGE", "TARGET_OBJECT", "staging.plain", "MERGE_KEY", "id", "SOURCE_SQL", selectSrc))
		wantGuard(t, err, "the target lacks HASH_KEY, CREATE_DATE, CREATED_BY, UPDATE_DATE, UPDATED_BY, DELETE_FLAG, which SCD1_MERGE writes")
		e.exec("CREATE TABLE staging.legacy (id INTEGER, name VARCHAR, amount DECIMAL(10, 2), pipeline_run_id BIGINT, create_date TIMESTAMP)")
		_, err = e.run(params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.legacy", "SOURCE_SQL", selectSrc))
		wantGuard(t, err, "lacks PIPELINE_ID, TASK_RUN_ID, which APPEND_TABLE writes: run etl-craft upgrade-targets --target staging.legacy")

		e.mergeTarget("SCD2_MERGE")
		for _, action := range []string{"CREATE_TABLE", "SETUP_TABLE", "OVERWRITE_TABLE", "APPEND_TABLE", "SCD1_MERGE", "SCD2_MERGE", "DELETE_ROWS"} {
			_, err := e.run(params("SQL_ACTION", action, "TARGET_OBJECT", "staging.customers", "MERGE_KEY", "id", "SETUP_FOR", "SCD2_MERGE",
				"SOURCE_SQL", "SELECT id, name, amount, 1 AS pipeline_run_id, 2 AS row_id FROM staging.src"))
			wantGuard(t, err, "the SELECT returns pipeline_run_id, row_id, which etl-craft manages")
		}
		if n := e.value("SELECT COUNT(*) FROM staging.customers"); n != "0" {
			t.Fatalf("%s rows written", n)
		}

		_, err = e.run(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.odd", "SOURCE_SQL", `SELECT id + 1, name AS "my name" FROM staging.src`))
		wantGuard(t, err, "needs quoting")
		if e.opts.Kind == warehouse.Postgres {
			_, err = e.run(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.odd", "SOURCE_SQL", `SELECT id AS "Id" FROM staging.src`))
			wantGuard(t, err, `the SELECT's column "Id" needs quoting on postgres: name it with AS id`)
		}
	})
}

// W17: soft and hard DELETE_ROWS; already soft-deleted rows are left as
// they are, and a soft-deleted key comes back on the next merge.
func TestW17DeleteRows(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		for _, action := range []string{"SCD1_MERGE", "SCD2_MERGE"} {
			e.exec("DROP TABLE IF EXISTS staging.customers")
			e.source("(1, 'a', 1)", "(2, 'b', 2)", "(3, 'c', 3)")
			e.mergeTarget(action)
			merge := mergeTask(action)
			e.must(merge)

			del := params("SQL_ACTION", "DELETE_ROWS", "TARGET_OBJECT", "staging.customers", "MERGE_KEY", "id", "SOURCE_SQL", "SELECT 2 AS id")
			wantCounts(t, e.must(del), "source=1 target=3 insert=- update=- delete=1 written=1")
			wantCounts(t, e.must(del), "source=1 target=3 insert=- update=- delete=0 written=0")
			e.wantRows("SELECT id, delete_flag FROM staging.customers ORDER BY id", "1 N", "2 Y", "3 N")

			r := e.must(merge)
			if action == "SCD1_MERGE" {
				wantCounts(t, r, "source=3 target=3 insert=0 update=1 delete=- written=1")
				e.wantRows("SELECT id, delete_flag FROM staging.customers ORDER BY id", "1 N", "2 N", "3 N")
			} else {
				wantCounts(t, r, "source=3 target=4 insert=1 update=1 delete=- written=2")
				e.wantRows("SELECT id, delete_flag, active_flag FROM staging.customers ORDER BY id, row_id",
					"1 N Y", "2 Y N", "2 N Y", "3 N Y")
			}

			del["HARD_DELETE"] = "true"
			del["SOURCE_SQL"] = "SELECT id FROM staging.src WHERE id < 3"
			deleted := "2"
			if action == "SCD2_MERGE" {
				deleted = "3" // every version of the keys
			}
			wantCounts(t, e.must(del), "source=2 target=1 insert=- update=- delete="+deleted+" written="+deleted)
			e.wantRows("SELECT id FROM staging.customers", "3")
		}

		e.exec("CREATE TABLE staging.facts (id INTEGER, pipeline_id BIGINT, pipeline_run_id BIGINT, task_run_id BIGINT)")
		_, err := e.run(params("SQL_ACTION", "DELETE_ROWS", "TARGET_OBJECT", "staging.facts", "MERGE_KEY", "id", "SOURCE_SQL", "SELECT 1 AS id"))
		wantGuard(t, err, "set HARD_DELETE=true to delete the rows instead")
	})
}

// Merging needs change-hash version 2: a target whose version was cleared
// is refused until rehash.
func TestMergeNeedsHashVersion2(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)")
		e.mergeTarget("SCD1_MERGE")
		state := sqltask.NewEngineState(e.db, 0, 0)
		state.SetHashVersion(context.Background(), e.key("customers"), 0)
		_, err := e.run(mergeTask("SCD1_MERGE"))
		wantGuard(t, err, "its change hash is not recorded, and merging needs version 2: run etl-craft rehash --target staging.customers first")
		state.SetHashVersion(context.Background(), e.key("customers"), 1)
		_, err = e.run(mergeTask("SCD1_MERGE"))
		wantGuard(t, err, "its change hash is version 1")

		// A CREATE_TABLE of the target forgets its version.
		state.SetHashVersion(context.Background(), e.key("customers"), 2)
		e.must(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.customers", "SOURCE_SQL", selectSrc))
		if v, _ := state.HashVersion(context.Background(), e.key("customers")); v != 0 {
			t.Fatalf("hash version %d after CREATE_TABLE", v)
		}
	})
}

// Float compare columns are refused before anything is written.
func TestFloatCompareColumnsRefused(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)")
		sel := "SELECT id, CAST(amount AS DOUBLE PRECISION) AS ratio FROM staging.src"
		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "SCD1_MERGE", "TARGET_OBJECT", "staging.ratios", "SOURCE_SQL", sel))
		_, err := e.run(params("SQL_ACTION", "SCD1_MERGE", "TARGET_OBJECT", "staging.ratios", "MERGE_KEY", "id", "SOURCE_SQL", sel))
		wantGuard(t, err, "floats have no stable text form; cast to DECIMAL")
		if n := e.value("SELECT COUNT(*) FROM staging.ratios"); n != "0" {
			t.Fatalf("%s rows written", n)
		}
	})
}

// The same rows merged into DuckDB and PostgreSQL get the same HASH_KEYs.
func TestHashKeysAgreeAcrossWarehouses(t *testing.T) {
	t.Parallel()
	hashes := map[string][]string{}
	eachWarehouse(t, func(t *testing.T, e *env) {
		sel := `SELECT 1 AS id, 'é😀' AS name, CAST(12.34 AS DECIMAL(12, 4)) AS amount, false AS ok, DATE '2020-01-02' AS day,
			TIMESTAMP '2020-01-02 03:04:05.123456' AS at, CAST(NULL AS VARCHAR) AS note
			UNION ALL SELECT 2, '', CAST(0 AS DECIMAL(12, 4)), true, NULL, NULL, 'a|b:c'`
		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "SCD1_MERGE", "TARGET_OBJECT", "staging.typed", "SOURCE_SQL", sel))
		e.must(params("SQL_ACTION", "SCD1_MERGE", "TARGET_OBJECT", "staging.typed", "MERGE_KEY", "id", "SOURCE_SQL", sel))
		hashes[string(e.opts.Kind)] = e.rows("SELECT hash_key FROM staging.typed ORDER BY id")
	})
	if d, p := hashes["duckdb"], hashes["postgres"]; len(d) != 2 || strings.Join(d, ",") != strings.Join(p, ",") {
		t.Fatalf("DuckDB HASH_KEYs %v, PostgreSQL %v", d, p)
	}
}
