package schema_test

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	snapshots "github.com/etl-craft/etl-craft/internal/engine/catalog"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/engine/schema"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// engineTables are the 30 tables of the Engine DB: 7 CFG_, 19 AUD_, the
// clone's change log and state, the console's sessions, and the ledger.
var engineTables = []string{
	"AUD_ACTIONS", "AUD_BUSINESS_RULES_RESULTS", "AUD_BUSINESS_RULES_RUN_LOG", "AUD_COLUMN_LINEAGE",
	"AUD_DEPENDENCY_CONSUMPTION", "AUD_DOCS_PUBLICATION", "AUD_GATE_DECISIONS", "AUD_GATE_WAITS",
	"AUD_METADATA_CHANGES", "AUD_OVERSEERS", "AUD_PIPELINES_RUN_LOG", "AUD_PIPELINE_PAUSES",
	"AUD_RUN_INTERVENTIONS", "AUD_TARGET_HASH_VERSION", "AUD_TARGET_VIEW_STATEMENT", "AUD_TASK_ATTEMPTS",
	"AUD_TASK_DOCUMENTATION", "AUD_TASK_OFFSET_TRACKER", "AUD_TASK_RUN_LOG",
	"CFG_API_TOKENS", "CFG_BUSINESS_RULES", "CFG_PIPELINES", "CFG_PIPELINE_DEPENDENCY",
	"CFG_TASKS", "CFG_TASK_DEPENDENCY", "CFG_TASK_PARAMETERS",
	"CLONE_CHANGES", "CLONE_STATE", "CONSOLE_SESSIONS", "SCHEMA_MIGRATIONS",
}

func splitDialect(k engine.Kind) sqlscan.Dialect {
	if k == engine.Postgres {
		return sqlscan.Postgres
	}
	return sqlscan.SQLite
}

func statements(t *testing.T, k engine.Kind) []sqlscan.Statement {
	t.Helper()
	text, err := schema.Schema(string(k))
	if err != nil {
		t.Fatal(err)
	}
	return sqlscan.Split(string(text), splitDialect(k))
}

// apply runs the packaged schema and the trigger refresh in one transaction,
// as init-db does.
func apply(ctx context.Context, t *testing.T, db *engine.DB) error {
	stmts := statements(t, db.Kind())
	return db.Tx(ctx, func(tx *engine.Tx) error {
		for _, s := range stmts {
			if err := tx.ExecRaw(ctx, s.Text); err != nil {
				return fmt.Errorf("schema.sql line %d: %w", s.Line, err)
			}
		}
		return tx.RefreshTriggers(ctx)
	})
}

func upperTables(t *testing.T, db *engine.DB) []string {
	t.Helper()
	names, err := db.Tables(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = strings.ToUpper(n)
	}
	sort.Strings(names)
	return names
}

var createTable = regexp.MustCompile(`^CREATE TABLE (\w+)`)

func TestSchemaFilesSplitIntoWholeStatements(t *testing.T) {
	t.Parallel()
	var tablesOf [2][]string
	for i, k := range enginetest.Kinds {
		for _, s := range statements(t, k) {
			body := stripLeadingComments(s.Text)
			if m := createTable.FindStringSubmatch(body); m != nil {
				tablesOf[i] = append(tablesOf[i], m[1])
			}
			switch {
			case k == engine.SQLite && strings.HasPrefix(body, "CREATE TRIGGER"):
				if !strings.HasSuffix(body, "END") {
					t.Errorf("sqlite line %d: a trigger statement does not end with END:\n%s", s.Line, s.Text)
				}
			case k == engine.Postgres && strings.HasPrefix(body, "CREATE OR REPLACE FUNCTION"):
				tag := regexp.MustCompile(`AS (\$\w*\$)`).FindStringSubmatch(body)
				if tag == nil || !strings.HasSuffix(body, tag[1]) || strings.Count(body, tag[1]) != 2 {
					t.Errorf("postgres line %d: a function body is not whole:\n%s", s.Line, s.Text)
				}
			}
		}
	}
	if !reflect.DeepEqual(tablesOf[0], tablesOf[1]) {
		t.Errorf("the schema files create different tables or orders:\nsqlite   %v\npostgres %v", tablesOf[0], tablesOf[1])
	}
	got := append([]string(nil), tablesOf[0]...)
	sort.Strings(got)
	if !reflect.DeepEqual(got, engineTables) {
		t.Errorf("schema.sql creates %v, want %v", got, engineTables)
	}
}

func stripLeadingComments(s string) string {
	for strings.HasPrefix(s, "--") {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return ""
		}
		s = strings.TrimSpace(s[i+1:])
	}
	return s
}

