package engine_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/engine/schema"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

var (
	alice = actor.Actor{Name: "alice", Kind: actor.Human}
	bob   = actor.Actor{Name: "bob", Kind: actor.Orchestrator}
	// seededAt is the time the seed rows give columns without a default.
	seededAt = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// initialized opens the Engine DB of opts and applies the packaged schema
// and the trigger refresh in one transaction, as init-db does.
func initialized(t *testing.T, opts engine.Options) *engine.DB {
	t.Helper()
	ctx := context.Background()
	db, err := engine.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	text, err := schema.Schema(string(opts.Kind))
	if err != nil {
		t.Fatal(err)
	}
	d := sqlscan.SQLite
	if opts.Kind == engine.Postgres {
		d = sqlscan.Postgres
	}
	err = db.Tx(ctx, func(tx *engine.Tx) error {
		for _, s := range sqlscan.Split(string(text), d) {
			if err := tx.ExecRaw(ctx, s.Text); err != nil {
				return fmt.Errorf("line %d: %w", s.Line, err)
			}
		}
		return tx.RefreshTriggers(ctx)
	})
	if err != nil {
		t.Fatalf("applying the schema: %v", err)
	}
	return db
}

// eachInitialized runs body on both dialects with a fresh initialized Engine DB.
func eachInitialized(t *testing.T, body func(t *testing.T, db *engine.DB, opts engine.Options)) {
	enginetest.EachKind(t, func(t *testing.T, opts engine.Options) {
		body(t, initialized(t, opts), opts)
	})
}

// seed writes, as alice, one row into every CFG_ and AUD_ table: pipelines
// 1 (P) and 2 (Q), tasks 1 (load) and 2 (rules) of P, run 1 of P, task run 1,
// a terminal attempt 1, and a row of each other table that refers to them.
func seed(t *testing.T, db *engine.DB) {
	t.Helper()
	ctx := actor.With(context.Background(), alice)
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		at := tx.TimeArg(seededAt)
		for _, s := range []struct {
			query string
			args  []any
		}{
			{query: "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P', 'Pipeline P', 'FULL')"},
			{query: "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('Q', 'Pipeline Q', 'FULL')"},
			{query: "INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE) VALUES (2, 1, 'SUCCESS')"},
			{query: "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('load', 'ETL', 1, 'SQL')"},
			{query: "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('rules', 'ETL', 1, 'BUSINESS_RULES')"},
			{query: "INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) VALUES (1, 2, 1, 'SUCCESS')"},
			{query: "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES (1, 'SQL_FILE', 'load.sql')"},
			{query: `INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL,
				BUSINESS_RULE_TYPE, BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)
				VALUES ('no_nulls', 1, 2, 'SELECT 1', 'REJECT', 'ID', 'orders', 1)`},
			{query: `INSERT INTO CFG_API_TOKENS (NAME, TOKEN_SHA256, ROLE, CREATED_BY, CREATED_AT)
				VALUES ('ci', $1, 'viewer', 'alice', $2)`, args: []any{strings.Repeat("ab", 32), at}},
			{query: "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS) VALUES (1, 'SUCCESS')"},
			{query: "INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS) VALUES (1, 1, 'SUCCESS')"},
			{query: `INSERT INTO AUD_RUN_INTERVENTIONS (PIPELINE_ID, PIPELINE_RUN_ID, ACTION, REASON, REQUESTED_BY)
				VALUES (1, 1, 'MARK', 'seed', 'alice')`},
			{query: "INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_BY, REASON) VALUES (2, 'alice', 'seed')"},
			{query: "INSERT INTO AUD_BUSINESS_RULES_RUN_LOG (BUSINESS_RULE_ID, TASK_RUN_ID, STATUS) VALUES (1, 1, 'SUCCESS')"},
			{query: `INSERT INTO AUD_BUSINESS_RULES_RESULTS (BUSINESS_RULE_RUN_ID, BUSINESS_RULE_ID, BUSINESS_RULE_KEY, TARGET_TABLE, STATUS)
				VALUES (1, 1, '42', 'orders', 'REJECT')`},
			{query: "INSERT INTO AUD_TASK_OFFSET_TRACKER (TASK_ID, OFFSET_TYPE, OFFSET_VALUE) VALUES (1, 'NUMBER', '10')"},
			{query: "INSERT INTO AUD_COLUMN_LINEAGE (TASK_ID, SOURCE_SQL_HASH, TARGET_OBJECT, TARGET_COLUMN) VALUES (1, 'h', 'orders', 'id')"},
			{query: "INSERT INTO AUD_DOCS_PUBLICATION (PUBLISHED_URL) VALUES ('https://docs.example.com')"},
			{query: "INSERT INTO AUD_TASK_DOCUMENTATION (TASK_ID, VERSION, DOCUMENTATION_HASH, DOCUMENTATION) VALUES (1, 1, 'h', 'Loads orders.')"},
			{query: `INSERT INTO AUD_DEPENDENCY_CONSUMPTION (PIPELINE_DEPENDENCY_ID, PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, CONSUMED_PIPELINE_RUN_ID)
				VALUES (1, 2, 1, 1)`},
			{query: "INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS) VALUES (1, 1, 'SUCCESS')"},
			{query: "INSERT INTO AUD_GATE_DECISIONS (PIPELINE_RUN_ID, PIPELINE_DEPENDENCY_ID, RESULT, REASON) VALUES (1, 1, 'SATISFIED', 'seed')"},
			{query: `INSERT INTO AUD_ACTIONS (ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS, OUTCOME)
				VALUES ('alice', 'HUMAN', 'host', 'run', '{}', 'REQUESTED')`},
			{query: "INSERT INTO AUD_TARGET_HASH_VERSION (TARGET_OBJECT, HASH_VERSION, RECOMPUTED_AT) VALUES ('wh.orders', 2, $1)", args: []any{at}},
			{query: "INSERT INTO AUD_TARGET_VIEW_STATEMENT (TARGET_OBJECT, STATEMENT_SHA256, RECORDED_AT) VALUES ('wh.v', $1, $2)",
				args: []any{strings.Repeat("cd", 32), at}},
			{query: `INSERT INTO AUD_OVERSEERS (HOST, PID, VERSION, STARTED_AT, HEARTBEAT_AT, STARTED_BY, STARTED_BY_KIND)
				VALUES ('host', 42, 'dev', $1, $1, 'alice', 'HUMAN')`, args: []any{at}},
			{query: "INSERT INTO AUD_GATE_WAITS (PIPELINE_RUN_ID, FIRST_CHECK_AT, LOOKS, WAIT_UNTIL) VALUES (1, $1, 0, $1)", args: []any{at}},
		} {
			if _, err := tx.ExecContext(ctx, s.query, s.args...); err != nil {
				return fmt.Errorf("%s: %w", s.query, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("seeding: %v", err)
	}
}

// guardedTables lists the CFG_ and AUD_ tables the live schema has.
func guardedTables(t *testing.T, db *engine.DB) []string {
	t.Helper()
	all, err := db.Tables(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, name := range all {
		if u := strings.ToUpper(name); strings.HasPrefix(u, "CFG_") || strings.HasPrefix(u, "AUD_") {
			out = append(out, name)
		}
	}
	return out
}

func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

// lastColumn names the table's last column, which no table generates.
func lastColumn(t *testing.T, db *engine.DB, table string) string {
	t.Helper()
	query := "SELECT name FROM pragma_table_info($1) ORDER BY cid DESC LIMIT 1"
	if db.Kind() == engine.Postgres {
		query = `SELECT column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position DESC LIMIT 1`
	}
	var col string
	if err := db.QueryRowContext(context.Background(), query, table).Scan(&col); err != nil {
		t.Fatalf("columns of %s: %v", table, err)
	}
	return col
}

// writes are the statements that try every kind of write on a table.
func writes(t *testing.T, db *engine.DB, table string) []string {
	if db.Kind() == engine.Postgres {
		table = strings.ToLower(table) // as the catalog holds it
	}
	q, col := quote(table), quote(lastColumn(t, db, table))
	out := []string{
		"INSERT INTO " + q + " DEFAULT VALUES",
		"UPDATE " + q + " SET " + col + " = " + col,
		"DELETE FROM " + q,
	}
	if db.Kind() == engine.Postgres {
		out = append(out, "TRUNCATE "+q+" CASCADE")
	}
	return out
}

// plainRefusal matches what a plain connection's write fails with. On
// SQLite a trigger's call is "no such function"; a column default's call
// (which SQLite compiles first) is "unknown function", of the actor or the
// actor kind.
func plainRefusal(k engine.Kind) *regexp.Regexp {
	if k == engine.SQLite {
		return regexp.MustCompile(`(no such|unknown) function: etl_craft_actor`)
	}
	return regexp.MustCompile(`[A-Z_]+ is written only by etl-craft: `)
}

func count(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, table string) int {
	t.Helper()
	var n int
	if err := q.QueryRowContext(context.Background(), "SELECT count(*) FROM "+quote(table)).Scan(&n); err != nil {
		t.Fatalf("reading %s: %v", table, err)
	}
	return n
}

// assertPlainRefused checks that a plain connection can read the tables but
// cannot write them, and that nothing changed.
func assertPlainRefused(t *testing.T, db *engine.DB, opts engine.Options, tables []string) {
	t.Helper()
	plain := enginetest.Plain(t, opts)
	ctx := context.Background()
	for _, table := range tables {
		before := count(t, plain, table)
		if before == 0 {
			t.Fatalf("%s has no row: give it one so that row triggers fire", table)
		}
		for _, w := range writes(t, db, table) {
			_, err := plain.ExecContext(ctx, w)
			if err == nil || !plainRefusal(opts.Kind).MatchString(err.Error()) {
				t.Errorf("plain %s: %v, want %q", w, err, plainRefusal(opts.Kind))
			}
		}
		if after := count(t, plain, table); after != before {
			t.Errorf("%s went from %d to %d rows", table, before, after)
		}
	}
}

func TestPlainConnectionsCannotWrite(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, opts engine.Options) {
		seed(t, db)
		tables := guardedTables(t, db)
		if len(tables) != 26 {
			t.Fatalf("%d guarded tables, want 26: %v", len(tables), tables)
		}
		assertPlainRefused(t, db, opts, tables)
		// The migration ledger is not guarded.
		_, err := enginetest.Plain(t, opts).Exec("INSERT INTO SCHEMA_MIGRATIONS (SOURCE, VERSION, CHECKSUM) VALUES ('PROJECT', 'x.sql', $1)",
			strings.Repeat("0", 64))
		if err != nil {
			t.Errorf("writing the ledger on a plain connection: %v", err)
		}
	})
}

func TestShellsCannotWrite(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, opts engine.Options) {
		seed(t, db)
		run := func(statement string) (string, error) {
			var cmd *exec.Cmd
			if opts.Kind == engine.SQLite {
				cmd = exec.Command(enginetest.Client(t, "sqlite3"), "-bail", opts.Path, statement)
			} else {
				cmd = exec.Command(enginetest.Client(t, "psql"), "-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d", opts.DSN, "-c", statement)
			}
			out, err := cmd.CombinedOutput()
			return strings.TrimSpace(string(out)), err
		}
		// Seeded rows per table: reads stay open.
		for table, rows := range map[string]string{"CFG_TASKS": "2", "AUD_PIPELINES_RUN_LOG": "1", "AUD_ACTIONS": "1"} {
			for _, w := range writes(t, db, table) {
				out, err := run(w)
				if err == nil || !plainRefusal(opts.Kind).MatchString(out) {
					t.Errorf("shell %s: %v: %s", w, err, out)
				}
			}
			if out, err := run("SELECT count(*) FROM " + table); err != nil || out != rows {
				t.Errorf("reading %s in the shell: %v: %s, want %s rows", table, err, out, rows)
			}
		}
	})
}

