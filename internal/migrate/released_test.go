package migrate_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/migrate"
)

// reference020 is the name released-checksums.toml gives the reference
// implementation's 0.2.0 release.
const reference020 = "etl-craft 0.2.0 (Python reference)"

// reference020SQLite is the SHA-256 of each ENGINE file of the reference's
// 0.2.0 release for SQLite, as its ledger holds them.
var reference020SQLite = map[string]string{
	"0001_pipeline_pauses.sql":         "3b8f0b0b4d759894d7ee1c2aceac6424e7c450e4a62f795fe46e9498a3ce3ff5",
	"0002_run_date.sql":                "602da8626ef5713cfae24efabe18b62b1abae93072f3da45c2eaab168055c187",
	"0003_dependency_consumption.sql":  "75f8991d990e3960a46762f0db5fc75ff7640f391da4731f34bf58270c28ab0f",
	"0004_rows_written.sql":            "d9eea79b936cc74d568da99743d193f60f4bc7658ca63f2b6221a19771757586",
	"0005_metadata_codes.sql":          "ae4d853fe28270f01dd96e8b6c8d6c1838f20ce00c600b7a4b52bee914caf568",
	"0006_run_backfill_constraint.sql": "3fa5a4bae1986618edabe56371dc0097174329547199bed180f985562f202426",
}

// installReference020 gives an empty Engine DB the shape of the reference's
// 0.2.0 release with its ledger: on PostgreSQL the baseline in
// testdata/released/0.2.0; on SQLite the 0.1.0 baseline carried through
// 0006, its ledger rows then holding the reference's checksums.
func installReference020(t *testing.T, db *engine.DB) {
	t.Helper()
	if db.Kind() == engine.Postgres {
		execAll(t, db, releasedSchema(t, "0.2.0", db.Kind()))
		return
	}
	installRelease(t, db)
	migrateThrough(t, db, "0006_run_backfill_constraint.sql")
	for name, sum := range reference020SQLite {
		if _, err := db.ExecContext(context.Background(),
			"UPDATE SCHEMA_MIGRATIONS SET CHECKSUM = $1 WHERE SOURCE = 'ENGINE' AND VERSION = $2", sum, name); err != nil {
			t.Fatal(err)
		}
	}
}

