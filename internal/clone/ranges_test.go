package clone

import (
	"context"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// A full copy of a table with an integer key is read in ranges of the key,
// each by a connection of its own: the mirror holds every row once, with the
// values a single reading gives.
func TestAFullCopyReadInKeyRangesHoldsEveryRowOnce(t *testing.T) {
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		fillActions(t, db, 5*batchRows+7)
		ranges := actionRanges(t, db)
		if len(ranges) != readers || ranges[0].lo != 1 || ranges[readers-1].hi != 5*batchRows+7 || ranges[0].hi+1 != ranges[1].lo {
			t.Fatalf("AUD_ACTIONS is read in the ranges %+v, want %d from 1 to %d", ranges, readers, 5*batchRows+7)
		}
		opts := tg.options("aud")
		opts.Full = true
		tables, err := Run(context.Background(), db, tg.src, opts)
		if err != nil {
			t.Fatal(err)
		}
		want := engineCount(t, db, actionsName(db))
		for _, tb := range tables {
			if tb.Engine == "AUD_ACTIONS" && (tb.Rows != want || tb.Copied != want || tb.Incremental) {
				t.Errorf("AUD_ACTIONS cloned as %+v, want %d rows copied in full", tb, want)
			}
			// The reason names the request's field; the command line
			// writes it as its flag.
			if strings.Contains(tb.Why, "--") || exit.Flags(tb.Why) != "a full copy was asked for (--full)" {
				t.Errorf("%s was copied in full because %q", tb.Engine, tb.Why)
			}
		}
		mirror := tg.mirror("AUD_ACTIONS")
		keys := `SELECT CAST(COUNT(*) AS VARCHAR) || ' ' || CAST(COUNT(DISTINCT "ACTION_ID") AS VARCHAR) || ' ' ||
			CAST(MIN("ACTION_ID") AS VARCHAR) || ' ' || CAST(MAX("ACTION_ID") AS VARCHAR) FROM `
		single := rowPath(t, db, tg, actionsName(db), "SINGLE_READ")
		if got, read := tg.strings(t, keys+mirror), tg.strings(t, keys+single); got[0] != read[0] {
			t.Errorf("the mirror's keys are %s, a single reading's %s", got[0], read[0])
		}
		for _, q := range []string{
			`SELECT CAST(COUNT(*) AS VARCHAR) FROM (SELECT * FROM ` + mirror + ` EXCEPT ALL SELECT * FROM ` + single + `) d`,
			`SELECT CAST(COUNT(*) AS VARCHAR) FROM (SELECT * FROM ` + single + ` EXCEPT ALL SELECT * FROM ` + mirror + `) d`,
		} {
			if got := tg.strings(t, q); got[0] != "0" {
				t.Errorf("%s rows differ from a single reading's (%s)", got[0], q)
			}
		}
	})
}

// The connections reading one table all hold the same snapshot: a commit
// after they began is seen by none of them, and none holds it back.
func TestTheReadsOfACopyShareOneSnapshot(t *testing.T) {
	for _, ek := range enginetest.Kinds {
		t.Run(string(ek), func(t *testing.T) {
			db := pipelinetest.DB(t, ek)
			ctx := context.Background()
			fillActions(t, db, 10)
			reads, err := beginReads(ctx, db, 3)
			if err != nil {
				t.Fatal(err)
			}
			defer endReads(reads)
			fillActions(t, db, 5)
			if n := engineCount(t, db, actionsName(db)); n != 15 {
				t.Fatalf("the Engine DB holds %d actions after the commit, want 15", n)
			}
			for i, r := range reads {
				var n int64
				if err := r.row(ctx, "SELECT COUNT(*) FROM "+actionsName(db)).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 10 {
					t.Errorf("read %d sees %d actions, want the 10 of its snapshot", i, n)
				}
			}
		})
	}
}

// actionRanges returns the key ranges a full copy of AUD_ACTIONS reads.
func actionRanges(t *testing.T, db *engine.DB) []keyRange {
	t.Helper()
	ctx := context.Background()
	reads, err := beginReads(ctx, db, readers)
	if err != nil {
		t.Fatal(err)
	}
	defer endReads(reads)
	cols, err := columns(ctx, db, actionsName(db))
	if err != nil {
		t.Fatal(err)
	}
	var k kept
	if k.capture, k.captured, err = reads[0].capture(ctx, actionsName(db), cols); err != nil || !k.captured {
		t.Fatalf("AUD_ACTIONS has no captured key (%v)", err)
	}
	ranges, err := keyRanges(ctx, reads, actionsName(db), cols, k)
	if err != nil {
		t.Fatal(err)
	}
	return ranges
}
