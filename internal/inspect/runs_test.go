package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// t0 is the fixed time the recorded history starts at.
var t0 = time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)

// alice is the actor who records the tests' history.
var alice = actor.Actor{Name: "alice@test", Kind: actor.Human}

// wantCode fails the test unless err carries the exit code and the text.
func wantCode(t *testing.T, err error, code exit.Code, text string) {
	t.Helper()
	if err == nil || exit.CodeOf(err) != code || !strings.Contains(exit.Flagged(err), text) {
		t.Fatalf("got %v (exit %d), want exit %d with %q", err, exit.CodeOf(err), code, text)
	}
}

func find(t *testing.T, db *engine.DB, code string) pipeline.Pipeline {
	t.Helper()
	p, err := pipeline.Find(context.Background(), db, code)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunSelectorFlagsAreChecked(t *testing.T) {
	t.Parallel()
	cases := []struct {
		idGiven, keyGiven bool
		id                int64
		key, want         string
	}{
		{idGiven: true, id: 0, want: "--run-id must be a positive"},
		{idGiven: true, id: -3, want: "--run-id must be a positive"},
		{keyGiven: true, key: "  ", want: "--run-key must not be blank"},
		{idGiven: true, id: 4, keyGiven: true, key: "k", want: "pass only one"},
	}
	for _, c := range cases {
		_, err := inspect.NewRunSelector(c.idGiven, c.id, c.keyGiven, c.key)
		wantCode(t, err, exit.Usage, c.want)
	}
	sel, err := inspect.NewRunSelector(true, 7, false, "")
	if err != nil || sel.ID != 7 || sel.IsZero() || exit.Flags(sel.String()) != "--run-id 7" {
		t.Fatalf("--run-id 7: %+v %v", sel, err)
	}
	sel, err = inspect.NewRunSelector(false, 0, false, "")
	if err != nil || !sel.IsZero() {
		t.Fatalf("no selector: %+v %v", sel, err)
	}
}

func TestSelectRunChoosesExactlyOneRunOfThePipeline(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		b := pipelinetest.New(t, db)
		salesID := b.Pipeline("SALES", pipeline.Full)
		otherID := b.Pipeline("OTHER", pipeline.Full)
		rec := inspecttest.New(t, db, alice)
		ended := rec.Run(salesID, inspecttest.Run{Key: "daily:2026-03-01", Status: "SUCCESS", RunDate: "2026-03-01",
			Start: t0, End: t0.Add(time.Minute), SLAStatus: "MET"})
		foreign := rec.Run(otherID, inspecttest.Run{Status: "IN-PROGRESS"})
		sales := find(t, db, "SALES")

		_, err := inspect.SelectRun(ctx, db, sales, inspect.RunSelector{})
		wantCode(t, err, exit.RunState, "matched 0 runs: pipeline SALES has no QUEUED or IN-PROGRESS run")
		var sel *inspect.SelectionError
		if !errors.As(err, &sel) || len(sel.Candidates) != 0 {
			t.Fatalf("the error does not carry the selection: %#v", err)
		}

		for _, s := range []inspect.RunSelector{{ID: ended}, {Key: "daily:2026-03-01"}} {
			r, err := inspect.SelectRun(ctx, db, sales, s)
			if err != nil {
				t.Fatalf("%s: %v", s, err)
			}
			if r.ID != ended || r.Status != "SUCCESS" || *r.RunDate != "2026-03-01" || r.PipelineCode != "SALES" ||
				!r.StartDate.Equal(t0) || !r.EndDate.Equal(t0.Add(time.Minute)) || *r.SLAStatus != "MET" ||
				*r.StartedBy != "alice@test" || *r.StartedByKind != "HUMAN" || *r.EndedBy != "alice@test" || !r.Ended() {
				t.Fatalf("%s selected %+v", s, r)
			}
		}
		_, err = inspect.SelectRun(ctx, db, sales, inspect.RunSelector{ID: foreign})
		wantCode(t, err, exit.RunState, fmt.Sprintf("matched 0 runs: pipeline SALES has no run with --run-id %d", foreign))
		_, err = inspect.SelectRun(ctx, db, sales, inspect.RunSelector{Key: "nope"})
		wantCode(t, err, exit.RunState, "has no run with --run-key nope")

		active := rec.Run(salesID, inspecttest.Run{Status: "IN-PROGRESS", RunDate: "2026-03-02"})
		if r, err := inspect.SelectRun(ctx, db, sales, inspect.RunSelector{}); err != nil || r.ID != active || r.Ended() {
			t.Fatalf("the active run: %+v %v", r, err)
		}

		// Two runs not ended: the unique index is dropped to simulate it.
		b.Exec("DROP INDEX ux_pipeline_run_one_active")
		second := rec.Run(salesID, inspecttest.Run{Key: "manual:second", Status: "IN-PROGRESS", RunDate: "2026-03-03"})
		_, err = inspect.SelectRun(ctx, db, sales, inspect.RunSelector{})
		wantCode(t, err, exit.RunState, "matched 2 runs")
		for _, want := range []string{
			fmt.Sprintf("\n  id=%d key=manual:second kind=MANUAL run_date=2026-03-03 status=IN-PROGRESS", second),
			fmt.Sprintf("\n  id=%d key=", active),
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("the candidates do not include %q:\n%v", want, err)
			}
		}
	})
}