// reference020Seed is the history of an Engine DB run by the reference's
// 0.2.0 release: runs in each status, a backfill, a reopened run with its
// intervention, consumptions, pauses, rules, offsets, lineage and
// documentation. The last pipeline, task, run and task run are deleted, so
// that each identity counter is ahead of the highest id.
const reference020Seed = `
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, DESCRIPTION, RUN_SCHEDULE, SLA_IN_HOURS, REFRESH_TYPE, PIPELINE_PARAMETERS)
VALUES ('P_MAIN', 'Main', 'the main pipeline', '0 6 * * *', 1.5, 'INCREMENTAL', '{"owner": "team"}');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P_UP', 'Upstream', 'FULL');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, ACTIVE_FLAG) VALUES ('P_OLD', 'Retired', 'FULL', 'N');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P_GONE', 'Deleted', 'FULL');
DELETE FROM CFG_PIPELINES WHERE PIPELINE_ID = 4;

INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('load', 'INGESTION', 1, 'PYTHON');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, RUN_CONDITION, RUN_CONDITION_COUNT)
VALUES ('transform', 'ETL', 1, 'SQL', 'N', 1);
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('up_task', 'ETL', 2, 'SQL');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER, ACTIVE_FLAG) VALUES ('old_task', 'ETL', 3, 'SQL', 'N');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('gone', 'ETL', 1, 'SQL');
DELETE FROM CFG_TASKS WHERE TASK_ID = 5;

INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE) VALUES (1, 2, 'SUCCESS');
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) VALUES (1, 2, 1, 'SUCCESS');
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
VALUES (1, 1, 2, 3, 'HAS_DATA');
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES (1, 'BEHAVIOUR', 'succeed');
INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
                                BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)
VALUES ('no_nulls', 1, 2, 'SELECT id FROM t WHERE x IS NULL', 'REJECT', 'id', 't', 1);

INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE, END_DATE, STATUS, SLA_STATUS, RUN_DATE, BACKFILL) VALUES
    (2, '2026-02-01 01:00:00.000000+00:00', '2026-02-01 01:10:00.000000+00:00', 'SUCCESS', 'MET', '2026-02-01', 'N'),
    (1, '2026-02-02 02:00:00.000000+00:00', '2026-02-02 02:30:00.000000+00:00', 'FAILED', 'BREACHED', '2026-02-02', 'N'),
    (1, '2026-02-03 03:00:00.000000+00:00', NULL, 'IN-PROGRESS', NULL, '2026-02-03', 'N'),
    (2, '2026-02-03 04:00:00.000000+00:00', '2026-02-03 04:00:01.000000+00:00', 'SKIPPED', NULL, '2026-02-03', 'N'),
    (1, '2026-02-04 05:00:00.000000+00:00', '2026-02-04 05:20:00.000000+00:00', 'SUCCESS', 'MET', '2026-01-15', 'Y'),
    (2, '2026-02-04 06:00:00.000000+00:00', '2026-02-04 06:01:00.000000+00:00', 'CANCELLED', NULL, '2026-02-04', 'N'),
    (1, '2026-02-05 07:00:00.000000+00:00', '2026-02-05 07:30:00.000000+00:00', 'SUCCESS', 'MET', '2026-02-05', 'N');
DELETE FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 7;

INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, START_DATE, END_DATE, STATUS, SOURCE_COUNT, TARGET_COUNT,
                              INSERT_COUNT, UPDATE_COUNT, DELETE_COUNT, ERROR_MESSAGE, TASK_LOG, ATTEMPT_COUNT, ROWS_WRITTEN) VALUES
    (3, 1, '2026-02-01 01:01:00.000000+00:00', '2026-02-01 01:09:00.000000+00:00', 'SUCCESS', 10, 9, 4, 3, 2, NULL, 'log 1', 1, 9),
    (1, 2, '2026-02-02 02:01:00.000000+00:00', '2026-02-02 02:10:00.000000+00:00', 'SUCCESS', 10, 9, 8, 0, 0, NULL, 'log 2', 1, 8),
    (2, 2, '2026-02-02 02:11:00.000000+00:00', '2026-02-02 02:20:00.000000+00:00', 'FAILED', NULL, NULL, NULL, NULL, NULL, 'why', 'log 3', 2, NULL),
    (1, 3, '2026-02-03 03:01:00.000000+00:00', '2026-02-03 03:05:00.000000+00:00', 'SUCCESS', 5, 5, 5, 0, 0, NULL, 'log 4', 1, 5),
    (2, 3, '2026-02-03 03:06:00.000000+00:00', NULL, 'IN-PROGRESS', NULL, NULL, NULL, NULL, NULL, NULL, 'log 5', 1, NULL),
    (3, 4, '2026-02-03 04:00:00.000000+00:00', '2026-02-03 04:00:00.000000+00:00', 'SKIPPED', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, NULL),
    (1, 5, '2026-02-04 05:01:00.000000+00:00', '2026-02-04 05:19:00.000000+00:00', 'SUCCESS', 7, 7, 7, 0, 0, NULL, 'log 7', 1, 7),
    (3, 6, '2026-02-04 06:00:10.000000+00:00', '2026-02-04 06:01:00.000000+00:00', 'CANCELLED', 1, 0, 0, 0, 0, 'cancelled', 'log 8', 1, 0),
    (2, 5, '2026-02-04 05:19:30.000000+00:00', '2026-02-04 05:19:40.000000+00:00', 'SKIPPED', NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1, NULL);
DELETE FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = 9;

INSERT INTO AUD_RUN_INTERVENTIONS (PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, ACTION, FROM_STATUS, TO_STATUS, TARGET_COUNT,
                                   PREVIOUS_MESSAGE, REASON, REQUESTED_BY, REQUESTED_AT) VALUES
    (1, 3, NULL, 'REOPEN', 'SUCCESS', 'IN-PROGRESS', NULL, NULL, 'late data', 'alice', '2026-02-03 03:00:30.000000+00:00'),
    (1, 2, 2, 'MARK', 'FAILED', 'SUCCESS', 9, 'why', 'checked by hand', 'bob', '2026-02-02 03:00:00.000000+00:00');

INSERT INTO AUD_DEPENDENCY_CONSUMPTION (PIPELINE_DEPENDENCY_ID, PIPELINE_ID, PIPELINE_RUN_ID, DEPENDS_ON_PIPELINE_ID,
                                        CONSUMED_PIPELINE_RUN_ID, CONSUMED_AT)
VALUES (1, 1, 2, 2, 1, '2026-02-02 02:00:01.000000+00:00');
INSERT INTO AUD_DEPENDENCY_CONSUMPTION (TASK_DEPENDENCY_ID, PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID,
                                        CONSUMED_PIPELINE_RUN_ID, CONSUMED_TASK_RUN_ID, CONSUMED_AT)
VALUES (2, 1, 3, 1, 2, 1, 1, '2026-02-03 03:01:00.000000+00:00');

INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_AT, PAUSED_BY, REASON, RESUMED_AT, RESUMED_BY, RESUME_REASON) VALUES
    (2, '2026-02-01 00:00:00.000000+00:00', 'carol', 'upstream outage', '2026-02-01 00:30:00.000000+00:00', 'dave', 'fixed'),
    (2, '2026-02-05 09:00:00.000000+00:00', 'carol', 'maintenance', NULL, NULL, NULL);

` + auditSeedRows