func TestSchemaCreatesEveryEngineTable(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		if err := apply(context.Background(), t, db); err != nil {
			t.Fatal(err)
		}
		if got := upperTables(t, db); !reflect.DeepEqual(got, engineTables) {
			t.Fatalf("tables = %v\nwant %v", got, engineTables)
		}
	})
}

func TestSchemaAppliesInOneTransaction(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		if err := apply(ctx, t, db); err != nil {
			t.Fatal(err)
		}
		// A second application fails on the first table and changes nothing.
		first := statements(t, db.Kind())[0]
		err := apply(ctx, t, db)
		if err == nil || !strings.Contains(strings.ToUpper(err.Error()), "CFG_PIPELINES") ||
			!strings.Contains(err.Error(), "already exists") ||
			!strings.HasPrefix(err.Error(), fmt.Sprintf("schema.sql line %d:", first.Line)) {
			t.Fatalf("second application: %v", err)
		}
		if got := upperTables(t, db); !reflect.DeepEqual(got, engineTables) {
			t.Fatalf("tables after the failed second application = %v", got)
		}
	})
}

func TestSchemaFailingLateLeavesNothing(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		// The last table already exists, so the schema fails near its end.
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			return tx.ExecRaw(ctx, "CREATE TABLE AUD_GATE_WAITS (LEFTOVER INTEGER)")
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := apply(ctx, t, db); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("applying over a leftover table: %v", err)
		}
		if got := upperTables(t, db); !reflect.DeepEqual(got, []string{"AUD_GATE_WAITS"}) {
			t.Fatalf("tables after the failed application = %v", got)
		}
		if db.Kind() == engine.Postgres {
			var functions int
			err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_proc
				WHERE pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`).Scan(&functions)
			if err != nil || functions != 0 {
				t.Fatalf("functions left behind: %d (%v)", functions, err)
			}
		}
	})
}

// catalog is what both dialects must define alike, read from the live database.
type catalog struct {
	columns map[string][]string // upper-case table → upper-case columns in order
	indexes []string            // named indexes (not those behind a key constraint)
	checks  []string            // CHECK constraint names
}

func readCatalog(t *testing.T, db *engine.DB) catalog {
	t.Helper()
	ctx := context.Background()
	c := catalog{columns: map[string][]string{}}
	columnsQuery := "SELECT name FROM pragma_table_info($1) ORDER BY cid"
	if db.Kind() == engine.Postgres {
		columnsQuery = `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`
	}
	tables, err := db.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		c.columns[strings.ToUpper(table)] = upperColumn(t, db, columnsQuery, table)
	}
	if db.Kind() == engine.Postgres {
		c.indexes = upperColumn(t, db, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()
			AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE contype IN ('p', 'u'))`)
		c.checks = upperColumn(t, db, `SELECT conname FROM pg_constraint
			WHERE contype = 'c' AND connamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())`)
		return c
	}
	c.indexes = upperColumn(t, db, "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
	named := regexp.MustCompile(`CONSTRAINT\s+(\w+)\s+CHECK`)
	for _, sql := range upperColumn(t, db, "SELECT sql FROM sqlite_master WHERE type = 'table'") {
		for _, m := range named.FindAllStringSubmatch(sql, -1) {
			c.checks = append(c.checks, m[1])
		}
	}
	sort.Strings(c.checks)
	return c
}

// upperColumn returns the first column of a query's rows, upper-cased and sorted
// unless the query orders them.
func upperColumn(t *testing.T, db *engine.DB, query string, args ...any) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.ToUpper(s))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(query, "ORDER BY") {
		sort.Strings(out)
	}
	return out
}

func TestDialectsDefineTheSameTables(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var cats []catalog
	for _, k := range enginetest.Kinds {
		db := enginetest.Open(t, k)
		if err := apply(ctx, t, db); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		cats = append(cats, readCatalog(t, db))
	}
	sq, pg := cats[0], cats[1]
	if !reflect.DeepEqual(sq.columns, pg.columns) {
		for table, cols := range sq.columns {
			if !reflect.DeepEqual(cols, pg.columns[table]) {
				t.Errorf("%s columns differ:\nsqlite   %v\npostgres %v", table, cols, pg.columns[table])
			}
		}
		t.Fatalf("the dialects define different tables: sqlite %d, postgres %d", len(sq.columns), len(pg.columns))
	}
	if !reflect.DeepEqual(sq.indexes, pg.indexes) {
		t.Errorf("indexes differ:\nsqlite   %v\npostgres %v", sq.indexes, pg.indexes)
	}
	// PostgreSQL names the three unnamed checks itself, and its JSONB type
	// needs no check that PIPELINE_PARAMETERS is JSON.
	wantPG := []string{"AUD_OVERSEERS_PID_CHECK", "AUD_TASK_ATTEMPTS_RETRYABLE_CHECK", "CFG_API_TOKENS_ROLE_CHECK"}
	for _, c := range sq.checks {
		if c != "CK_PIPELINES_PARAMETERS_JSON" {
			wantPG = append(wantPG, c)
		}
	}
	sort.Strings(wantPG)
	if !reflect.DeepEqual(pg.checks, wantPG) {
		t.Errorf("check constraints differ:\nsqlite   %v\npostgres %v", sq.checks, pg.checks)
	}
}

