package clone

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
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
			{"the guard table dropped", "*", []string{`DROP TABLE ` + mirrorSchema + `."` + guardTable + `"`,
				`INSERT INTO ` + actions + ` ("ACTION_ID", "ACTOR", "COMMAND") VALUES (-1, 'someone', 'by hand')`}},
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
		tg.exec(t, `DROP FUNCTION `+mirrorSchema+`."`+guardFunction+`"() CASCADE`, `DROP TABLE `+mirrorSchema+`."`+guardTable+`"`)
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