// identityCounters lists each identity counter of the Engine DB as
// "name=value": PostgreSQL's sequences, SQLite's sqlite_sequence rows.
func identityCounters(t *testing.T, db *engine.DB) map[string]string {
	t.Helper()
	query := "SELECT name || '=' || seq FROM sqlite_sequence"
	if db.Kind() == engine.Postgres {
		query = "SELECT sequencename || '=' || COALESCE(last_value::text, 'unused') FROM pg_sequences WHERE schemaname = current_schema()"
	}
	out := map[string]string{}
	for _, c := range rowStrings(t, db, query) {
		name, value, _ := strings.Cut(c, "=")
		out[strings.ToLower(name)] = value
	}
	return out
}

// engineFilesAfter returns the packaged files that sort after name.
func engineFilesAfter(t *testing.T, kind engine.Kind, name string) []string {
	t.Helper()
	eng, err := migrate.EngineStream(kind)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range eng.Files {
		if f.Name > name {
			out = append(out, f.Name)
		}
	}
	return out
}

func TestUpgradeFromTheReference020KeepsRowsIdsAndCounters(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		oneSQLiteConnection(db)
		installReference020(t, db)
		execAll(t, db, reference020Seed)
		execAll(t, db, projectObjects(db.Kind())+runLogObjects)
		released := rowStrings(t, db,
			"SELECT VERSION, CHECKSUM FROM SCHEMA_MIGRATIONS WHERE SOURCE = 'ENGINE' ORDER BY VERSION")
		if len(released) != 6 {
			t.Fatalf("the 0.2.0 ledger has %d rows: %q", len(released), released)
		}
		rowsBefore, columnsBefore, countersBefore := tableRows(t, db, nil), columnsOf(t, db), identityCounters(t, db)
		want := engineFilesAfter(t, db.Kind(), "0006_run_backfill_constraint.sql")

		r := &migrate.Runner{DB: db}
		st, err := r.Status(ctx)
		if err != nil {
			t.Fatalf("status of the 0.2.0 ledger: %v", err)
		}
		if strings.Join(names(st.Pending), ",") != strings.Join(want, ",") ||
			strings.Join(st.Releases, ",") != reference020 {
			t.Fatalf("status: pending %v, releases %q", names(st.Pending), st.Releases)
		}

		applied, err := r.Migrate(ctx)
		if err != nil {
			t.Fatalf("migrate: %v (applied %v)", err, names(applied))
		}
		if strings.Join(names(applied), ",") != strings.Join(want, ",") {
			t.Fatalf("applied %v, want %v", names(applied), want)
		}
		assertRebuildSettingsRestored(t, db)

		// The released rows keep the release's checksums; every seeded row
		// keeps its values, and every identity counter where it was.
		assertRows(t, db, released,
			"SELECT VERSION, CHECKSUM FROM SCHEMA_MIGRATIONS WHERE SOURCE = 'ENGINE' AND VERSION <= '0006_run_backfill_constraint.sql' ORDER BY VERSION")
		rowsAfter := tableRows(t, db, columnsBefore)
		for _, table := range seededTables {
			if strings.Join(rowsAfter[table], "\n") != strings.Join(rowsBefore[table], "\n") {
				t.Errorf("%s changed:\nbefore %q\nafter  %q", table, rowsBefore[table], rowsAfter[table])
			}
		}
		countersAfter := identityCounters(t, db)
		for name, value := range countersBefore {
			if countersAfter[name] != value {
				t.Errorf("identity counter %s was %s, is %s", name, value, countersAfter[name])
			}
		}
		assertRows(t, db, []string{
			"1|legacy:1|MANUAL|N", "2|legacy:2|MANUAL|N", "3|legacy:3|MANUAL|Y",
			"4|legacy:4|MANUAL|N", "5|legacy:5|BACKFILL|N", "6|legacy:6|MANUAL|N",
		}, "SELECT PIPELINE_RUN_ID, RUN_KEY, TRIGGER_KIND, REPAIR_PENDING FROM AUD_PIPELINES_RUN_LOG ORDER BY 1")
		if db.Kind() == engine.Postgres {
			assertRows(t, db, []string{"ck_tasks_run_condition_count|true"},
				"SELECT conname, convalidated FROM pg_constraint WHERE conname = 'ck_tasks_run_condition_count'")
		}

		// New rows get ids after the deleted ones.
		pipelineID, taskID, runID, taskRunID := writeAfterUpgrade(t, db)
		if pipelineID != 5 || taskID != 6 || runID != 8 || taskRunID != 10 {
			t.Fatalf("new ids %d, %d, %d, %d, want 5, 6, 8, 10 (after the deleted 4, 5, 7, 9)", pipelineID, taskID, runID, taskRunID)
		}

		// Nothing is left to apply, the ledger still names the release, and
		// the schema is a fresh one's with the project's objects.
		if again, err := r.Migrate(ctx); err != nil || len(again) != 0 {
			t.Fatalf("second migrate applied %v (%v)", names(again), err)
		}
		if st, err := r.Status(ctx); err != nil || len(st.Pending) != 0 || strings.Join(st.Releases, ",") != reference020 {
			t.Fatalf("status after the upgrade: pending %v, releases %q (%v)", names(st.Pending), st.Releases, err)
		}
		assertSameSnapshot(t, "upgraded from 0.2.0 vs fresh", snapshot(t, db),
			freshSnapshot(t, db.Kind(), projectObjects(db.Kind())+runLogObjects))
	})
}

