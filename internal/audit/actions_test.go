package audit_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestMaskHidesSecretLookingArgumentsRecursively(t *testing.T) {
	t.Parallel()
	got := audit.Mask(map[string]any{
		"password": "hunter2", "API_KEY": "k", "db-token": "t", "pwd": "p", "private_key": "x",
		"pipeline_code": "P", "run-key": "daily:2026-01-01",
		"nested": map[string]any{"client_secret": "s", "reason": "ok"},
		"list":   []any{map[string]any{"credential": "c"}},
	})
	b, _ := json.Marshal(got)
	for _, secret := range []string{"hunter2", `"k"`, `"t"`, `"p"`, `"x"`, `"s"`, `"c"`} {
		if strings.Contains(string(b), secret) {
			t.Errorf("%s survived masking: %s", secret, b)
		}
	}
	for _, kept := range []string{`"pipeline_code":"P"`, `"run-key":"daily:2026-01-01"`, `"reason":"ok"`} {
		if !strings.Contains(string(b), kept) {
			t.Errorf("%s was masked: %s", kept, b)
		}
	}
}

func TestRecordWritesOneImmutableRequest(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := pipelinetest.New(t, db)
		b.Pipeline("P", "FULL")
		b.Task("P", "load", "SQL", nil)
		ctx := actor.With(context.Background(), actor.Actor{Name: "alice", Kind: actor.Orchestrator})
		recorded, err := audit.Record(ctx, db, audit.Request{Command: "run", PipelineCode: "P", TaskCode: "load",
			Arguments: map[string]any{"pipeline_code": "P", "password": "hunter2"}})
		if err != nil || !recorded {
			t.Fatal(recorded, err)
		}
		var who, kind, cmd, args, outcome string
		var pid, tid int64
		err = db.QueryRowContext(ctx, `SELECT ACTOR, ACTOR_KIND, COMMAND, CAST(ARGUMENTS AS VARCHAR), OUTCOME, PIPELINE_ID, TASK_ID
			FROM AUD_ACTIONS`).Scan(&who, &kind, &cmd, &args, &outcome, &pid, &tid)
		if err != nil {
			t.Fatal(err)
		}
		if who != "alice" || kind != "ORCHESTRATOR" || cmd != "run" || outcome != "REQUESTED" ||
			pid != b.PipelineID("P") || tid != b.TaskID("P", "load") || strings.Contains(args, "hunter2") ||
			!strings.Contains(args, audit.Redacted) {
			t.Fatalf("row %s %s %s %s %s %d %d", who, kind, cmd, args, outcome, pid, tid)
		}
		err = db.Tx(ctx, func(tx *engine.Tx) error {
			_, err := tx.ExecContext(ctx, "UPDATE AUD_ACTIONS SET OUTCOME = 'DONE'")
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "append-only") && !strings.Contains(err.Error(), "immutable") {
			t.Fatalf("an update of AUD_ACTIONS: %v", err)
		}
	})
}

func TestRecordSkipsAnEngineDBWithoutTheTable(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		if recorded, err := audit.Record(context.Background(), db, audit.Request{Command: "migrate"}); err != nil || recorded {
			t.Fatal(recorded, err)
		}
		if err := audit.RecordDone(context.Background(), db, audit.Request{Command: "migrate"}); err != nil {
			t.Fatal(err)
		}
	})
}
