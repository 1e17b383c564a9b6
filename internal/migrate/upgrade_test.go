package migrate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/catalog"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// releasedSchema is a release's schema of a dialect, under testdata/released
// at the repository root.
func releasedSchema(t testing.TB, release string, kind engine.Kind) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "released", release, string(kind)+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// execAll runs every statement of a SQL text in one transaction.
func execAll(t testing.TB, db *engine.DB, text string) {
	t.Helper()
	d := sqlscan.SQLite
	if db.Kind() == engine.Postgres {
		d = sqlscan.Postgres
	}
	err := db.Tx(context.Background(), func(tx *engine.Tx) error {
		for _, s := range sqlscan.Split(text, d) {
			if err := tx.ExecRaw(context.Background(), s.Text); err != nil {
				return fmt.Errorf("line %d: %w\n%s", s.Line, err, s.Text)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// installRelease gives an empty Engine DB the 0.1.0 schema, as teams running
// that release have it: no ledger rows.
func installRelease(t testing.TB, db *engine.DB) {
	t.Helper()
	execAll(t, db, releasedSchema(t, "0.1.0", db.Kind()))
}

func snapshot(t testing.TB, db *engine.DB) catalog.Snapshot {
	t.Helper()
	s, err := catalog.Take(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// freshSnapshot is the snapshot of a new Engine DB of the dialect made by
// init-db, with the project DDL applied after it.
func freshSnapshot(t *testing.T, kind engine.Kind, projectDDL string) catalog.Snapshot {
	t.Helper()
	db := enginetest.Open(t, kind)
	initDB(t, db)
	if projectDDL != "" {
		execAll(t, db, projectDDL)
	}
	return snapshot(t, db)
}

func assertSameSnapshot(t *testing.T, what string, got, want catalog.Snapshot) {
	t.Helper()
	if diff := got.Diff(want); len(diff) > 0 {
		t.Fatalf("%s: %d difference(s):\n%s", what, len(diff), strings.Join(diff, "\n"))
	}
}

func TestReleasedSchemaUpgradesToTheFreshSchema(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		installRelease(t, db)
		applied, err := (&migrate.Runner{DB: db}).Migrate(ctx)
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
		eng, err := migrate.EngineStream(db.Kind())
		if err != nil || len(applied) != len(eng.Files) {
			t.Fatalf("applied %v", names(applied))
		}
		assertSameSnapshot(t, "upgraded vs fresh", snapshot(t, db), freshSnapshot(t, db.Kind(), ""))
	})
}

// The seed of a 0.1.0 Engine DB. Ids start at 1 on both dialects; the last
// pipeline, task, run and task run are deleted, so that each identity
// counter is ahead of the highest id. Codes break the code rule in an
// active and an inactive row of each table.
const releasedSeed = `
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, DESCRIPTION, RUN_SCHEDULE, SLA_IN_HOURS, REFRESH_TYPE, PIPELINE_PARAMETERS)
VALUES ('P_MAIN', 'Main', 'the main pipeline', '0 6 * * *', 1.5, 'INCREMENTAL', '{"owner": "team"}');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('bad code', 'Bad', 'FULL');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, ACTIVE_FLAG) VALUES ('2load', 'Retired', 'FULL', 'N');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P_UP', 'Upstream', 'FULL');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P_GONE', 'Deleted', 'FULL');
DELETE FROM CFG_PIPELINES WHERE PIPELINE_ID = 5;

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('load', 'INGESTION', 1, 'PYTHON');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('__init__', 'ETL', 1, 'SQL');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, ACTIVE_FLAG) VALUES ('x.y', 'ETL', 1, 'SQL', 'N');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, RUN_CONDITION, RUN_CONDITION_COUNT)
VALUES ('transform', 'ETL', 1, 'SQL', 'N', 1);
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('up_task', 'ETL', 4, 'SQL');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('gone', 'ETL', 1, 'SQL');
DELETE FROM CFG_TASKS WHERE TASK_ID = 6;

INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE) VALUES (1, 4, 'SUCCESS');
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) VALUES (1, 4, 1, 'SUCCESS');
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
VALUES (1, 1, 4, 5, 'HAS_DATA');
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES (1, 'BEHAVIOUR', 'succeed');
INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
                                BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)
VALUES ('no_nulls', 1, 4, 'SELECT id FROM t WHERE x IS NULL', 'REJECT', 'id', 't', 1);

INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE, END_DATE, STATUS, SLA_STATUS) VALUES
    (4, '2026-01-01 01:00:00.000000+00:00', '2026-01-01 01:10:00.000000+00:00', 'SUCCESS', 'MET'),
    (1, '2026-01-02 02:00:00.000000+00:00', '2026-01-02 02:30:00.000000+00:00', 'SUCCESS', 'BREACHED'),
    (1, '2026-01-03 03:00:00.000000+00:00', NULL, 'IN-PROGRESS', NULL),
    (4, '2026-01-03 04:00:00.000000+00:00', NULL, 'IN-PROGRESS', NULL),
    (1, '2026-01-01 05:00:00.000000+00:00', '2026-01-01 05:05:00.000000+00:00', 'FAILED', NULL),
    (1, '2026-01-04 06:00:00.000000+00:00', '2026-01-04 06:01:00.000000+00:00', 'CANCELLED', NULL);
DELETE FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 6;

INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, START_DATE, END_DATE, STATUS, SOURCE_COUNT, TARGET_COUNT,
                              INSERT_COUNT, UPDATE_COUNT, DELETE_COUNT, ERROR_MESSAGE, TASK_LOG, ATTEMPT_COUNT) VALUES
    (5, 1, '2026-01-01 01:01:00.000000+00:00', '2026-01-01 01:09:00.000000+00:00', 'SUCCESS', 10, 9, 8, 7, 6, NULL, 'log 1', 1),
    (1, 2, '2026-01-02 02:01:00.000000+00:00', '2026-01-02 02:10:00.000000+00:00', 'SUCCESS', 10, 9, 8, 7, 6, NULL, 'log 2', 2),
    (4, 2, '2026-01-02 02:11:00.000000+00:00', '2026-01-02 02:20:00.000000+00:00', 'FAILED', 10, 9, 8, 7, 6, 'why', 'log 3', 3),
    (2, 2, '2026-01-02 02:21:00.000000+00:00', '2026-01-02 02:21:00.000000+00:00', 'SKIPPED', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1),
    (1, 3, '2026-01-03 03:01:00.000000+00:00', NULL, 'IN-PROGRESS', NULL, NULL, NULL, NULL, NULL, NULL, 'log 5', 1),
    (4, 3, '2026-01-03 03:02:00.000000+00:00', '2026-01-03 03:03:00.000000+00:00', 'CANCELLED', 1, 0, 0, 0, 0, 'cancelled', 'log 6', 2),
    (1, 5, '2026-01-01 05:01:00.000000+00:00', '2026-01-01 05:02:00.000000+00:00', 'FAILED', NULL, NULL, NULL, NULL, NULL, 'gone', NULL, 1);
DELETE FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = 7;

INSERT INTO AUD_PIPELINE_DEPENDENCY_TRACKER (PIPELINE_DEPENDENCY_ID, PIPELINE_ID, DEPENDS_ON_PIPELINE_ID,
                                             LAST_CONSUMED_PIPELINE_RUN_ID, LAST_CONSUMED_END_DATE, LAST_UPDATED_TIMESTAMP)
VALUES (1, 1, 4, 1, '2026-01-01 01:10:00.000000+00:00', '2026-01-02 02:00:01.000000+00:00');
INSERT INTO AUD_TASK_DEPENDENCY_TRACKER (TASK_DEPENDENCY_ID, TASK_ID, PIPELINE_ID, DEPENDS_ON_TASK_ID, DEPENDS_ON_PIPELINE_ID,
                                         LAST_CONSUMED_TASK_RUN_ID, LAST_CONSUMED_END_DATE, LAST_UPDATED_TIMESTAMP) VALUES
    (1, 4, 1, 1, 1, NULL, NULL, '2026-01-02 02:00:02.000000+00:00'),
    (2, 1, 1, 5, 4, 1, '2026-01-01 01:09:00.000000+00:00', '2026-01-02 02:01:01.000000+00:00');

INSERT INTO AUD_RUN_INTERVENTIONS (PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, ACTION, FROM_STATUS, TO_STATUS, TARGET_COUNT,
                                   PREVIOUS_MESSAGE, REASON, REQUESTED_BY, REQUESTED_AT) VALUES
    (1, 3, NULL, 'REOPEN', 'SUCCESS', 'IN-PROGRESS', NULL, NULL, 'late data', 'alice', '2026-01-03 03:00:00.000000+00:00'),
    (1, 5, NULL, 'REOPEN', 'SUCCESS', 'IN-PROGRESS', NULL, NULL, 'bad totals', 'alice', '2026-01-01 05:00:00.000000+00:00'),
    (1, 2, 4, 'MARK', 'FAILED', 'SUCCESS', 9, 'why', 'checked by hand', 'bob', '2026-01-02 03:00:00.000000+00:00');

` + auditSeedRows

// auditSeedRows are the rows of a seed in the audit tables no migration
// changes: a business rule's run and result for task run 3, an offset of task
// 1, lineage of task 4, a docs publication and a documentation version.
const auditSeedRows = `
INSERT INTO AUD_BUSINESS_RULES_RUN_LOG (BUSINESS_RULE_ID, TASK_RUN_ID, START_DATE, END_DATE, STATUS)
VALUES (1, 3, '2026-01-02 02:12:00.000000+00:00', '2026-01-02 02:13:00.000000+00:00', 'FAILED');
INSERT INTO AUD_BUSINESS_RULES_RESULTS (BUSINESS_RULE_RUN_ID, BUSINESS_RULE_ID, BUSINESS_RULE_KEY, TARGET_TABLE, STATUS, START_DATE)
VALUES (1, 1, '17', 't', 'REJECT', '2026-01-02 02:13:00.000000+00:00');
INSERT INTO AUD_TASK_OFFSET_TRACKER (TASK_ID, OFFSET_TYPE, OFFSET_VALUE, LAST_UPDATED_TIMESTAMP)
VALUES (1, 'NUMBER', '42', '2026-01-02 02:10:00.000000+00:00');
INSERT INTO AUD_COLUMN_LINEAGE (TASK_ID, SOURCE_SQL_HASH, TARGET_OBJECT, TARGET_COLUMN, SOURCE_OBJECT, SOURCE_COLUMN, COMPUTED_AT)
VALUES (4, 'abc', 'wh.t', 'x', 'wh.src', 'y', '2026-01-02 02:11:00.000000+00:00');
INSERT INTO AUD_DOCS_PUBLICATION (PUBLISHED_URL, FIRST_PUBLISHED, LAST_PUBLISHED)
VALUES ('https://docs.example/catalog', '2026-01-02 00:00:00.000000+00:00', '2026-01-03 00:00:00.000000+00:00');
INSERT INTO AUD_TASK_DOCUMENTATION (TASK_ID, VERSION, DOCUMENTATION_HASH, DOCUMENTATION, RECORDED_AT)
VALUES (1, 1, 'h1', 'Loads the data.', '2026-01-02 00:00:00.000000+00:00');
`

// renameBadCodes is the project's fix for the codes releasedSeed breaks the
// rule with.
const renameBadCodes = `
UPDATE CFG_PIPELINES SET PIPELINE_CODE = 'P_BAD' WHERE PIPELINE_ID = 2;
UPDATE CFG_PIPELINES SET PIPELINE_CODE = 'P_RETIRED' WHERE PIPELINE_ID = 3;
UPDATE CFG_TASKS SET TASK_CODE = 'init' WHERE TASK_ID = 2;
UPDATE CFG_TASKS SET TASK_CODE = 'x_y' WHERE TASK_ID = 3;
`

// releasedSeedRunHistory is what a database seeded with releasedSeed gains
// once 0002 added RUN_DATE and BACKFILL and 0004 ROWS_WRITTEN (as 0.2.0 had
// them): a backfill run, a deleted run ahead of it, row counts and a pause.
const releasedSeedRunHistory = `
INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE, END_DATE, STATUS, SLA_STATUS, RUN_DATE, BACKFILL) VALUES
    (4, '2026-01-05 07:00:00.000000+00:00', '2026-01-05 07:30:00.000000+00:00', 'SUCCESS', 'MET', '2025-12-31', 'Y'),
    (4, '2026-01-05 08:00:00.000000+00:00', '2026-01-05 08:30:00.000000+00:00', 'FAILED', NULL, '2026-01-05', 'N');
DELETE FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 8;
UPDATE AUD_TASK_RUN_LOG SET ROWS_WRITTEN = 5 WHERE SOURCE_COUNT = 10;
INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_AT, PAUSED_BY, REASON)
VALUES (4, '2026-01-05 09:00:00.000000+00:00', 'carol', 'upstream outage');
`

// projectObjects are a team's own index, view, table and trigger on the
// tables the upgrade rebuilds on SQLite, as of 0.1.0.
func projectObjects(kind engine.Kind) string {
	ddl := `
CREATE INDEX team_ix_tasks_handler ON CFG_TASKS (HANDLER);
CREATE VIEW team_active_tasks AS SELECT TASK_ID, TASK_CODE FROM CFG_TASKS WHERE ACTIVE_FLAG = 'Y';
CREATE TABLE team_run_ids (PIPELINE_RUN_ID BIGINT NOT NULL);
`
	if kind == engine.Postgres {
		return ddl + `
CREATE FUNCTION team_copy_run() RETURNS trigger LANGUAGE plpgsql AS $copy$
BEGIN
    INSERT INTO team_run_ids (PIPELINE_RUN_ID) VALUES (NEW.PIPELINE_RUN_ID);
    RETURN NULL;
END
$copy$;
CREATE TRIGGER team_copy_run AFTER INSERT ON AUD_PIPELINES_RUN_LOG
    FOR EACH ROW EXECUTE FUNCTION team_copy_run();
`
	}
	return ddl + `
CREATE TRIGGER team_copy_run AFTER INSERT ON AUD_PIPELINES_RUN_LOG
BEGIN
    INSERT INTO team_run_ids (PIPELINE_RUN_ID) VALUES (NEW.PIPELINE_RUN_ID);
END;
`
}

// runLogObjects are a team's own index and view on columns 0002 added.
const runLogObjects = `
CREATE INDEX team_ix_run_date ON AUD_PIPELINES_RUN_LOG (RUN_DATE);
CREATE VIEW team_runs AS SELECT PIPELINE_RUN_ID, RUN_DATE FROM AUD_PIPELINES_RUN_LOG;
`

// seededTables are the tables the seeds of the released schemas fill
// (releasedSeed, releasedSeedRunHistory, reference020Seed) that every later
// schema keeps.
var seededTables = []string{
	"CFG_PIPELINES", "CFG_PIPELINE_DEPENDENCY", "CFG_TASKS", "CFG_TASK_DEPENDENCY", "CFG_TASK_PARAMETERS",
	"CFG_BUSINESS_RULES", "AUD_PIPELINES_RUN_LOG", "AUD_TASK_RUN_LOG", "AUD_RUN_INTERVENTIONS",
	"AUD_BUSINESS_RULES_RUN_LOG", "AUD_BUSINESS_RULES_RESULTS", "AUD_TASK_OFFSET_TRACKER", "AUD_COLUMN_LINEAGE",
	"AUD_DOCS_PUBLICATION", "AUD_TASK_DOCUMENTATION", "AUD_PIPELINE_PAUSES", "AUD_DEPENDENCY_CONSUMPTION",
	"team_run_ids",
}

// tableRows is every row of each table that exists, as text, on the columns
// it has now: tableRows(t, db, nil) reads them all, tableRows(t, db, before)
// the columns before had, to show that an upgrade kept every value.
func tableRows(t *testing.T, db *engine.DB, columnsOf map[string][]string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range seededTables {
		cols := columnsOf[table]
		if cols == nil {
			cols = columnNames(t, db, table)
		}
		if cols == nil {
			continue
		}
		quoted := make([]string, len(cols))
		for i, c := range cols {
			quoted[i] = `"` + c + `"`
		}
		out[table] = rowStrings(t, db, "SELECT "+strings.Join(quoted, ", ")+" FROM "+table+" ORDER BY 1")
	}
	return out
}

// columnNames returns a table's columns as the catalog spells them, or nil
// when it has no such table.
func columnNames(t *testing.T, db *engine.DB, table string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "SELECT * FROM "+table+" WHERE 1 = 0")
	if err != nil {
		return nil
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	return cols
}

// columnsOf returns the columns each of the seeded tables has now.
func columnsOf(t *testing.T, db *engine.DB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range seededTables {
		if cols := columnNames(t, db, table); cols != nil {
			out[table] = cols
		}
	}
	return out
}

// rowStrings runs a query and returns each row as its values joined by "|"
// (see enginetest.Rows).
func rowStrings(t *testing.T, db *engine.DB, query string, args ...any) []string {
	t.Helper()
	return enginetest.Rows(t, db, query, args...)
}

func ledgerOf(t *testing.T, db *engine.DB) string { return strings.Join(ledger(t, db), ",") }

// engineFilesBefore lists "ENGINE/<file>" for every packaged file that sorts
// before name, as the ledger does.
func engineFilesBefore(t *testing.T, kind engine.Kind, name string) string {
	t.Helper()
	eng, err := migrate.EngineStream(kind)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range eng.Files {
		if f.Name < name {
			out = append(out, "ENGINE/"+f.Name)
		}
	}
	return strings.Join(out, ",")
}

// migrateThrough applies the ENGINE files up to and including last, and
// stops there.
func migrateThrough(t *testing.T, db *engine.DB, last string) {
	t.Helper()
	if applied, err := migrateUntil(context.Background(), db, last); err != nil {
		t.Fatalf("migrating through %s applied %v: %v", last, names(applied), err)
	}
}

// migrateUntil runs migrate until the file named last has committed, and
// cancels the context of the files after it.
func migrateUntil(ctx context.Context, db *engine.DB, last string) ([]migrate.File, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &migrate.Runner{DB: db, OnApplied: func(f migrate.File) {
		if f.Name == last {
			cancel()
		}
	}}
	applied, err := r.Migrate(ctx)
	if len(applied) > 0 && applied[len(applied)-1].Name == last {
		return applied, nil
	}
	if err == nil {
		err = fmt.Errorf("%s was not applied", last)
	}
	return applied, err
}

// oneSQLiteConnection limits a SQLite Engine DB to one connection: the
// settings a rebuild changes are the connection's, so that
// assertRebuildSettingsRestored sees the very one the rebuild used.
// (PostgreSQL holds the MIGRATE lock on a connection of its own.)
func oneSQLiteConnection(db *engine.DB) {
	if db.Kind() == engine.SQLite {
		db.SQL().SetMaxOpenConns(1)
	}
}

// assertRebuildSettingsRestored checks, on a SQLite Engine DB limited to one
// connection, that foreign keys are enforced again and legacy_alter_table is
// off, and that no reference is broken.
func assertRebuildSettingsRestored(t *testing.T, db *engine.DB) {
	t.Helper()
	if db.Kind() != engine.SQLite {
		return
	}
	got := rowStrings(t, db, "SELECT (SELECT foreign_keys FROM pragma_foreign_keys), (SELECT legacy_alter_table FROM pragma_legacy_alter_table)")
	if got[0] != "1|0" {
		t.Fatalf("foreign_keys|legacy_alter_table = %s, want 1|0", got[0])
	}
	if broken := rowStrings(t, db, "SELECT * FROM pragma_foreign_key_check"); len(broken) > 0 {
		t.Fatalf("broken references: %v", broken)
	}
}

func TestUpgradeFromReleasedKeepsHistoryIdsAndProjectObjects(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		oneSQLiteConnection(db)
		installRelease(t, db)
		execAll(t, db, releasedSeed)
		execAll(t, db, projectObjects(db.Kind()))

		// The code check lists every bad code, inactive rows included, and
		// applies nothing.
		before := snapshot(t, db)
		applied, err := (&migrate.Runner{DB: db}).Migrate(ctx)
		if !exit.Is(err, exit.Migration) || len(applied) != 0 {
			t.Fatalf("migrate with bad codes: applied %v, %v", names(applied), err)
		}
		for _, bad := range []string{`CFG_PIPELINES.PIPELINE_CODE "bad code"`, `CFG_PIPELINES.PIPELINE_CODE "2load"`,
			`CFG_TASKS.TASK_CODE "__init__"`, `CFG_TASKS.TASK_CODE "x.y"`, "rename"} {
			if !strings.Contains(err.Error(), bad) {
				t.Errorf("the code check does not mention %s: %v", bad, err)
			}
		}
		if strings.Contains(err.Error(), `"P_MAIN"`) || strings.Contains(err.Error(), `"load"`) {
			t.Errorf("the code check lists a valid code: %v", err)
		}
		if got := ledgerOf(t, db); got != "" {
			t.Fatalf("ledger after the code check: %s", got)
		}
		assertSameSnapshot(t, "after the code check", snapshot(t, db), before)

		// Renamed, the upgrade goes on: through 0006, the run history of
		// 0.2.0, then the rest.
		execAll(t, db, renameBadCodes)
		migrateThrough(t, db, "0006_run_backfill_constraint.sql")
		execAll(t, db, releasedSeedRunHistory)
		execAll(t, db, runLogObjects)
		rowsBefore := tableRows(t, db, nil)
		columnsBefore := columnsOf(t, db)
		applied, err = (&migrate.Runner{DB: db}).Migrate(ctx)
		if err != nil {
			t.Fatalf("migrate: %v", err)
		}
		if got, want := ledgerOf(t, db), engineFilesBefore(t, db.Kind(), "9999"); got != want {
			t.Fatalf("ledger %s, want %s", got, want)
		}
		assertRebuildSettingsRestored(t, db)

		// Every seeded row keeps every value it had.
		rowsAfter := tableRows(t, db, columnsBefore)
		for _, table := range seededTables {
			if strings.Join(rowsAfter[table], "\n") != strings.Join(rowsBefore[table], "\n") {
				t.Errorf("%s changed:\nbefore %q\nafter  %q", table, rowsBefore[table], rowsAfter[table])
			}
		}

		// Runs: legacy keys, BACKFILL or MANUAL, revision 1, repair pending
		// only for the run in progress with a REOPEN; no actor invented.
		wantRuns := []string{
			"1|legacy:1|MANUAL|1|N|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
			"2|legacy:2|MANUAL|1|N|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
			"3|legacy:3|MANUAL|1|Y|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
			"4|legacy:4|MANUAL|1|N|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
			"5|legacy:5|MANUAL|1|N|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
			"7|legacy:7|BACKFILL|1|N|NULL|NULL|NULL|NULL|NULL|NULL|NULL",
		}
		assertRows(t, db, wantRuns, `SELECT PIPELINE_RUN_ID, RUN_KEY, TRIGGER_KIND, OUTPUT_REVISION, REPAIR_PENDING,
			OWNER_ID, LEASE_EXPIRES_AT, CONFIG_SHA256, STARTED_BY, STARTED_BY_KIND, ENDED_BY, ENDED_BY_KIND
			FROM AUD_PIPELINES_RUN_LOG ORDER BY PIPELINE_RUN_ID`)

		// One attempt per task summary that ran, at its ATTEMPT_COUNT.
		wantAttempts := []string{
			"1|1|SUCCESS|2026-01-01 01:01:00.000000+00:00|2026-01-01 01:09:00.000000+00:00|10|9|8|7|6|5|NULL|log 1|NULL|NULL|1",
			"2|2|SUCCESS|2026-01-02 02:01:00.000000+00:00|2026-01-02 02:10:00.000000+00:00|10|9|8|7|6|5|NULL|log 2|NULL|NULL|1",
			"3|3|FAILED|2026-01-02 02:11:00.000000+00:00|2026-01-02 02:20:00.000000+00:00|10|9|8|7|6|5|why|log 3|NULL|NULL|1",
			"5|1|RUNNING|2026-01-03 03:01:00.000000+00:00|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|log 5|NULL|NULL|1",
			"6|2|CANCELLED|2026-01-03 03:02:00.000000+00:00|2026-01-03 03:03:00.000000+00:00|1|0|0|0|0|NULL|cancelled|log 6|NULL|NULL|1",
		}
		assertRows(t, db, wantAttempts, `SELECT TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, STARTED_AT, ENDED_AT,
			SOURCE_COUNT, TARGET_COUNT, INSERT_COUNT, UPDATE_COUNT, DELETE_COUNT, ROWS_WRITTEN, ERROR_MESSAGE, TASK_LOG,
			REQUESTED_BY, REQUESTED_BY_KIND, CASE WHEN RETRYABLE THEN 1 ELSE 0 END
			FROM AUD_TASK_ATTEMPTS ORDER BY TASK_RUN_ID`)

		// The trackers' last consumptions, at revision 1.
		assertRows(t, db, []string{
			"1|1|NULL|1|NULL|NULL|4|1|NULL|2026-01-02 02:00:01.000000+00:00|1",
			"2|NULL|2|1|NULL|1|4|1|1|2026-01-02 02:01:01.000000+00:00|1",
		}, `SELECT CONSUMPTION_ID, PIPELINE_DEPENDENCY_ID, TASK_DEPENDENCY_ID, PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID,
			DEPENDS_ON_PIPELINE_ID, CONSUMED_PIPELINE_RUN_ID, CONSUMED_TASK_RUN_ID, CONSUMED_AT, CONSUMED_REVISION
			FROM AUD_DEPENDENCY_CONSUMPTION ORDER BY CONSUMPTION_ID`)

		// No actor is invented for history; new settings take their defaults.
		assertRows(t, db, []string{"1|NULL", "2|NULL", "3|NULL"},
			"SELECT INTERVENTION_ID, REQUESTED_BY_KIND FROM AUD_RUN_INTERVENTIONS ORDER BY 1")
		assertRows(t, db, []string{"1|carol|NULL|NULL"},
			"SELECT PIPELINE_PAUSE_ID, PAUSED_BY, PAUSED_BY_KIND, RESUMED_BY_KIND FROM AUD_PIPELINE_PAUSES")
		assertRows(t, db, []string{"1|Y", "2|Y"}, "SELECT TASK_DEPENDENCY_ID, CONSUME_REPAIRS FROM CFG_TASK_DEPENDENCY ORDER BY 1")
		assertRows(t, db, []string{"1|Y"}, "SELECT PIPELINE_DEPENDENCY_ID, CONSUME_REPAIRS FROM CFG_PIPELINE_DEPENDENCY")
		assertRows(t, db, []string{"1|N|1|SKIP", "2|N|1|SKIP", "3|N|1|SKIP", "4|N|1|SKIP"},
			"SELECT PIPELINE_ID, CATCHUP, MAX_CATCHUP_RUNS, OVERLAP_POLICY FROM CFG_PIPELINES ORDER BY 1")
		assertRows(t, db, nil, "SELECT * FROM AUD_TARGET_HASH_VERSION")
		if db.Kind() == engine.Postgres {
			assertRows(t, db, []string{"ck_pipelines_code|true", "ck_tasks_code|true"},
				"SELECT conname, convalidated FROM pg_constraint WHERE conname IN ('ck_pipelines_code', 'ck_tasks_code') ORDER BY 1")
		}

		// The project's objects still work, and identity counters continue
		// after the deleted rows.
		assertRows(t, db, []string{"1|load", "2|init", "4|transform", "5|up_task"},
			"SELECT TASK_ID, TASK_CODE FROM team_active_tasks ORDER BY 1")
		assertRows(t, db, []string{"7|2025-12-31 00:00:00.000000+00:00"},
			"SELECT PIPELINE_RUN_ID, RUN_DATE FROM team_runs WHERE PIPELINE_RUN_ID = 7")
		pipelineID, taskID, runID, taskRunID := writeAfterUpgrade(t, db)
		if pipelineID <= 5 || taskID <= 6 || runID <= 8 || taskRunID <= 7 {
			t.Fatalf("new ids %d, %d, %d, %d reuse deleted ones (5, 6, 8, 7)", pipelineID, taskID, runID, taskRunID)
		}
		assertRows(t, db, []string{fmt.Sprintf("%d|etl-craft|SYSTEM", runID)},
			"SELECT PIPELINE_RUN_ID, STARTED_BY, STARTED_BY_KIND FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", runID)
		assertRows(t, db, []string{"7", "8", fmt.Sprint(runID)}, "SELECT PIPELINE_RUN_ID FROM team_run_ids ORDER BY 1")
		err = db.Tx(ctx, func(tx *engine.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('__finalize__', 'ETL', 1, 'SQL')")
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "ck_tasks_code") {
			t.Fatalf("an invalid task code was accepted after the upgrade: %v", err)
		}

		// Nothing is left to apply, and the schema is a fresh one's with the
		// project's objects.
		if again, err := (&migrate.Runner{DB: db}).Migrate(ctx); err != nil || len(again) != 0 {
			t.Fatalf("second migrate applied %v (%v)", names(again), err)
		}
		assertSameSnapshot(t, "upgraded vs fresh", snapshot(t, db),
			freshSnapshot(t, db.Kind(), projectObjects(db.Kind())+runLogObjects))
	})
}

// writeAfterUpgrade inserts, as the engine does, a pipeline, a task of it, a
// run of it and a task run, and returns their ids.
func writeAfterUpgrade(t *testing.T, db *engine.DB) (pipelineID, taskID, runID, taskRunID int64) {
	t.Helper()
	ctx := context.Background()
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		if err := tx.QueryRowContext(ctx, "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P_NEW', 'New', 'FULL') RETURNING PIPELINE_ID").Scan(&pipelineID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('new_task', 'ETL', $1, 'SQL') RETURNING TASK_ID", pipelineID).Scan(&taskID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS) VALUES ($1, 'IN-PROGRESS') RETURNING PIPELINE_RUN_ID", pipelineID).Scan(&runID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS) VALUES ($1, $2, 'IN-PROGRESS') RETURNING TASK_RUN_ID", taskID, runID).Scan(&taskRunID)
	})
	if err != nil {
		t.Fatalf("writing after the upgrade: %v", err)
	}
	return pipelineID, taskID, runID, taskRunID
}

// assertRows checks the rows of a query, as rowStrings gives them.
func assertRows(t *testing.T, db *engine.DB, want []string, query string, args ...any) {
	t.Helper()
	got := rowStrings(t, db, query, args...)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s\ngot  %q\nwant %q", query, got, want)
	}
}

// previousEngineFile returns the packaged file just before name.
func previousEngineFile(t *testing.T, kind engine.Kind, name string) string {
	t.Helper()
	eng, err := migrate.EngineStream(kind)
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	for _, f := range eng.Files {
		if f.Name == name {
			return prev
		}
		prev = f.Name
	}
	t.Fatalf("no packaged migration %s", name)
	return ""
}

func TestAFailureAtTheLedgerWriteOfARebuildChangesNothing(t *testing.T) {
	for _, file := range []string{"0005_metadata_codes.sql", "0006_run_backfill_constraint.sql", "0007_identity.sql"} {
		t.Run(strings.TrimSuffix(file, ".sql"), func(t *testing.T) {
			enginetest.Each(t, func(t *testing.T, db *engine.DB) {
				ctx := context.Background()
				oneSQLiteConnection(db)
				installRelease(t, db)
				execAll(t, db, releasedSeed+renameBadCodes)
				execAll(t, db, projectObjects(db.Kind()))
				migrateThrough(t, db, "0004_rows_written.sql")
				execAll(t, db, releasedSeedRunHistory+runLogObjects)
				if prev := previousEngineFile(t, db.Kind(), file); prev != "0004_rows_written.sql" {
					migrateThrough(t, db, prev)
				}
				before, rowsBefore, ledgerBefore := snapshot(t, db), tableRows(t, db, nil), ledgerOf(t, db)

				t.Setenv(fault.Variable, "migration.after_ledger."+file)
				applied, err := (&migrate.Runner{DB: db}).Migrate(ctx)
				if !exit.Is(err, exit.InjectedFault) || len(applied) != 0 {
					t.Fatalf("migrate with the fault applied %v: %v", names(applied), err)
				}
				assertSameSnapshot(t, "after the failed "+file, snapshot(t, db), before)
				rowsAfter := tableRows(t, db, nil)
				for _, table := range seededTables {
					if strings.Join(rowsAfter[table], "\n") != strings.Join(rowsBefore[table], "\n") {
						t.Errorf("%s changed:\nbefore %q\nafter  %q", table, rowsBefore[table], rowsAfter[table])
					}
				}
				if got := ledgerOf(t, db); got != ledgerBefore {
					t.Fatalf("ledger %s, want %s", got, ledgerBefore)
				}
				assertRebuildSettingsRestored(t, db)

				t.Setenv(fault.Variable, "")
				applied, err = (&migrate.Runner{DB: db}).Migrate(ctx)
				if err != nil || len(applied) == 0 || applied[0].Name != file {
					t.Fatalf("the next migrate applied %v: %v", names(applied), err)
				}
				assertRebuildSettingsRestored(t, db)
				assertSameSnapshot(t, "upgraded vs fresh", snapshot(t, db),
					freshSnapshot(t, db.Kind(), projectObjects(db.Kind())+runLogObjects))
			})
		})
	}
}

func TestRebuildRefusesTablesWithProjectColumns(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file, table, column string
	}{
		{"0005_metadata_codes.sql", "CFG_PIPELINES", "OWNER"},
		{"0006_run_backfill_constraint.sql", "AUD_PIPELINES_RUN_LOG", "TEAM_NOTE"},
	} {
		t.Run(c.table, func(t *testing.T) {
			enginetest.Each(t, func(t *testing.T, db *engine.DB) {
				ctx := context.Background()
				oneSQLiteConnection(db)
				installRelease(t, db)
				execAll(t, db, releasedSeed+renameBadCodes)
				migrateThrough(t, db, previousEngineFile(t, db.Kind(), c.file))
				execAll(t, db, "ALTER TABLE "+c.table+" ADD COLUMN "+c.column+" VARCHAR;\n"+
					"UPDATE "+c.table+" SET "+c.column+" = 'team';\n")
				before, ledgerBefore := snapshot(t, db), ledgerOf(t, db)
				want := []string{"team", "team", "team", "team"}
				if c.table == "AUD_PIPELINES_RUN_LOG" {
					want = []string{"team", "team", "team", "team", "team"}
				}

				applied, err := (&migrate.Runner{DB: db}).Migrate(ctx)
				if db.Kind() == engine.Postgres {
					// PostgreSQL alters the table in place and keeps the column.
					if err != nil {
						t.Fatalf("migrate: %v (applied %v)", err, names(applied))
					}
					assertRows(t, db, want, "SELECT "+c.column+" FROM "+c.table+" ORDER BY 1")
					return
				}
				if !exit.Is(err, exit.Migration) || len(applied) != 0 {
					t.Fatalf("migrate applied %v: %v", names(applied), err)
				}
				for _, part := range []string{c.file, c.table, c.column, "would discard", "nothing was changed",
					"ALTER TABLE " + c.table + " DROP COLUMN " + c.column} {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("the refusal does not mention %q: %v", part, err)
					}
				}
				assertSameSnapshot(t, "after the refusal", snapshot(t, db), before)
				if got := ledgerOf(t, db); got != ledgerBefore {
					t.Fatalf("ledger %s, want %s", got, ledgerBefore)
				}
				assertRows(t, db, want, "SELECT "+c.column+" FROM "+c.table+" ORDER BY 1")
				assertRebuildSettingsRestored(t, db)

				// Done as the message says, the upgrade completes.
				execAll(t, db, "ALTER TABLE "+c.table+" DROP COLUMN "+c.column+";\n")
				if _, err := (&migrate.Runner{DB: db}).Migrate(ctx); err != nil {
					t.Fatalf("migrate after dropping the column: %v", err)
				}
				assertSameSnapshot(t, "upgraded vs fresh", snapshot(t, db), freshSnapshot(t, db.Kind(), ""))
			})
		})
	}
}

