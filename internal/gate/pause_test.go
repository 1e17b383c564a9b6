package gate_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/records"
)

// I10: pausing and resuming a pipeline, refusals included.
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		id := pipelinetest.New(t, db).Pipeline("SALES", pipeline.Full)
		ctx := actor.With(context.Background(), alice)
		bob := actor.With(context.Background(), actor.Actor{Name: "bob", Kind: actor.Schedule})

		if p, err := records.PausedBy(ctx, db, id); p != nil || err != nil {
			t.Fatalf("not paused yet: %v, %v", p, err)
		}
		if _, err := gate.Pause(ctx, db, id, "  "); !exit.Is(err, exit.Usage) {
			t.Fatalf("blank reason: %v", err)
		}
		c, err := gate.Pause(ctx, db, id, "warehouse maintenance")
		if err != nil || c.Message != "SALES: paused; etl-craft run starts nothing of it until it is resumed" {
			t.Fatalf("pause: %+v, %v", c, err)
		}
		p, err := records.PausedBy(ctx, db, id)
		if err != nil || p == nil || p.ID != c.Pause.ID || p.By != alice.Name || p.Kind != "HUMAN" || p.Reason != "warehouse maintenance" ||
			!strings.HasPrefix(p.String(), "paused by alice@test (HUMAN) since ") || !strings.HasSuffix(p.String(), ": warehouse maintenance") {
			t.Fatalf("paused by: %+v (%s), %v", p, p, err)
		}

		_, err = gate.Pause(bob, db, id, "again")
		if !exit.Is(err, exit.RunState) || !strings.Contains(err.Error(), "SALES is already "+p.String()) {
			t.Fatalf("double pause: %v", err)
		}

		run := inspecttest.New(t, db, alice).Run(id, inspecttest.Run{Status: "IN-PROGRESS", Start: t0})
		c, err = gate.Resume(bob, db, id, "maintenance over")
		if err != nil || c.ActiveRunID != run || c.Pause.ID != p.ID ||
			exit.Flags(c.Message) != "SALES: resumed; etl-craft run --pipeline_code SALES goes on with pipeline_run_id="+itoa(run) {
			t.Fatalf("resume: %+v, %v", c, err)
		}
		var by, kind, reason string
		var resumed engine.Time
		err = db.QueryRowContext(ctx, `SELECT RESUMED_BY, RESUMED_BY_KIND, RESUME_REASON, RESUMED_AT FROM AUD_PIPELINE_PAUSES
			WHERE PIPELINE_PAUSE_ID = $1`, p.ID).Scan(&by, &kind, &reason, &resumed)
		if err != nil || by != "bob" || kind != "SCHEDULE" || reason != "maintenance over" || !resumed.Valid {
			t.Fatalf("resumed row: %s %s %q %v, %v", by, kind, reason, resumed, err)
		}
		if p, _ := records.PausedBy(ctx, db, id); p != nil {
			t.Fatalf("still paused: %+v", p)
		}
		if _, err := gate.Resume(ctx, db, id, "again"); !exit.Is(err, exit.RunState) || err.Error() != "SALES is not paused; nothing to resume" {
			t.Fatalf("double resume: %v", err)
		}

		c, err = gate.Pause(bob, db, id, "hold the run")
		if err != nil || c.Message != "SALES: paused; etl-craft run starts nothing of it until it is resumed; pipeline_run_id="+
			itoa(run)+", in progress, starts no more tasks and stays IN-PROGRESS" {
			t.Fatalf("pause during a run: %+v, %v", c, err)
		}
		var open, all int
		db.QueryRowContext(ctx, `SELECT count(CASE WHEN RESUMED_AT IS NULL THEN 1 END), count(*) FROM AUD_PIPELINE_PAUSES`).Scan(&open, &all)
		if open != 1 || all != 2 {
			t.Fatalf("%d open of %d pauses", open, all)
		}
		if _, err := gate.Pause(ctx, db, id+100, "no such pipeline"); !exit.Is(err, exit.Metadata) {
			t.Fatalf("unknown pipeline: %v", err)
		}
		var kindNull sql.NullString
		db.QueryRowContext(ctx, "SELECT PAUSED_BY_KIND FROM AUD_PIPELINE_PAUSES WHERE RESUMED_AT IS NULL").Scan(&kindNull)
		if kindNull.String != "SCHEDULE" {
			t.Fatalf("paused by kind %v", kindNull)
		}
	})
}