// stamps are a CFG_PIPELINES row's stamp columns, and its name.
type stamps struct {
	createdBy, updatedBy    string
	createDate, updatedDate engine.Time
	name                    string
}

func readStamps(t *testing.T, db *engine.DB, pipelineID int) stamps {
	t.Helper()
	var s stamps
	err := db.QueryRowContext(context.Background(),
		"SELECT CREATED_BY, CREATE_DATE, UPDATED_BY, UPDATED_DATE, PIPELINE_NAME FROM CFG_PIPELINES WHERE PIPELINE_ID = $1",
		pipelineID).Scan(&s.createdBy, &s.createDate, &s.updatedBy, &s.updatedDate, &s.name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// execAll runs the statements in one engine transaction of ctx.
func execAll(t *testing.T, ctx context.Context, db *engine.DB, statements ...string) {
	t.Helper()
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		for _, q := range statements {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// exec1 runs one statement in its own engine transaction of ctx.
func exec1(ctx context.Context, db *engine.DB, query string, args ...any) error {
	return db.Tx(ctx, func(tx *engine.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
}

func TestEngineWritesAreStamped(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, _ engine.Options) {
		asAlice := actor.With(context.Background(), alice)
		asBob := actor.With(context.Background(), bob)
		forged := engine.TimeText(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
		// Stamps a writer supplies are ignored.
		err := exec1(asAlice, db, `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE,
			CREATED_BY, CREATE_DATE, UPDATED_BY, UPDATED_DATE) VALUES ('P', 'P', 'FULL', 'mallory', $1, 'mallory', $1)`, forged)
		if err != nil {
			t.Fatal(err)
		}
		first := readStamps(t, db, 1)
		if first.createdBy != "alice" || first.updatedBy != "alice" || !first.createDate.Valid ||
			first.createDate.Time.Year() == 2000 || first.updatedDate.Time.Year() == 2000 {
			t.Fatalf("inserted stamps = %+v", first)
		}
		// CREATED_BY and CREATE_DATE cannot be forged by a later writer.
		err = exec1(asBob, db, `UPDATE CFG_PIPELINES SET CREATED_BY = 'forged', CREATE_DATE = $1, UPDATED_BY = 'forged',
			PIPELINE_NAME = 'renamed' WHERE PIPELINE_ID = 1`, forged)
		if err != nil {
			t.Fatal(err)
		}
		second := readStamps(t, db, 1)
		if second.createdBy != "alice" || !second.createDate.Time.Equal(first.createDate.Time) ||
			second.updatedBy != "bob" || second.updatedDate.Time.Before(first.updatedDate.Time) || second.name != "renamed" {
			t.Fatalf("stamps after bob's update = %+v (before %+v)", second, first)
		}
		// A refused duplicate insert does not disturb the stamping of what follows,
		// in a later transaction and (on SQLite, which carries on) in the same one.
		dup := "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P', 'again', 'FULL')"
		if err := exec1(asAlice, db, dup); err == nil || !db.IsUniqueViolation(err) {
			t.Fatalf("duplicate insert: %v", err)
		}
		err = db.Tx(asAlice, func(tx *engine.Tx) error {
			if db.Kind() == engine.SQLite {
				if _, err := tx.ExecContext(asAlice, dup); err == nil {
					return errors.New("the duplicate insert was accepted")
				}
			}
			_, err := tx.ExecContext(asAlice, "UPDATE CFG_PIPELINES SET PIPELINE_NAME = 'after a refusal' WHERE PIPELINE_ID = 1")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		third := readStamps(t, db, 1)
		if third.createdBy != "alice" || third.updatedBy != "alice" || third.name != "after a refusal" {
			t.Fatalf("stamps after a refused insert = %+v", third)
		}
		changes := readChanges(t, db, "CFG_PIPELINES", "1")
		if last := changes[len(changes)-1]; last.operation != "UPDATE" || last.after["pipeline_name"] != "after a refusal" {
			t.Fatalf("the update after a refused insert was recorded as %+v", last)
		}
	})
}

// change is one AUD_METADATA_CHANGES row.
type change struct {
	actor, kind, operation string
	migration              sql.NullString
	before, after          map[string]any
}

func readChanges(t *testing.T, db *engine.DB, table, rowKey string) []change {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT ACTOR, ACTOR_KIND, OPERATION, MIGRATION, BEFORE_JSON, AFTER_JSON
		FROM AUD_METADATA_CHANGES WHERE TABLE_NAME = $1 AND ROW_KEY = $2 ORDER BY CHANGE_ID`, table, rowKey)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []change
	for rows.Next() {
		var c change
		var before, after sql.NullString
		if err := rows.Scan(&c.actor, &c.kind, &c.operation, &c.migration, &before, &after); err != nil {
			t.Fatal(err)
		}
		c.before, c.after = jsonObject(t, before), jsonObject(t, after)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonObject(t *testing.T, s sql.NullString) map[string]any {
	t.Helper()
	if !s.Valid {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s.String), &m); err != nil {
		t.Fatalf("not a JSON object: %s: %v", s.String, err)
	}
	return m
}

func TestMetadataChangesAreCaptured(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, _ engine.Options) {
		seed(t, db)
		ctx := engine.WithMigration(actor.With(context.Background(), alice), "0002_tune.sql")
		execAll(t, ctx, db,
			"INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES (1, 'TIMEOUT', '60')",
			// Changes nothing: the stamps it writes equal the insert's.
			"UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = PARAMETER_VALUE WHERE TASK_PARAMETER_ID = 2",
			"UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '90' WHERE TASK_PARAMETER_ID = 2",
			"DELETE FROM CFG_TASK_PARAMETERS WHERE TASK_PARAMETER_ID = 2")
		got := readChanges(t, db, "CFG_TASK_PARAMETERS", "2")
		var ops []string
		for _, c := range got {
			ops = append(ops, c.operation)
			if c.actor != "alice" || c.kind != "HUMAN" || c.migration.String != "0002_tune.sql" {
				t.Errorf("%s recorded as %s (%s) in %v", c.operation, c.actor, c.kind, c.migration)
			}
		}
		if !reflect.DeepEqual(ops, []string{"INSERT", "UPDATE", "DELETE"}) {
			t.Fatalf("operations = %v", ops)
		}
		ins, upd, del := got[0], got[1], got[2]
		if ins.before != nil || ins.after["parameter_value"] != "60" || ins.after["parameter_name"] != "TIMEOUT" ||
			ins.after["updated_by"] != "alice" || ins.after["created_by"] != "alice" {
			t.Errorf("insert recorded as %+v", ins)
		}
		if upd.before["parameter_value"] != "60" || upd.after["parameter_value"] != "90" {
			t.Errorf("update recorded as %+v", upd)
		}
		if del.after != nil || del.before["parameter_value"] != "90" || fmt.Sprint(del.before["task_parameter_id"]) != "2" {
			t.Errorf("delete recorded as %+v", del)
		}
		for _, key := range []string{"task_parameter_id", "task_id", "active_flag", "create_date", "updated_date"} {
			if _, ok := ins.after[key]; !ok {
				t.Errorf("the after image has no %q: %v", key, ins.after)
			}
		}
		// Engine writes outside a PROJECT migration name none.
		if seeded := readChanges(t, db, "CFG_TASK_PARAMETERS", "1"); len(seeded) != 1 || seeded[0].migration.Valid {
			t.Errorf("the seeded parameter was recorded as %+v", seeded)
		}
		// A later update that changes no column: SQLite records nothing;
		// PostgreSQL records it, because the stamps it writes changed.
		execAll(t, actor.With(context.Background(), bob), db,
			"UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = PARAMETER_VALUE WHERE TASK_PARAMETER_ID = 1")
		want := map[engine.Kind]int{engine.SQLite: 1, engine.Postgres: 2}[db.Kind()]
		if n := len(readChanges(t, db, "CFG_TASK_PARAMETERS", "1")); n != want {
			t.Errorf("a later update changing nothing left %d change rows, want %d", n, want)
		}
	})
}

// An upsert is captured as what it did to each row: the row that conflicted
// as an UPDATE (before and after), a new row as an INSERT, in one statement.
func TestUpsertsAreCapturedRowByRow(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, _ engine.Options) {
		seed(t, db)
		ctx := engine.WithMigration(actor.With(context.Background(), bob), "0004_upsert.sql")
		execAll(t, ctx, db, `INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
			VALUES (1, 'SQL_FILE', 'load_v2.sql'), (1, 'RETRIES', '3')
			ON CONFLICT (TASK_ID, PARAMETER_NAME) WHERE ACTIVE_FLAG = 'Y'
			DO UPDATE SET PARAMETER_VALUE = excluded.PARAMETER_VALUE`)
		upd := readChanges(t, db, "CFG_TASK_PARAMETERS", "1")
		if len(upd) != 2 || upd[1].operation != "UPDATE" || upd[1].actor != "bob" || upd[1].migration.String != "0004_upsert.sql" ||
			upd[1].before["parameter_value"] != "load.sql" || upd[1].after["parameter_value"] != "load_v2.sql" ||
			upd[1].after["updated_by"] != "bob" || upd[1].after["created_by"] != "alice" {
			t.Fatalf("the upsert's update of row 1 was recorded as %+v", upd)
		}
		var newID string
		if err := db.QueryRowContext(context.Background(),
			"SELECT CAST(TASK_PARAMETER_ID AS VARCHAR) FROM CFG_TASK_PARAMETERS WHERE PARAMETER_NAME = 'RETRIES'").Scan(&newID); err != nil {
			t.Fatal(err)
		}
		ins := readChanges(t, db, "CFG_TASK_PARAMETERS", newID)
		if len(ins) != 1 || ins[0].operation != "INSERT" || ins[0].after["parameter_value"] != "3" || ins[0].after["created_by"] != "bob" {
			t.Fatalf("the upsert's new row was recorded as %+v", ins)
		}
	})
}

func TestAddedColumnsAreCaptured(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, _ engine.Options) {
		seed(t, db)
		ctx := engine.WithMigration(actor.With(context.Background(), bob), "0003_owner.sql")
		// As a PROJECT migration: the refresh follows the ALTER TABLE.
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			if err := tx.ExecRaw(ctx, "ALTER TABLE CFG_TASKS ADD COLUMN OWNER VARCHAR"); err != nil {
				return err
			}
			if err := tx.RefreshTriggers(ctx); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE CFG_TASKS SET OWNER = 'team-a' WHERE TASK_ID = 1"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, OWNER) VALUES ('late', 'ETL', 1, 'SQL', 'team-b')")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		updated := readChanges(t, db, "CFG_TASKS", "1")
		last := updated[len(updated)-1]
		if len(updated) != 2 || last.operation != "UPDATE" || last.migration.String != "0003_owner.sql" {
			t.Fatalf("changes of task 1 = %+v", updated)
		}
		if owner, ok := last.before["owner"]; !ok || owner != nil || last.after["owner"] != "team-a" ||
			last.after["updated_by"] != "bob" || last.after["created_by"] != "alice" {
			t.Errorf("the added column was recorded as before %v after %v", last.before, last.after)
		}
		inserted := readChanges(t, db, "CFG_TASKS", "3")
		if len(inserted) != 1 || inserted[0].after["owner"] != "team-b" || inserted[0].after["created_by"] != "bob" {
			t.Errorf("an insert after the new column was recorded as %+v", inserted)
		}
		var createdBy, updatedBy string
		err = db.QueryRowContext(context.Background(), "SELECT CREATED_BY, UPDATED_BY FROM CFG_TASKS WHERE TASK_ID = 1").Scan(&createdBy, &updatedBy)
		if err != nil || createdBy != "alice" || updatedBy != "bob" {
			t.Errorf("stamps of task 1 = %q %q (%v)", createdBy, updatedBy, err)
		}
		// Dropping the column again: SQLite's capture triggers name it, so a
		// migration drops them first; the refresh rebuilds them without it.
		err = db.Tx(ctx, func(tx *engine.Tx) error {
			var ddl []string
			if db.Kind() == engine.SQLite {
				for _, op := range []string{"insert", "update", "delete"} {
					ddl = append(ddl, "DROP TRIGGER trg_audit_cfg_tasks_"+op)
				}
			}
			for _, q := range append(ddl, "ALTER TABLE CFG_TASKS DROP COLUMN OWNER") {
				if err := tx.ExecRaw(ctx, q); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
			if err := tx.RefreshTriggers(ctx); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "UPDATE CFG_TASKS SET HANDLER = 'PYTHON' WHERE TASK_ID = 1")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		updated = readChanges(t, db, "CFG_TASKS", "1")
		last = updated[len(updated)-1]
		if _, has := last.after["owner"]; has || last.after["handler"] != "PYTHON" || len(updated) != 3 {
			t.Errorf("after dropping the column, changes of task 1 = %+v", updated)
		}
	})
}

// triggerNames lists the triggers of a table, as the catalog holds them.
func triggerNames(t *testing.T, db *engine.DB, table string) []string {
	t.Helper()
	query := "SELECT name FROM sqlite_master WHERE type = 'trigger' AND upper(tbl_name) = upper($1) ORDER BY name"
	if db.Kind() == engine.Postgres {
		query = `SELECT tgname FROM pg_trigger WHERE NOT tgisinternal
			AND tgrelid = (SELECT oid FROM pg_class WHERE relname = $1
			               AND relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema()))
			ORDER BY tgname`
	}
	rows, err := db.QueryContext(context.Background(), query, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

func TestProjectTablesAreGuarded(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, opts engine.Options) {
		ctx := engine.WithMigration(actor.With(context.Background(), alice), "0004_extra.sql")
		long := "aud_" + strings.Repeat("x", 70)
		for i := 0; i < 2; i++ { // the refresh can run again and again
			err := db.Tx(ctx, func(tx *engine.Tx) error {
				for _, ddl := range []string{
					`CREATE TABLE CFG_EXTRA (EXTRA_ID INTEGER PRIMARY KEY, NAME VARCHAR NOT NULL,
						CREATED_BY VARCHAR, CREATE_DATE TIMESTAMP, UPDATED_BY VARCHAR, UPDATED_DATE TIMESTAMP)`,
					"CREATE TABLE AUD_EXTRA (NOTE VARCHAR)",
					"CREATE TABLE " + long + " (NOTE VARCHAR)",
				} {
					if i == 0 {
						if err := tx.ExecRaw(ctx, ddl); err != nil {
							return err
						}
					}
					if err := tx.RefreshTriggers(ctx); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatalf("refresh %d: %v", i+1, err)
			}
		}
		cfg, aud := "CFG_EXTRA", "AUD_EXTRA"
		want := [2][]string{
			{"trg_actor_guard_cfg_extra_delete", "trg_actor_guard_cfg_extra_insert", "trg_actor_guard_cfg_extra_update",
				"trg_audit_cfg_extra_delete", "trg_audit_cfg_extra_insert", "trg_audit_cfg_extra_update"},
			{"trg_actor_guard_aud_extra_delete", "trg_actor_guard_aud_extra_insert", "trg_actor_guard_aud_extra_update"},
		}
		if db.Kind() == engine.Postgres {
			cfg, aud = "cfg_extra", "aud_extra"
			want = [2][]string{
				{"trg_actor_guard_cfg_extra", "trg_audit_cfg_extra", "trg_changes_cfg_extra", "trg_truncate_cfg_extra"},
				{"trg_actor_guard_aud_extra", "trg_truncate_aud_extra"},
			}
		}
		for i, table := range []string{cfg, aud} {
			if got := triggerNames(t, db, table); !reflect.DeepEqual(got, want[i]) {
				t.Errorf("%s triggers = %v, want %v", table, got, want[i])
			}
		}
		execAll(t, ctx, db,
			"INSERT INTO CFG_EXTRA (EXTRA_ID, NAME, CREATED_BY) VALUES (7, 'seven', 'mallory')",
			"UPDATE CFG_EXTRA SET NAME = 'SEVEN' WHERE EXTRA_ID = 7",
			"INSERT INTO AUD_EXTRA (NOTE) VALUES ('noted')",
			"INSERT INTO "+long+" (NOTE) VALUES ('noted')")
		got := readChanges(t, db, "CFG_EXTRA", "7")
		if len(got) != 2 || got[0].operation != "INSERT" || got[1].operation != "UPDATE" ||
			got[0].after["name"] != "seven" || got[0].after["created_by"] != "alice" ||
			got[1].after["name"] != "SEVEN" || fmt.Sprint(got[1].after["extra_id"]) != "7" {
			t.Fatalf("CFG_EXTRA changes = %+v", got)
		}
		assertPlainRefused(t, db, opts, []string{cfg, aud, long})
	})
}

func TestRefreshWaitsForTheChangeTable(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			if err := tx.ExecRaw(ctx, "CREATE TABLE cfg_early (ID INTEGER PRIMARY KEY)"); err != nil {
				return err
			}
			return tx.RefreshTriggers(ctx)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := triggerNames(t, db, "cfg_early"); len(got) != 0 {
			t.Fatalf("triggers before AUD_METADATA_CHANGES exists: %v", got)
		}
	})
}

// triggerSQL returns a trigger's definition as the catalog holds it.
func triggerSQL(t *testing.T, db *engine.DB, name string) string {
	t.Helper()
	query := "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = $1"
	if db.Kind() == engine.Postgres {
		query = "SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgname = $1"
	}
	var def string
	if err := db.QueryRowContext(context.Background(), query, name).Scan(&def); err != nil {
		t.Fatalf("trigger %s: %v", name, err)
	}
	return def
}

func TestRefreshKeepsExistingGuards(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, _ engine.Options) {
		ctx := context.Background()
		// A guard the table already has, as an ENGINE migration may create it.
		name, own := "trg_actor_guard_aud_keep_insert", "CREATE TRIGGER trg_actor_guard_aud_keep_insert BEFORE INSERT ON AUD_KEEP BEGIN SELECT 1; END"
		if db.Kind() == engine.Postgres {
			name, own = "trg_actor_guard_aud_keep", `CREATE TRIGGER trg_actor_guard_aud_keep BEFORE INSERT ON aud_keep
				FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_notify_execution()`
		}
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			for _, q := range []string{"CREATE TABLE AUD_KEEP (NOTE VARCHAR)", own} {
				if err := tx.ExecRaw(ctx, q); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		before := triggerSQL(t, db, name)
		if err := db.Tx(ctx, func(tx *engine.Tx) error { return tx.RefreshTriggers(ctx) }); err != nil {
			t.Fatal(err)
		}
		if after := triggerSQL(t, db, name); after != before {
			t.Errorf("the refresh replaced %s:\n%s\nwith\n%s", name, before, after)
		}
		// The missing ones are added: the other two operations, or TRUNCATE.
		want := map[engine.Kind]int{engine.SQLite: 3, engine.Postgres: 2}[db.Kind()]
		if got := triggerNames(t, db, "aud_keep"); len(got) != want {
			t.Errorf("aud_keep triggers = %v, want %d", got, want)
		}
	})
}

// guardMessage is the text of the guard's refusal, without the driver's decoration.
func guardMessage(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestAppendOnlyTables(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, _ engine.Options) {
		seed(t, db)
		ctx := actor.With(context.Background(), alice)
		for _, table := range []string{"AUD_RUN_INTERVENTIONS", "AUD_ACTIONS", "AUD_METADATA_CHANGES",
			"AUD_DEPENDENCY_CONSUMPTION", "AUD_GATE_DECISIONS"} {
			for _, w := range writes(t, db, table)[1:] {
				err := exec1(ctx, db, w)
				if want := strings.ToUpper(table) + " is append-only: its rows are immutable history; add a new row instead"; guardMessage(err) != want {
					t.Errorf("%s: %v, want %q", w, err, want)
				}
			}
		}
		// A terminal attempt cannot change; an active one can, until it ends.
		terminal := "AUD_TASK_ATTEMPTS row is immutable: the attempt is terminal; queue a new attempt instead"
		for _, w := range []string{
			"UPDATE AUD_TASK_ATTEMPTS SET ERROR_MESSAGE = 'rewritten' WHERE ATTEMPT_ID = 1",
			"DELETE FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = 1",
		} {
			if err := exec1(ctx, db, w); guardMessage(err) != terminal {
				t.Errorf("%s: %v", w, err)
			}
		}
		for _, w := range []string{
			"INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS) VALUES (1, 2, 'RUNNING')",
			"UPDATE AUD_TASK_ATTEMPTS SET HEARTBEAT_AT = LEASE_EXPIRES_AT WHERE ATTEMPT_ID = 2",
			"UPDATE AUD_TASK_ATTEMPTS SET STATUS = 'FAILED' WHERE ATTEMPT_ID = 2",
		} {
			if err := exec1(ctx, db, w); err != nil {
				t.Fatalf("%s: %v", w, err)
			}
		}
		if err := exec1(ctx, db, "UPDATE AUD_TASK_ATTEMPTS SET STATUS = 'RUNNING' WHERE ATTEMPT_ID = 2"); guardMessage(err) != terminal {
			t.Errorf("reviving a failed attempt: %v", err)
		}
		if db.Kind() == engine.Postgres {
			err := exec1(ctx, db, "TRUNCATE AUD_TASK_ATTEMPTS CASCADE")
			if err == nil || !strings.Contains(err.Error(), "immutable") {
				t.Errorf("truncating attempts: %v", err)
			}
		}
		// A purge (retention) may delete history, never rewrite it.
		retention := engine.ForPurge(ctx)
		for _, table := range []string{"AUD_RUN_INTERVENTIONS", "AUD_ACTIONS", "AUD_METADATA_CHANGES",
			"AUD_DEPENDENCY_CONSUMPTION", "AUD_GATE_DECISIONS"} {
			for _, w := range writes(t, db, table)[1:] {
				if strings.HasPrefix(w, "DELETE") {
					continue
				}
				err := exec1(retention, db, w)
				if want := strings.ToUpper(table) + " is append-only: its rows are immutable history; add a new row instead"; guardMessage(err) != want {
					t.Errorf("a purge's %s: %v, want %q", w, err, want)
				}
			}
		}
		if err := exec1(retention, db, "UPDATE AUD_TASK_ATTEMPTS SET ERROR_MESSAGE = 'rewritten' WHERE ATTEMPT_ID = 1"); guardMessage(err) != terminal {
			t.Errorf("a purge's update of a terminal attempt: %v", err)
		}
		for _, w := range []string{
			"DELETE FROM AUD_GATE_DECISIONS", "DELETE FROM AUD_DEPENDENCY_CONSUMPTION", "DELETE FROM AUD_RUN_INTERVENTIONS",
			"DELETE FROM AUD_ACTIONS", "DELETE FROM AUD_METADATA_CHANGES", "DELETE FROM AUD_TASK_ATTEMPTS",
		} {
			if err := exec1(retention, db, w); err != nil {
				t.Errorf("retention %s: %v", w, err)
			}
		}
		if n := count(t, db, "aud_task_attempts") + count(t, db, "aud_actions"); n != 0 {
			t.Errorf("%d rows left after retention", n)
		}
	})
}

func TestGuardMessagesAreTheSameOnBothDialects(t *testing.T) {
	t.Parallel()
	var messages [2]map[string]string
	for i, k := range enginetest.Kinds {
		db := initialized(t, enginetest.NewOptions(t, k))
		// An engine connection whose actor is empty is refused like a plain one,
		// but with the guard's own words on SQLite too.
		nobody := actor.With(context.Background(), actor.Actor{})
		messages[i] = map[string]string{}
		for _, table := range guardedTables(t, db) {
			err := exec1(nobody, db, "INSERT INTO "+quote(table)+" DEFAULT VALUES")
			messages[i][strings.ToUpper(table)] = guardMessage(err)
		}
	}
	if !reflect.DeepEqual(messages[0], messages[1]) {
		t.Errorf("guard messages differ:\nsqlite   %v\npostgres %v", messages[0], messages[1])
	}
	for table, want := range map[string]string{
		"CFG_TASKS":                 "CFG_TASKS is written only by etl-craft: change metadata in a project migration and run etl-craft migrate",
		"CFG_API_TOKENS":            "CFG_API_TOKENS is written only by etl-craft: manage API tokens with etl-craft token",
		"AUD_PIPELINES_RUN_LOG":     "AUD_PIPELINES_RUN_LOG is written only by etl-craft: audit rows change only through etl-craft commands such as run, mark and cancel",
		"AUD_TARGET_HASH_VERSION":   "AUD_TARGET_HASH_VERSION is written only by etl-craft: upgrade merge targets with etl-craft rehash",
		"AUD_TARGET_VIEW_STATEMENT": "AUD_TARGET_VIEW_STATEMENT is written only by etl-craft: etl-craft run records view statements",
	} {
		if messages[0][table] != want {
			t.Errorf("%s guard says %q, want %q", table, messages[0][table], want)
		}
	}
}

// runActors reads who started and ended a run.
func runActors(t *testing.T, db *engine.DB, runID int) string {
	t.Helper()
	var sb, sk, eb, ek sql.NullString
	err := db.QueryRowContext(context.Background(),
		"SELECT STARTED_BY, STARTED_BY_KIND, ENDED_BY, ENDED_BY_KIND FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1",
		runID).Scan(&sb, &sk, &eb, &ek)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s/%s %s/%s", sb.String, sk.String, eb.String, ek.String)
}

func TestRunsAreAttributed(t *testing.T) {
	t.Parallel()
	eachInitialized(t, func(t *testing.T, db *engine.DB, _ engine.Options) {
		seed(t, db)
		ctx := actor.With(context.Background(), alice)
		at := db.TimeArg(seededAt)
		for _, w := range []struct {
			query string
			args  []any
		}{
			{query: "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS) VALUES (1, 'IN-PROGRESS')"},                                                // run 2
			{query: "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, STARTED_BY, STARTED_BY_KIND) VALUES (2, 'QUEUED', 'bob', 'ORCHESTRATOR')"}, // run 3
			{query: "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, STARTED_BY, END_DATE) VALUES (2, 'SKIPPED', NULL, $1)", args: []any{at}},   // run 4
			{query: "UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = $1, ENDED_BY = 'etl-craft', ENDED_BY_KIND = 'SYSTEM' WHERE PIPELINE_RUN_ID = 2", args: []any{at}},
			{query: "UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'CANCELLED', END_DATE = $1 WHERE PIPELINE_RUN_ID = 3", args: []any{at}},
		} {
			if err := exec1(ctx, db, w.query, w.args...); err != nil {
				t.Fatalf("%s: %v", w.query, err)
			}
		}
		// PostgreSQL attributes a later ending too; on SQLite the writer names
		// the ending actor itself, as the engine always does.
		ended3 := map[engine.Kind]string{engine.SQLite: "bob/ORCHESTRATOR /", engine.Postgres: "bob/ORCHESTRATOR alice/HUMAN"}[db.Kind()]
		for run, want := range map[int]string{
			2: "alice/HUMAN etl-craft/SYSTEM",
			3: ended3,
			4: "alice/HUMAN alice/HUMAN",
		} {
			if got := runActors(t, db, run); got != want {
				t.Errorf("run %d actors = %q, want %q", run, got, want)
			}
		}
		var requestedBy, requestedKind, interventionKind, pauseKind string
		err := db.QueryRowContext(context.Background(), `SELECT a.REQUESTED_BY, a.REQUESTED_BY_KIND, i.REQUESTED_BY_KIND, p.PAUSED_BY_KIND
			FROM AUD_TASK_ATTEMPTS a, AUD_RUN_INTERVENTIONS i, AUD_PIPELINE_PAUSES p`).Scan(&requestedBy, &requestedKind, &interventionKind, &pauseKind)
		if err != nil || requestedBy != "alice" || requestedKind != "HUMAN" || interventionKind != "HUMAN" || pauseKind != "HUMAN" {
			t.Errorf("request actors = %q %q %q %q (%v)", requestedBy, requestedKind, interventionKind, pauseKind, err)
		}
	})
}