func TestAnUnknownEngineChecksumIsRefusedNamingIt(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		installReference020(t, db)
		unknown := strings.Repeat("e", 64)
		if _, err := db.ExecContext(ctx,
			"UPDATE SCHEMA_MIGRATIONS SET CHECKSUM = $1 WHERE VERSION = '0003_dependency_consumption.sql'", unknown); err != nil {
			t.Fatal(err)
		}
		before, ledgerBefore := snapshot(t, db), ledgerOf(t, db)
		r := &migrate.Runner{DB: db}
		applied, err := r.Migrate(ctx)
		if !exit.Is(err, exit.Migration) || len(applied) != 0 {
			t.Fatalf("migrate applied %v: %v", names(applied), err)
		}
		for _, part := range []string{"engine/0003_dependency_consumption.sql", unknown, "released etl-craft build"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("the refusal does not mention %q: %v", part, err)
			}
		}
		if _, err := r.Status(ctx); !exit.Is(err, exit.Migration) || !strings.Contains(err.Error(), unknown) {
			t.Errorf("status: %v", err)
		}
		assertSameSnapshot(t, "after the refusal", snapshot(t, db), before)
		if got := ledgerOf(t, db); got != ledgerBefore {
			t.Fatalf("ledger %s, want %s", got, ledgerBefore)
		}
	})
}

func TestProjectFilesKeepTheStrictChecksumRule(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		initDB(t, db)
		// A PROJECT file named like an ENGINE file whose released checksum the
		// ledger then holds: the released checksums are the ENGINE file's.
		eng, err := migrate.EngineStream(db.Kind())
		if err != nil {
			t.Fatal(err)
		}
		var released string
		for sum := range eng.Files[0].Released {
			released = sum
		}
		if released == "" {
			t.Fatalf("%s has no released checksum", eng.Files[0].Name)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, eng.Files[0].Name), []byte("CREATE TABLE team_a (id INTEGER);\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := &migrate.Runner{DB: db, ProjectDir: dir}
		if _, err := r.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "UPDATE SCHEMA_MIGRATIONS SET CHECKSUM = $1 WHERE SOURCE = 'PROJECT'", released); err != nil {
			t.Fatal(err)
		}
		_, err = r.Migrate(ctx)
		want := fmt.Sprintf("project/%s: '%s' has changed since it was applied", eng.Files[0].Name, eng.Files[0].Name)
		if !exit.Is(err, exit.Migration) || !strings.Contains(err.Error(), want) {
			t.Fatalf("a PROJECT row with a released ENGINE checksum: %v", err)
		}
	})
}
