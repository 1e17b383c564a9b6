package clone

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// eachPGTarget runs body on each Engine DB dialect with a PostgreSQL
// warehouse, whose mirrors have write guards, and a schema for full clones.
func eachPGTarget(t *testing.T, body func(t *testing.T, db *engine.DB, tg *target, h *historyMaker)) {
	for _, ek := range enginetest.Kinds {
		t.Run(string(ek), func(t *testing.T) {
			db := pipelinetest.DB(t, ek)
			tg := newTarget(t, db, warehouse.Postgres)
			tg.exec(t, "CREATE SCHEMA "+fullSchema)
			h := newHistoryMaker(t, db, 7)
			h.newRun()
			h.newRun()
			cloneAndCompare(t, db, tg, "first clone")
			body(t, db, tg, h)
		})
	}
}

// guarded returns the mirrors of mirrorSchema whose guard trigger is
// enabled ALWAYS and calls the guard function.
func (tg *target) guarded(t *testing.T) []string {
	t.Helper()
	return tg.strings(t, `SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		JOIN pg_proc p ON p.oid = t.tgfoid
		WHERE c.relnamespace = '`+mirrorSchema+`'::regnamespace AND t.tgname = '`+guardTrigger+`'
			AND t.tgenabled = 'A' AND p.proname = '`+guardFunction+`' ORDER BY 1`)
}

// wantFull fails unless the clone copied exactly the tables of full in full
// (whyDiffers), and every other captured table incrementally.
func wantFull(t *testing.T, what string, tables []Table, full ...string) {
	t.Helper()
	for _, tb := range tables {
		switch {
		case tb.Why == whyNoCapture:
		case strings.Contains(strings.Join(full, ","), tb.Engine) || (len(full) == 1 && full[0] == "*"):
			if tb.Incremental || tb.Why != whyDiffers {
				t.Errorf("%s: %s was copied %s (%s), want full: %s", what, tb.Engine, tb.Copy(), tb.Why, whyDiffers)
			}
		case !tb.Incremental:
			t.Errorf("%s: %s was copied in full too: %s", what, tb.Engine, tb.Why)
		}
	}
}

// The write guard of a PostgreSQL mirror that is dropped, disabled,
// silenced or replaced, a mirror made anew, or a write as a replica, each
// make that mirror's next copy a full one, which ends equal and guarded
// again.
func TestAPostgresMirrorsWriteGuardCatchesWhatItCannotSee(t *testing.T) {
	t.Parallel()
	eachPGTarget(t, func(t *testing.T, db *engine.DB, tg *target, h *historyMaker) {
		actions, pipelines := tg.mirror("AUD_ACTIONS"), tg.mirror("CFG_PIPELINES")
		trigger := `"` + guardTrigger + `"`
		all := tg.guarded(t)
		if len(all) < 10 || !strings.Contains(strings.Join(all, ","), "AUD_ACTIONS") {
			t.Fatalf("guarded mirrors after the first clone: %v", all)
		}
		for _, c := range []struct {
			what  string
			table string // "*": every captured table
			stmts []string
		}{
			{"the trigger dropped", "AUD_ACTIONS", []string{`DROP TRIGGER ` + trigger + ` ON ` + actions}},
			{"the trigger disabled", "AUD_ACTIONS", []string{`ALTER TABLE ` + actions + ` DISABLE TRIGGER ` + trigger}},
			{"a row added with the trigger disabled, then enabled again", "AUD_ACTIONS", []string{
				`ALTER TABLE ` + actions + ` DISABLE TRIGGER ` + trigger,
				`INSERT INTO ` + actions + ` ("ACTION_ID", "ACTOR", "COMMAND") VALUES (-1, 'someone', 'by hand')`,
				`ALTER TABLE ` + actions + ` ENABLE ALWAYS TRIGGER ` + trigger}},
			{"a row edited as a replica", "CFG_PIPELINES", []string{
				`SET LOCAL session_replication_role = replica`,
				`UPDATE ` + pipelines + ` SET "PIPELINE_NAME" = 'edited by hand' WHERE "PIPELINE_CODE" = 'P1'`}},
			{"a row deleted by TRUNCATE", "CFG_PIPELINES", []string{`TRUNCATE ` + pipelines}},
			{"a column rewritten without a write", "CFG_PIPELINES", []string{
				`ALTER TABLE ` + pipelines + ` ALTER COLUMN "PIPELINE_NAME" TYPE varchar USING upper("PIPELINE_NAME")`}},
			{"the mirror made anew with the same rows", "CFG_PIPELINES", []string{
				`CREATE TABLE ` + mirrorSchema + `.pipelines_copy AS SELECT * FROM ` + pipelines,
				`DROP TABLE ` + pipelines,
				`ALTER TABLE ` + mirrorSchema + `.pipelines_copy RENAME TO "CFG_PIPELINES"`}},
			{"the guard sequence dropped", "AUD_ACTIONS", []string{`DROP SEQUENCE ` + mirrorSchema + `."AUD_ACTIONS` + guardSequenceSuffix + `"`,
				`INSERT INTO ` + actions + ` ("ACTION_ID", "ACTOR", "COMMAND") VALUES (-1, 'someone', 'by hand')`}},
			{"the guard sequence set by hand", "AUD_ACTIONS", []string{
				`INSERT INTO ` + actions + ` ("ACTION_ID", "ACTOR", "COMMAND") VALUES (-1, 'someone', 'by hand')`,
				`SELECT setval('` + mirrorSchema + `."AUD_ACTIONS` + guardSequenceSuffix + `"', 100)`}},
			{"the guard function replaced", "*", []string{`CREATE OR REPLACE FUNCTION ` + mirrorSchema + `."` + guardFunction + `"() RETURNS trigger
				LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN RETURN NULL; END $$`}},
		} {
			tg.exec(t, c.stmts...)
			h.step()
			wantFull(t, c.what, cloneAndCompare(t, db, tg, c.what), c.table)
			if got := tg.guarded(t); strings.Join(got, ",") != strings.Join(all, ",") {
				t.Errorf("%s: guarded mirrors after the clone: %v, want %v", c.what, got, all)
			}
			h.step()
			wantFull(t, c.what+", the clone after", cloneAndCompare(t, db, tg, c.what+", the clone after"))
		}
	})
}