func TestIdentityColumns(t *testing.T) {
	t.Parallel()
	// Tables whose first column is not a generated id.
	keyed := map[string]bool{"AUD_TASK_OFFSET_TRACKER": true, "AUD_TARGET_HASH_VERSION": true,
		"AUD_TARGET_VIEW_STATEMENT": true, "AUD_GATE_WAITS": true, "CLONE_STATE": true, "CONSOLE_SESSIONS": true, "SCHEMA_MIGRATIONS": true}
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		// The change log's sequence is the writing transaction's id on
		// PostgreSQL, a generated id on SQLite.
		keyed := maps.Clone(keyed)
		keyed["CLONE_CHANGES"] = db.Kind() == engine.Postgres
		if err := apply(context.Background(), t, db); err != nil {
			t.Fatal(err)
		}
		query := "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%AUTOINCREMENT%'"
		if db.Kind() == engine.Postgres {
			// GENERATED ALWAYS identities, and CFG_API_TOKENS' BIGSERIAL.
			query = `SELECT table_name FROM information_schema.columns
				WHERE table_schema = current_schema() AND ordinal_position = 1
				  AND ((is_identity = 'YES' AND identity_generation = 'ALWAYS')
				       OR (table_name = 'cfg_api_tokens' AND column_default LIKE 'nextval(''cfg_api_tokens_token_id_seq''%'))`
		}
		var want []string
		for _, table := range engineTables {
			if !keyed[table] {
				want = append(want, table)
			}
		}
		if got := upperColumn(t, db, query); !reflect.DeepEqual(got, want) {
			t.Fatalf("tables with generated ids = %v\nwant %v", got, want)
		}
	})
}