// benchmarkRuns is the size of the run log BenchmarkRebuildRunLog rebuilds.
const benchmarkRuns = 1_000_000

// BenchmarkRebuildRunLog times 0006_run_backfill_constraint.sql on a SQLite
// Engine DB whose run log has a million runs: the guarded rebuild copies the
// table, re-creates its indexes and checks every foreign key. Each iteration
// starts from a copy of one prepared file (0.1.0 upgraded through 0005).
func BenchmarkRebuildRunLog(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	template := filepath.Join(dir, "template.db")
	db, err := engine.Open(ctx, engine.Options{Kind: engine.SQLite, Path: template})
	if err != nil {
		b.Fatal(err)
	}
	installRelease(b, db)
	execAll(b, db, "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P', 'P', 'FULL')")
	if _, err := migrateUntil(ctx, db, "0005_metadata_codes.sql"); err != nil {
		b.Fatal(err)
	}
	execAll(b, db, fmt.Sprintf(`
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d)
INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE, END_DATE, STATUS, SLA_STATUS, RUN_DATE, BACKFILL)
SELECT 1, '2026-01-01 00:00:00.000000+00:00', '2026-01-01 00:10:00.000000+00:00',
       CASE WHEN i %% 10 = 0 THEN 'FAILED' ELSE 'SUCCESS' END, 'MET', '2026-01-01',
       CASE WHEN i %% 7 = 0 THEN 'Y' ELSE 'N' END
  FROM n`, benchmarkRuns))
	db.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(dir, fmt.Sprintf("run%d.db", i))
		data, err := os.ReadFile(template)
		if err == nil {
			err = os.WriteFile(path, data, 0o600)
		}
		if err != nil {
			b.Fatal(err)
		}
		db, err := engine.Open(ctx, engine.Options{Kind: engine.SQLite, Path: path})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := migrateUntil(ctx, db, "0006_run_backfill_constraint.sql"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		var n int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG").Scan(&n); err != nil || n != benchmarkRuns {
			b.Fatalf("%d runs after the rebuild (%v)", n, err)
		}
		db.Close()
		os.Remove(path)
	}
	b.ReportMetric(float64(benchmarkRuns), "runs/op")
}