// A row added by hand in a transaction of another session that is still
// open when the clone starts: the clone waits for it, sees its write and
// copies that mirror in full.
func TestAPostgresMirrorWrittenDuringTheCloneIsCopiedInFull(t *testing.T) {
	t.Parallel()
	eachPGTarget(t, func(t *testing.T, db *engine.DB, tg *target, h *historyMaker) {
		ctx := context.Background()
		hand, err := sql.Open("pgx", tg.url)
		if err != nil {
			t.Fatal(err)
		}
		defer hand.Close()
		tx, err := hand.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT INTO `+tg.mirror("AUD_ACTIONS")+` ("ACTION_ID", "ACTOR", "COMMAND") VALUES (-1, 'someone', 'by hand')`); err != nil {
			t.Fatal(err)
		}
		h.step()
		done := make(chan []Table)
		go func() {
			tables, err := Run(ctx, db, tg.src, tg.options("all"))
			if err != nil {
				t.Error(err)
			}
			done <- tables
		}()
		select {
		case tables := <-done:
			t.Fatalf("the clone did not wait for the open write: %v", tables)
		case <-time.After(500 * time.Millisecond):
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if tb := byName(t, <-done, "AUD_ACTIONS"); tb.Incremental || tb.Why != whyDiffers {
			t.Errorf("AUD_ACTIONS written during the clone was copied %s (%s), want full: %s", tb.Copy(), tb.Why, whyDiffers)
		}
		wantFull(t, "the clone after", cloneAndCompare(t, db, tg, "the clone after"))
	})
}

// Mirrors cloned before write guards existed (no guard, a proof that is a
// transaction id) are copied in full once, get their guards, and are
// caught up incrementally from then on.
func TestPostgresMirrorsOfAnOlderCloneGetTheirGuards(t *testing.T) {
	t.Parallel()
	eachPGTarget(t, func(t *testing.T, db *engine.DB, tg *target, h *historyMaker) {
		ctx := context.Background()
		tg.exec(t, `DROP FUNCTION `+mirrorSchema+`."`+guardFunction+`"() CASCADE`)
		for _, seq := range tg.strings(t, `SELECT oid::regclass::text FROM pg_class WHERE relnamespace = '`+mirrorSchema+`'::regnamespace AND relkind = 'S'`) {
			tg.exec(t, "DROP SEQUENCE "+seq)
		}
		for _, ix := range tg.strings(t, `SELECT indexrelid::regclass::text FROM pg_index WHERE indrelid = '`+tg.mirror("AUD_ACTIONS")+`'::regclass`) {
			tg.exec(t, "DROP INDEX "+ix)
		}
		rows, err := db.QueryContext(ctx, "SELECT MIRROR, PROOF FROM CLONE_STATE")
		if err != nil {
			t.Fatal(err)
		}
		old := map[string]string{}
		for rows.Next() {
			var mirror, p string
			if err := rows.Scan(&mirror, &p); err != nil {
				t.Fatal(err)
			}
			pr := parseProof(p)
			pr.checksum = "48213" // the transaction that wrote the copy
			old[mirror] = pr.String()
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		for mirror, p := range old {
			if _, err := db.ExecContext(ctx, "UPDATE CLONE_STATE SET PROOF = $1 WHERE MIRROR = $2", p, mirror); err != nil {
				t.Fatal(err)
			}
		}
		if got := tg.guarded(t); len(got) != 0 {
			t.Fatalf("guarded before the upgrade: %v", got)
		}
		h.step()
		wantFull(t, "the first clone with guards", cloneAndCompare(t, db, tg, "the first clone with guards"), "*")
		if got := tg.guarded(t); len(got) < 10 {
			t.Errorf("guarded mirrors after the upgrade: %v", got)
		}
		if n := tg.strings(t, `SELECT count(*) FROM pg_index WHERE indrelid = '`+tg.mirror("AUD_ACTIONS")+`'::regclass`); n[0] != "1" {
			t.Errorf("indexes of the upgraded AUD_ACTIONS: %v, want 1", n)
		}
		h.step()
		wantFull(t, "the clone after", cloneAndCompare(t, db, tg, "the clone after"))
	})
}

// Mirrors guarded by the releases that counted into a table of the schema
// (ETL_CRAFT_MIRROR_WRITES, one row per mirror, and a function counting
// there) are each copied in full once, guarded anew, and the table is
// dropped; from then on they are caught up incrementally.
func TestTheGuardTableOfAnOlderReleaseIsDropped(t *testing.T) {
	t.Parallel()
	eachPGTarget(t, func(t *testing.T, db *engine.DB, tg *target, h *historyMaker) {
		old := mirrorSchema + `."` + oldGuardTable + `"`
		// The guard as those releases left it: no sequences, the table, and
		// the function counting into it, called with no argument.
		tg.exec(t, `DROP FUNCTION `+mirrorSchema+`."`+guardFunction+`"() CASCADE`)
		for _, seq := range tg.strings(t, `SELECT oid::regclass::text FROM pg_class WHERE relnamespace = '`+mirrorSchema+`'::regnamespace AND relkind = 'S'`) {
			tg.exec(t, "DROP SEQUENCE "+seq)
		}
		tg.exec(t, `CREATE TABLE `+old+` ("TABLE_OID" oid PRIMARY KEY, "WRITES" bigint NOT NULL)`,
			`CREATE FUNCTION `+mirrorSchema+`."`+guardFunction+`"() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
	INSERT INTO `+old+` AS w ("TABLE_OID", "WRITES") VALUES (TG_RELID, 1)
		ON CONFLICT ("TABLE_OID") DO UPDATE SET "WRITES" = w."WRITES" + 1;
	RETURN NULL;
END $$`)
		for _, m := range tg.strings(t, `SELECT c.oid::regclass::text FROM pg_class c WHERE c.relnamespace = '`+mirrorSchema+`'::regnamespace AND c.relkind = 'r' AND c.relname <> '`+oldGuardTable+`'`) {
			tg.exec(t, `CREATE TRIGGER "`+guardTrigger+`" BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON `+m+
				` FOR EACH STATEMENT EXECUTE FUNCTION `+mirrorSchema+`."`+guardFunction+`"()`,
				`ALTER TABLE `+m+` ENABLE ALWAYS TRIGGER "`+guardTrigger+`"`,
				`INSERT INTO `+old+` VALUES ('`+m+`'::regclass, 3)`)
		}
		h.step()
		wantFull(t, "the first clone after the upgrade", cloneAndCompare(t, db, tg, "the first clone after the upgrade"), "*")
		if got := tg.strings(t, `SELECT count(*) FROM pg_class WHERE relnamespace = '`+mirrorSchema+`'::regnamespace AND relname = '`+oldGuardTable+`'`); got[0] != "0" {
			t.Errorf("the older release's guard table is still there")
		}
		if got := tg.guarded(t); len(got) < 10 {
			t.Errorf("guarded mirrors after the upgrade: %v", got)
		}
		h.step()
		wantFull(t, "the clone after", cloneAndCompare(t, db, tg, "the clone after"))
	})
}

// A table of that name that is not the older releases' guard table (other
// columns) is the team's own, and is left alone.
func TestATeamsTableNamedLikeTheOldGuardTableIsKept(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.SQLite)
	tg := newTarget(t, db, warehouse.Postgres)
	own := mirrorSchema + `."` + oldGuardTable + `"`
	tg.exec(t, `CREATE TABLE `+own+` (note text)`, `INSERT INTO `+own+` VALUES ('ours')`)
	h := newHistoryMaker(t, db, 3)
	h.newRun()
	if _, err := Run(context.Background(), db, tg.src, tg.options("all")); err != nil {
		t.Fatal(err)
	}
	if got := tg.strings(t, `SELECT note FROM `+own); len(got) != 1 || got[0] != "ours" {
		t.Errorf("the team's table: %v", got)
	}
}

// What a BI tool lists in the warehouse schema, its tables and views, is
// exactly the copies and the team's own objects, after a first clone and
// after incremental ones: the write guards add only what hangs on each copy
// (a trigger, a sequence owned by its key column, an index) and one trigger
// function.
func TestTheWarehouseSchemaHoldsOnlyTheCopiesAndTheTeamsObjects(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		tg.exec(t, "CREATE TABLE "+mirrorSchema+".team_notes (note VARCHAR)",
			"CREATE VIEW "+mirrorSchema+".team_runs AS SELECT 1 AS n")
		h := newHistoryMaker(t, db, 5)
		h.newRun()
		var copies []string
		for range 3 {
			tables, err := Run(context.Background(), db, tg.src, tg.options("all"))
			if err != nil {
				t.Fatal(err)
			}
			copies = nil
			for _, tb := range tables {
				copies = append(copies, tb.Mirror.Name)
			}
			h.step()
		}
		want := append(copies, "team_notes", "team_runs")
		slices.Sort(want)
		listed := tg.strings(t, `SELECT table_name FROM information_schema.tables WHERE table_schema = '`+mirrorSchema+`'`)
		slices.Sort(listed)
		if !slices.Equal(listed, want) || len(copies) < 10 {
			t.Errorf("the schema lists\n%v\nwant the copies and the team's objects\n%v", listed, want)
		}
		if tg.kind != warehouse.Postgres {
			return
		}
		// Besides them: the copies' indexes and sequences, and one function.
		other := tg.strings(t, `SELECT relkind::text || ' ' || relname FROM pg_class WHERE relnamespace = '`+mirrorSchema+`'::regnamespace
			AND relkind NOT IN ('r', 'v', 'i')`)
		for _, o := range other {
			if !strings.HasPrefix(o, "S ") || !strings.HasSuffix(o, guardSequenceSuffix) {
				t.Errorf("the schema holds %s", o)
			}
		}
		owned := tg.strings(t, `SELECT count(*) FROM pg_class s JOIN pg_depend d ON d.objid = s.oid AND d.deptype = 'a'
			WHERE s.relnamespace = '`+mirrorSchema+`'::regnamespace AND s.relkind = 'S'`)
		if len(other) < 10 || owned[0] != strconv.Itoa(len(other)) {
			t.Errorf("%d sequences, %s owned by a copy's column", len(other), owned[0])
		}
		if got := tg.strings(t, `SELECT proname FROM pg_proc WHERE pronamespace = '`+mirrorSchema+`'::regnamespace`); !slices.Equal(got, []string{guardFunction}) {
			t.Errorf("functions in the schema: %v", got)
		}
	})
}

// A full copy into a guarded PostgreSQL mirror builds the mirror's key index
// after its rows are in (a new index, not the old one kept up to date row
// by row), leaves one, and the next clone is caught up incrementally; a
// full copy that fails before its commit leaves the old index.
func TestAFullCopyBuildsTheKeyIndexAfterItsRows(t *testing.T) {
	eachPGTarget(t, func(t *testing.T, db *engine.DB, tg *target, h *historyMaker) {
		ctx := context.Background()
		index := func() []string {
			return tg.strings(t, `SELECT CAST(indexrelid AS bigint) FROM pg_index WHERE indrelid = '`+tg.mirror("AUD_ACTIONS")+`'::regclass`)
		}
		before := index()
		if len(before) != 1 {
			t.Fatalf("indexes of AUD_ACTIONS after the first clone: %v, want 1", before)
		}
		full := tg.options("all")
		full.Full = true
		t.Setenv(fault.Variable, "clone.after_rows")
		if _, err := Run(ctx, db, tg.src, full); exit.CodeOf(err) != exit.InjectedFault {
			t.Fatalf("a full clone failing after its rows: %v", err)
		}
		if got := index(); !slices.Equal(got, before) {
			t.Fatalf("indexes of AUD_ACTIONS after a failed full copy: %v, want the old %v", got, before)
		}
		t.Setenv(fault.Variable, "")
		h.step()
		if _, err := Run(ctx, db, tg.src, full); err != nil {
			t.Fatal(err)
		}
		if got := index(); len(got) != 1 || got[0] == before[0] {
			t.Fatalf("indexes of AUD_ACTIONS after a full copy: %v; want one built anew, not %v", got, before)
		}
		h.step()
		wantFull(t, "the clone after the full copy", cloneAndCompare(t, db, tg, "the clone after the full copy"))
	})
}