// write runs one statement in its own engine transaction.
func write(ctx context.Context, db *engine.DB, query string, args ...any) error {
	return db.Tx(ctx, func(tx *engine.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
}

// withRules returns an Engine DB holding the schema and the rows the rule
// cases refer to: pipelines 1 (P) and 2 (Q); tasks 1 (load) and 2 (check) of
// P and 3 (other) of Q; run 1 of P with task run 1 of task 1; pipeline
// dependency 1 (Q on P); task dependency 1 (check on load).
func withRules(t *testing.T, db *engine.DB) {
	t.Helper()
	ctx := context.Background()
	if err := apply(ctx, t, db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P', 'Pipeline P', 'FULL')",
		"INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('Q', 'Pipeline Q', 'INCREMENTAL')",
		"INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('load', 'INGESTION', 1, 'PYTHON')",
		"INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('check', 'ETL', 1, 'SQL')",
		"INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('other', 'ETL', 2, 'SQL')",
		"INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS) VALUES (1, 'SUCCESS')",
		"INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS) VALUES (1, 1, 'SUCCESS')",
		"INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE) VALUES (2, 1, 'SUCCESS')",
		"INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) VALUES (1, 2, 1, 'SUCCESS')",
	} {
		if err := write(ctx, db, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// A rule case is one write; refusal is empty when it must succeed, else a
// text its error must contain (any case). Cases run in order, each committed.
type ruleCase struct {
	name    string
	query   string
	args    []any
	refusal string
	only    engine.Kind // run on this dialect only, when set
}

const (
	unique  = "unique constraint"
	foreign = "foreign key constraint"
)

func addTask(code, taskType, handler, runCondition string, count any) (string, []any) {
	var cond any
	if runCondition != "" {
		cond = runCondition
	}
	return `INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, RUN_CONDITION, RUN_CONDITION_COUNT)
	        VALUES ($1, $2, 1, $3, $4, $5)`, []any{code, taskType, handler, cond, count}
}

func taskCase(name, code, taskType, handler, runCondition string, count any, refusal string) ruleCase {
	q, args := addTask(code, taskType, handler, runCondition, count)
	return ruleCase{name: name, query: q, args: args, refusal: refusal}
}

func ruleCases() []ruleCase {
	const (
		pipeline = "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, ACTIVE_FLAG) VALUES ($1, 'x', $2, $3)"
		run      = "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS) VALUES ($1, $2)"
		keyed    = "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND) VALUES ($1, 'SUCCESS', $2, $3)"
		attempt  = "INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS) VALUES ($1, $2, $3)"
		consume  = `INSERT INTO AUD_DEPENDENCY_CONSUMPTION
		            (PIPELINE_DEPENDENCY_ID, TASK_DEPENDENCY_ID, PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, CONSUMED_PIPELINE_RUN_ID)
		            VALUES ($1, $2, 2, 1, 1)`
		decide = `INSERT INTO AUD_GATE_DECISIONS (PIPELINE_RUN_ID, PIPELINE_DEPENDENCY_ID, TASK_DEPENDENCY_ID, RESULT, REASON)
		          VALUES ($1, $2, $3, $4, 'test')`
		pipeDep = "INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE, CONSUME_REPAIRS) VALUES ($1, $2, $3, $4)"
		taskDep = "INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) VALUES (1, $1, $2, 'SUCCESS')"
	)
	const (
		dated   = "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_DATE) VALUES (1, 'SUCCESS', $1)"
		redate  = "UPDATE AUD_PIPELINES_RUN_LOG SET RUN_DATE = $1 WHERE PIPELINE_RUN_ID = 1"
		started = "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, SCHEDULE_START_DATE) VALUES ($1, 'x', 'FULL', $2)"
		restart = "UPDATE CFG_PIPELINES SET SCHEDULE_START_DATE = $1 WHERE PIPELINE_ID = 2"
	)
	cases := []ruleCase{
		// Dates: a real date from 0001-01-01 to 9999-12-31, which SQLite
		// keeps as text written YYYY-MM-DD.
		{name: "a run date", query: dated, args: []any{"2020-01-02"}},
		{name: "a leap day", query: dated, args: []any{"2020-02-29"}},
		{name: "the first date", query: dated, args: []any{"0001-01-01"}},
		{name: "the last date", query: dated, args: []any{"9999-12-31"}},
		{name: "no run date", query: dated, args: []any{nil}},
		{name: "a run date that is no date", query: dated, args: []any{"not-a-date; DROP TABLE x"}, refusal: "run_date", only: engine.SQLite},
		{name: "February 30", query: dated, args: []any{"2020-02-30"}, refusal: "run_date", only: engine.SQLite},
		{name: "year 0", query: dated, args: []any{"0000-06-01"}, refusal: "run_date", only: engine.SQLite},
		{name: "a run date with a time", query: dated, args: []any{"2020-01-02 10:00:00"}, refusal: "run_date", only: engine.SQLite},
		{name: "a run date as a number", query: dated, args: []any{20200102}, refusal: "run_date", only: engine.SQLite},
		{name: "year 10000", query: dated, args: []any{"10000-01-01"}, refusal: "run_date", only: engine.Postgres},
		{name: "a run date before year 1", query: dated, args: []any{"0001-06-01 BC"}, refusal: "run_date", only: engine.Postgres},
		{name: "a run date changed", query: redate, args: []any{"2021-03-04"}},
		{name: "a run date changed to none", query: redate, args: []any{"2021-13-01"}, refusal: "run_date", only: engine.SQLite},
		{name: "a run date changed to year 10000", query: redate, args: []any{"10000-01-01"}, refusal: "run_date", only: engine.Postgres},
		{name: "a schedule start date", query: started, args: []any{"S1", "2026-01-01"}},
		{name: "a schedule start date that is no date", query: started, args: []any{"S2", "soon"}, refusal: "schedule_start_date", only: engine.SQLite},
		{name: "a schedule start date in year 10000", query: started, args: []any{"S3", "10000-01-01"}, refusal: "schedule_start_date", only: engine.Postgres},
		{name: "a schedule start date changed", query: restart, args: []any{"2026-02-01"}},
		{name: "a schedule start date changed to April 31", query: restart, args: []any{"2026-04-31"}, refusal: "schedule_start_date", only: engine.SQLite},
		// E02 handlers, task types, active flags.
		taskCase("handler PYTHON", "h_python", "ETL", "PYTHON", "", nil, ""),
		taskCase("handler SQL", "h_sql", "ETL", "SQL", "", nil, ""),
		taskCase("handler BUSINESS_RULES", "h_rules", "ETL", "BUSINESS_RULES", "", nil, ""),
		taskCase("handler EMAIL_ALERT", "h_email", "ETL", "EMAIL_ALERT", "", nil, ""),
		taskCase("unknown handler", "h_bash", "ETL", "BASH", "", nil, "ck_tasks_handler"),
		taskCase("unknown task type", "t_load", "LOAD", "SQL", "", nil, "ck_tasks_task_type"),
		{name: "unknown active flag", query: "UPDATE CFG_TASKS SET ACTIVE_FLAG = 'X' WHERE TASK_ID = 1", refusal: "ck_tasks_active_flag"},
		// E03 run conditions.
		taskCase("no condition", "rc_1", "ETL", "SQL", "", nil, ""),
		taskCase("ALL", "rc_2", "ETL", "SQL", "ALL", nil, ""),
		taskCase("ANY", "rc_3", "ETL", "SQL", "ANY", nil, ""),
		taskCase("N of 2", "rc_4", "ETL", "SQL", "N", 2, ""),
		taskCase("MOST", "rc_5", "ETL", "SQL", "MOST", nil, "ck_tasks_run_condition"),
		taskCase("N without a count", "rc_6", "ETL", "SQL", "N", nil, "ck_tasks_run_condition_count"),
		taskCase("ANY with a count", "rc_7", "ETL", "SQL", "ANY", 2, "ck_tasks_run_condition_count"),
		taskCase("N of 0", "rc_8", "ETL", "SQL", "N", 0, "ck_tasks_run_condition_count"),
		taskCase("a count without a condition", "rc_9", "ETL", "SQL", "", 2, "ck_tasks_run_condition_count"),
		// E04 codes are unique among active rows only.
		taskCase("duplicate active task code", "load", "ETL", "SQL", "", nil, unique),
		{name: "retire a task", query: "UPDATE CFG_TASKS SET ACTIVE_FLAG = 'N' WHERE TASK_ID = 2"},
		taskCase("reuse a retired code", "check", "ETL", "SQL", "", nil, ""),
		{name: "same code in another pipeline", query: "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('load', 'ETL', 2, 'SQL')"},
		{name: "duplicate active pipeline code", query: pipeline, args: []any{"P", "FULL", "Y"}, refusal: unique},
		{name: "retired pipeline code", query: pipeline, args: []any{"P", "FULL", "N"}},
		// E06 self-dependencies and dependency types.
		{name: "pipeline on itself", query: pipeDep, args: []any{1, 1, "SUCCESS", "Y"}, refusal: "ck_pipedep_no_self_dep"},
		{name: "unknown pipeline dependency type", query: pipeDep, args: []any{1, 2, "SOMETIMES", "Y"}, refusal: "ck_pipedep_type"},
		{name: "HAS_DATA", query: pipeDep, args: []any{1, 2, "HAS_DATA", "Y"}},
		{name: "task on itself", query: taskDep, args: []any{1, 1}, refusal: "ck_taskdep_no_self_dep"},
		// E07 foreign keys.
		{name: "task of a missing pipeline", query: "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('lost', 'ETL', 99, 'SQL')", refusal: foreign},
		// E08 refresh and rule types.
		{name: "unknown refresh type", query: pipeline, args: []any{"R", "PARTIAL", "Y"}, refusal: "ck_pipelines_refresh_type"},
		{name: "unknown rule type", query: `INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL,
			BUSINESS_RULE_TYPE, BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER) VALUES ('r', 1, 1, 'SELECT 1', $1, 'id', 't', 1)`,
			args: []any{"WARN"}, refusal: "ck_br_type"},
		// E09 pipeline parameters are JSON.
		{name: "JSON parameters", query: "UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = '{\"a\": 1}' WHERE PIPELINE_ID = 1"},
		{name: "parameters that are not JSON", query: "UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = '{bad' WHERE PIPELINE_ID = 1", refusal: "json"},
		// Schedules.
		{name: "unknown catch-up flag", query: "UPDATE CFG_PIPELINES SET CATCHUP = 'X' WHERE PIPELINE_ID = 1", refusal: "ck_schedule_catchup"},
		{name: "no catch-up runs", query: "UPDATE CFG_PIPELINES SET MAX_CATCHUP_RUNS = 0 WHERE PIPELINE_ID = 1", refusal: "ck_schedule_catchup_runs"},
		{name: "fractional catch-up runs", query: "UPDATE CFG_PIPELINES SET MAX_CATCHUP_RUNS = 1.5 WHERE PIPELINE_ID = 1", refusal: "ck_schedule_catchup_runs", only: engine.SQLite},
		{name: "unknown overlap policy", query: "UPDATE CFG_PIPELINES SET OVERLAP_POLICY = 'NEVER' WHERE PIPELINE_ID = 1", refusal: "ck_schedule_overlap"},
		// E11 one running run per pipeline.
		{name: "a running run", query: run, args: []any{1, "IN-PROGRESS"}},
		{name: "a second running run", query: run, args: []any{1, "IN-PROGRESS"}, refusal: unique},
		{name: "a running run of another pipeline", query: run, args: []any{2, "IN-PROGRESS"}},
		{name: "a finished run", query: run, args: []any{1, "FAILED"}},
		{name: "unknown run status", query: run, args: []any{1, "RUNNING"}, refusal: "ck_pipeline_run_status"},
		{name: "unknown starter kind", query: "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, STARTED_BY_KIND) VALUES (1, 'SUCCESS', 'ROBOT')", refusal: "ck_aud_pipelines_run_log_started_by_kind"},
		// E12 one task run per task and pipeline run.
		{name: "a second task run", query: "INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS) VALUES (1, 1, 'FAILED')", refusal: unique},
		// E13 SLA status.
		{name: "SLA met", query: "UPDATE AUD_PIPELINES_RUN_LOG SET SLA_STATUS = 'MET' WHERE PIPELINE_RUN_ID = 1"},
		{name: "SLA breached", query: "UPDATE AUD_PIPELINES_RUN_LOG SET SLA_STATUS = 'BREACHED' WHERE PIPELINE_RUN_ID = 1"},
		{name: "unknown SLA status", query: "UPDATE AUD_PIPELINES_RUN_LOG SET SLA_STATUS = 'LATE' WHERE PIPELINE_RUN_ID = 1", refusal: "ck_pipeline_run_sla_status"},
		// E14 consumption.
		{name: "a consumption", query: consume, args: []any{1, nil}},
		{name: "the same dependency again", query: consume, args: []any{1, nil}},
		{name: "a consumption of both dependencies", query: consume, args: []any{1, 1}, refusal: "ck_consumption_one_dependency"},
		{name: "a consumption of no dependency", query: consume, args: []any{nil, nil}, refusal: "ck_consumption_one_dependency"},
		{name: "a consumption of a missing dependency", query: consume, args: []any{99, nil}, refusal: foreign},
		// E15 offset types.
		{name: "a NUMBER offset", query: "INSERT INTO AUD_TASK_OFFSET_TRACKER (TASK_ID, OFFSET_TYPE, OFFSET_VALUE) VALUES (1, 'NUMBER', '10')"},
		{name: "a DATE offset", query: "INSERT INTO AUD_TASK_OFFSET_TRACKER (TASK_ID, OFFSET_TYPE) VALUES (3, 'DATE')", refusal: "ck_offset_type"},
		// E17 attempts.
		{name: "attempt 1", query: attempt, args: []any{1, 1, "FAILED"}},
		{name: "attempt 1 again", query: attempt, args: []any{1, 1, "SUCCESS"}, refusal: unique},
		{name: "an active attempt", query: attempt, args: []any{1, 2, "RUNNING"}},
		{name: "a second active attempt", query: attempt, args: []any{1, 3, "QUEUED"}, refusal: unique},
		{name: "a skipped attempt", query: attempt, args: []any{1, 4, "SKIPPED"}, refusal: "ck_attempt_status"},
		{name: "an attempt of a missing task run", query: attempt, args: []any{99, 1, "QUEUED"}, refusal: foreign},
		// E18 run keys and trigger kinds.
		{name: "a run key", query: keyed, args: []any{1, "orchestrator:r1", "ORCHESTRATOR"}},
		{name: "the same run key", query: keyed, args: []any{1, "orchestrator:r1", "ORCHESTRATOR"}, refusal: unique},
		{name: "the same run key in another pipeline", query: keyed, args: []any{2, "orchestrator:r1", "ORCHESTRATOR"}},
		{name: "unknown trigger kind", query: keyed, args: []any{1, "x:1", "INVALID"}, refusal: "ck_pipeline_run_trigger_kind"},
		// E19 gate decisions and repairs.
		{name: "a decision", query: decide, args: []any{1, 1, nil, "SATISFIED"}},
		{name: "a decision without a dependency", query: decide, args: []any{1, nil, nil, "BYPASSED"}, refusal: "ck_gate_one_dependency"},
		{name: "unknown decision result", query: decide, args: []any{1, 1, nil, "MAYBE"}, refusal: "ck_gate_result"},
		{name: "a decision on a missing run", query: decide, args: []any{99, 1, nil, "UNSATISFIED"}, refusal: foreign},
		{name: "no repairs consumed", query: pipeDep, args: []any{1, 2, "FAILURE", "N"}},
		{name: "unknown repair flag", query: pipeDep, args: []any{1, 2, "ALWAYS", "X"}, refusal: "ck_pipedep_consume_repairs"},
	}
	// C02 codes the database itself refuses, and the longest it accepts.
	for i, code := range []string{"__init__", "__finalize__", "load $(touch x); echo", "1load",
		strings.Repeat("a", 129), "task-name", "P\n", "éclair", ""} {
		cases = append(cases,
			ruleCase{name: fmt.Sprintf("pipeline code %q", code), query: pipeline, args: []any{code, "FULL", "Y"}, refusal: "ck_pipelines_code"},
			taskCase(fmt.Sprintf("task code %d", i), code, "ETL", "SQL", "", nil, "ck_tasks_code"))
	}
	return append(cases,
		ruleCase{name: "a 128-character code", query: pipeline, args: []any{strings.Repeat("a", 128), "FULL", "Y"}},
		taskCase("an underscored code", "load_2", "ETL", "SQL", "", nil, ""))
}

func TestSchemaEnforcesTheRules(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		withRules(t, db)
		ctx := context.Background()
		for _, c := range ruleCases() {
			if c.only != "" && c.only != db.Kind() {
				continue
			}
			err := write(ctx, db, c.query, c.args...)
			switch {
			case c.refusal == "" && err != nil:
				t.Errorf("%s: refused: %v", c.name, err)
			case c.refusal != "" && err == nil:
				t.Errorf("%s: accepted, want a refusal naming %q", c.name, c.refusal)
			case c.refusal != "" && !strings.Contains(strings.ToLower(err.Error()), c.refusal):
				t.Errorf("%s: refused with %v, want %q", c.name, err, c.refusal)
			}
		}
	})
}

func TestCodesWithNULAreRefused(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		withRules(t, db)
		ctx := context.Background()
		// PostgreSQL's driver refuses the text itself; SQLite's check does.
		refused := func(what string, err error, check string) {
			if err == nil || (db.Kind() == engine.SQLite && !strings.Contains(err.Error(), check)) {
				t.Errorf("a %s code with a NUL character: %v, want a refusal (by %s on SQLite)", what, err, check)
			}
		}
		q, args := addTask("load\x00x", "ETL", "SQL", "", nil)
		refused("task", write(ctx, db, q, args...), "ck_tasks_code")
		refused("pipeline", write(ctx, db,
			"INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ($1, 'x', 'FULL')", "P\x00"),
			"ck_pipelines_code")
	})
}

// scalar reads one value in an engine transaction.
func scalar(t *testing.T, db *engine.DB, query string) string {
	t.Helper()
	var v string
	err := db.Tx(context.Background(), func(tx *engine.Tx) error {
		return tx.QueryRowContext(context.Background(), query).Scan(&v)
	})
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return v
}

func TestSchemaDefaults(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		withRules(t, db)
		ctx := context.Background()
		checks := []struct{ query, want string }{
			// E05 a task dependency without an upstream pipeline is in its own pipeline.
			{"SELECT CAST(DEPENDS_ON_PIPELINE_ID AS VARCHAR) FROM CFG_TASK_DEPENDENCY WHERE TASK_DEPENDENCY_ID = 1", "1"},
			// E19 repairs are consumed by default.
			{"SELECT CONSUME_REPAIRS FROM CFG_PIPELINE_DEPENDENCY WHERE PIPELINE_DEPENDENCY_ID = 1", "Y"},
			{"SELECT CONSUME_REPAIRS FROM CFG_TASK_DEPENDENCY WHERE TASK_DEPENDENCY_ID = 1", "Y"},
			// E18 engine inserts default to a manual key and kind.
			{"SELECT substr(RUN_KEY, 1, 7) || TRIGGER_KIND FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 1", "manual:MANUAL"},
			// Schedules: no catch-up, one run at most, skip overlaps.
			{"SELECT CATCHUP || CAST(MAX_CATCHUP_RUNS AS VARCHAR) || OVERLAP_POLICY FROM CFG_PIPELINES WHERE PIPELINE_ID = 1", "N1SKIP"},
			// E12 a task run starts at attempt 1.
			{"SELECT CAST(ATTEMPT_COUNT AS VARCHAR) FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = 1", "1"},
		}
		for _, c := range checks {
			if got := scalar(t, db, c.query); got != c.want {
				t.Errorf("%s = %q, want %q", c.query, got, c.want)
			}
		}
		// E12 a retry counts in place.
		if err := write(ctx, db, "UPDATE AUD_TASK_RUN_LOG SET ATTEMPT_COUNT = ATTEMPT_COUNT + 1 WHERE TASK_RUN_ID = 1"); err != nil {
			t.Fatal(err)
		}
		if got := scalar(t, db, "SELECT CAST(ATTEMPT_COUNT AS VARCHAR) || CAST(count(*) AS VARCHAR) FROM AUD_TASK_RUN_LOG GROUP BY ATTEMPT_COUNT"); got != "21" {
			t.Errorf("after a retry, ATTEMPT_COUNT and rows = %q, want 2 and 1", got)
		}
	})
}