// Migration 0023 makes the Engine DB refuse a malformed RUN_DATE and
// SCHEDULE_START_DATE, and keeps the rows already stored as they are: an
// Engine DB holding one (as an API request could store before) upgrades.
func TestDateChecksKeepTheRowsAlreadyStored(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		installRelease(t, db)
		migrateThrough(t, db, "0022_clone_changes.sql")
		bad := map[engine.Kind]string{engine.SQLite: "not-a-date; DROP TABLE x", engine.Postgres: "0001-06-01 BC"}[db.Kind()]
		var runID int64
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			if _, err := tx.ExecContext(ctx, "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P', 'P', 'FULL')"); err != nil {
				return err
			}
			return tx.QueryRowContext(ctx, `INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_DATE)
				VALUES ((SELECT MIN(PIPELINE_ID) FROM CFG_PIPELINES), 'SUCCESS', $1) RETURNING PIPELINE_RUN_ID`, bad).Scan(&runID)
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&migrate.Runner{DB: db}).Migrate(ctx); err != nil {
			t.Fatalf("migrate with a malformed RUN_DATE stored: %v", err)
		}
		assertRows(t, db, []string{"1"}, "SELECT COUNT(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1 AND RUN_DATE IS NOT NULL", runID)
		err = db.Tx(ctx, func(tx *engine.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_DATE)
				VALUES ((SELECT MIN(PIPELINE_ID) FROM CFG_PIPELINES), 'SUCCESS', $1)`, bad)
			return err
		})
		if err == nil || !strings.Contains(strings.ToLower(err.Error()), "run_date") {
			t.Fatalf("a malformed RUN_DATE after the upgrade: %v", err)
		}
		// The run whose date is malformed still ends, as any other would.
		err = db.Tx(ctx, func(tx *engine.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE AUD_PIPELINES_RUN_LOG SET SLA_STATUS = 'MET' WHERE PIPELINE_RUN_ID = $1", runID)
			return err
		})
		if err != nil {
			t.Fatalf("updating another column of the run: %v", err)
		}
	})
}