func TestViewRunFallsBackToTheMostRecentRun(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		b := pipelinetest.New(t, db)
		salesID := b.Pipeline("SALES", pipeline.Full)
		otherID := b.Pipeline("OTHER", pipeline.Full)
		b.Pipeline("NEVER", pipeline.Full)
		rec := inspecttest.New(t, db, alice)
		first := rec.Run(salesID, inspecttest.Run{Status: "SUCCESS", Start: t0, End: t0.Add(time.Minute)})
		latest := rec.Run(salesID, inspecttest.Run{Status: "FAILED", Start: t0.Add(time.Hour), End: t0.Add(2 * time.Hour)})
		foreign := rec.Run(otherID, inspecttest.Run{Status: "IN-PROGRESS"})
		sales := find(t, db, "SALES")

		_, _, err := inspect.ViewRun(ctx, db, find(t, db, "NEVER"), inspect.RunSelector{})
		wantCode(t, err, exit.RunState, "matched 0 runs: pipeline NEVER has no runs yet")
		var sel *inspect.SelectionError
		if !errors.As(err, &sel) || !sel.NeverRan {
			t.Fatalf("the error does not carry the selection: %#v", err)
		}

		// No run is active: the most recent one, though the strict rule refuses.
		r, chosen, err := inspect.ViewRun(ctx, db, sales, inspect.RunSelector{})
		if err != nil || r.ID != latest || r.Status != "FAILED" || chosen != inspect.ChoiceLatest {
			t.Fatalf("no selector, no active run: %+v %s %v", r, chosen, err)
		}
		_, err = inspect.SelectRun(ctx, db, sales, inspect.RunSelector{})
		wantCode(t, err, exit.RunState, "an ended run is chosen only by --run-id or --run-key")

		// A selector is exact, as SelectRun's.
		r, chosen, err = inspect.ViewRun(ctx, db, sales, inspect.RunSelector{ID: first})
		if err != nil || r.ID != first || chosen != inspect.ChoiceSelector {
			t.Fatalf("--run-id %d: %+v %s %v", first, r, chosen, err)
		}
		_, _, err = inspect.ViewRun(ctx, db, sales, inspect.RunSelector{ID: foreign})
		wantCode(t, err, exit.RunState, fmt.Sprintf("pipeline SALES has no run with --run-id %d", foreign))

		// The active run wins over a newer run that has ended.
		active := rec.Run(salesID, inspecttest.Run{Status: "IN-PROGRESS", Start: t0.Add(3 * time.Hour)})
		rec.Run(salesID, inspecttest.Run{Status: "SUCCESS", Start: t0.Add(4 * time.Hour), End: t0.Add(5 * time.Hour)})
		r, chosen, err = inspect.ViewRun(ctx, db, sales, inspect.RunSelector{})
		if err != nil || r.ID != active || chosen != inspect.ChoiceActive {
			t.Fatalf("no selector, one active run: %+v %s %v", r, chosen, err)
		}
	})
}