// TestPostgresTimestampsHaveATimeZone checks that every timestamp column of
// the PostgreSQL schema is TIMESTAMPTZ, so that comparing one with now() does
// not depend on the session's TimeZone.
func TestPostgresTimestampsHaveATimeZone(t *testing.T) {
	t.Parallel()
	db := enginetest.Open(t, engine.Postgres)
	if err := apply(context.Background(), t, db); err != nil {
		t.Fatal(err)
	}
	if naive := upperColumn(t, db, `SELECT table_name || '.' || column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND data_type = 'timestamp without time zone'`); len(naive) > 0 {
		t.Fatalf("timestamp columns without a time zone: %v", naive)
	}
}

// TestReleasedChecksumsNamePackagedFilesOfBothDialects checks the released checksums of both dialects name the reference 0.2.0 files.
func TestReleasedChecksumsNamePackagedFilesOfBothDialects(t *testing.T) {
	t.Parallel()
	var lists [2][]string
	for i, k := range enginetest.Kinds {
		eng, err := migrate.EngineStream(k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		for _, f := range eng.Files {
			for sum, release := range f.Released {
				if sum == f.Checksum {
					t.Errorf("%s %s: a released checksum is the file's own", k, f.Name)
				}
				lists[i] = append(lists[i], release+": "+f.Name)
			}
		}
		sort.Strings(lists[i])
	}
	var want []string
	for _, name := range []string{"0001_pipeline_pauses.sql", "0002_run_date.sql", "0003_dependency_consumption.sql",
		"0004_rows_written.sql", "0005_metadata_codes.sql", "0006_run_backfill_constraint.sql"} {
		want = append(want, "etl-craft 0.2.0 (Python reference): "+name)
	}
	for i, k := range enginetest.Kinds {
		if !reflect.DeepEqual(lists[i], want) {
			t.Errorf("%s released checksums:\n%s\nwant\n%s", k, strings.Join(lists[i], "\n"), strings.Join(want, "\n"))
		}
	}
}

// The migration that brings the reference's 0.2.0 definitions to today's
// changes nothing on an Engine DB that already has today's.
func TestReleasedDefinitionsLeaveACurrentEngineDBAsItWas(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		withRules(t, db)
		if err := write(ctx, db, "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, RUN_CONDITION, RUN_CONDITION_COUNT) VALUES ('some', 'ETL', 1, 'SQL', 'N', 1)"); err != nil {
			t.Fatal(err)
		}
		before, err := snapshots.Take(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		tasks := upperColumn(t, db, "SELECT TASK_CODE || ':' || COALESCE(RUN_CONDITION, '-') FROM CFG_TASKS ORDER BY TASK_ID")
		fsys, err := schema.Migrations(string(db.Kind()))
		if err != nil {
			t.Fatal(err)
		}
		text, err := fs.ReadFile(fsys, "0021_released_definitions.sql")
		if err != nil {
			t.Fatal(err)
		}
		err = db.Tx(ctx, func(tx *engine.Tx) error {
			for _, st := range sqlscan.Split(string(text), splitDialect(db.Kind())) {
				if err := tx.ExecRaw(ctx, st.Text); err != nil {
					return fmt.Errorf("line %d: %w", st.Line, err)
				}
			}
			return tx.RefreshTriggers(ctx)
		})
		if err != nil {
			t.Fatal(err)
		}
		after, err := snapshots.Take(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if diff := after.Diff(before); len(diff) > 0 {
			t.Fatalf("0021 changed a current Engine DB:\n%s", strings.Join(diff, "\n"))
		}
		if got := upperColumn(t, db, "SELECT TASK_CODE || ':' || COALESCE(RUN_CONDITION, '-') FROM CFG_TASKS ORDER BY TASK_ID"); !reflect.DeepEqual(got, tasks) {
			t.Fatalf("tasks %v, want %v", got, tasks)
		}
	})
}
