package inspect_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/report"
)

// as runs a statement in an engine transaction of the actor.
func as(t *testing.T, db *engine.DB, a actor.Actor, query string, args ...any) {
	t.Helper()
	ctx := actor.With(context.Background(), a)
	if err := db.Tx(ctx, func(tx *engine.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	}); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func TestParseSinceReadsDatesAndTimestamps(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Time{
		"2026-10-01":                time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
		"2026-10-01T08:00:00":       time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC),
		"2026-10-01 08:00:00.5":     time.Date(2026, 10, 1, 8, 0, 0, 500_000_000, time.UTC),
		"2026-10-01T08:00:00+02:00": time.Date(2026, 10, 1, 6, 0, 0, 0, time.UTC),
		"2026-10-01T08:00:00Z":      time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC),
		"2026-10-01T08:00":          time.Date(2026, 10, 1, 8, 0, 0, 0, time.UTC),
	} {
		got, err := inspect.ParseSince(in)
		if err != nil || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	_, err := inspect.ParseSince("yesterday")
	wantCode(t, err, exit.Usage, `--since "yesterday" is not an ISO date or timestamp`)
}

func TestAuditFiltersByPipelineIncludingDeletedRows(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		b := pipelinetest.New(t, db)
		for _, code := range []string{"P", "Q"} {
			as(t, db, alice, "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ($1, $1, 'FULL')", code)
			as(t, db, alice, "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) VALUES ('t', 'ETL', $1, 'SQL')", b.PipelineID(code))
			as(t, db, alice, "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES ($1, 'SQL_ACTION', 'CREATE_TABLE')",
				b.TaskID(code, "t"))
		}
		actx := actor.With(ctx, alice)
		for _, code := range []string{"P", "Q"} {
			req := audit.Request{Command: "pause", PipelineCode: code, Arguments: map[string]any{"reason": "x", "password": "hunter2"}}
			if _, err := audit.Record(actx, db, req); err != nil {
				t.Fatal(err)
			}
		}
		// P's task is retired, then its parameter and the task are deleted.
		pt := b.TaskID("P", "t")
		as(t, db, alice, "UPDATE CFG_TASK_PARAMETERS SET ACTIVE_FLAG = 'N' WHERE TASK_ID = $1", pt)
		as(t, db, alice, "DELETE FROM CFG_TASK_PARAMETERS WHERE TASK_ID = $1", pt)
		as(t, db, alice, "DELETE FROM CFG_TASKS WHERE TASK_ID = $1", pt)

		trail, err := inspect.ReadAudit(ctx, db, inspect.AuditFilter{PipelineCode: "P"})
		if err != nil {
			t.Fatal(err)
		}
		if len(trail.Actions) != 1 || trail.Actions[0].Command != "pause" || trail.Actions[0].Kind != "HUMAN" ||
			trail.Actions[0].Actor != "alice@test" || *trail.Actions[0].PipelineID != b.PipelineID("P") ||
			!strings.Contains(string(trail.Actions[0].Arguments), `"password":"[REDACTED]"`) {
			t.Fatalf("P's actions %+v", trail.Actions)
		}
		var got []string
		for _, c := range trail.Changes {
			got = append(got, c.TableName+" "+c.Operation)
			if c.Actor != "alice@test" || c.Kind != "HUMAN" || c.Migration != nil || c.Schema != report.SchemaMetadataChange {
				t.Errorf("change %+v", c)
			}
		}
		want := "CFG_PIPELINES INSERT,CFG_TASKS INSERT,CFG_TASK_PARAMETERS INSERT,CFG_TASK_PARAMETERS UPDATE," +
			"CFG_TASK_PARAMETERS DELETE,CFG_TASKS DELETE"
		if strings.Join(got, ",") != want {
			t.Fatalf("P's changes\n got %s\nwant %s", strings.Join(got, ","), want)
		}
		last := trail.Changes[len(trail.Changes)-1]
		if last.After != nil || !strings.Contains(string(last.Before), `"task_code":"t"`) || last.RowKey != itoa(pt) {
			t.Fatalf("the deleted task %+v", last)
		}

		all, err := inspect.ReadAudit(ctx, db, inspect.AuditFilter{})
		if err != nil || len(all.Actions) != 2 || len(all.Changes) != 9 || all.Schema != report.SchemaAudit {
			t.Fatalf("everything: %d actions, %d changes, %v", len(all.Actions), len(all.Changes), err)
		}
		later, err := inspect.ReadAudit(ctx, db, inspect.AuditFilter{Since: time.Now().Add(time.Hour)})
		if err != nil || len(later.Actions) != 0 || len(later.Changes) != 0 {
			t.Fatalf("since an hour from now: %+v %v", later, err)
		}
		earlier, err := inspect.ReadAudit(ctx, db, inspect.AuditFilter{PipelineCode: "Q", Since: time.Now().Add(-time.Hour)})
		if err != nil || len(earlier.Actions) != 1 || len(earlier.Changes) != 3 {
			t.Fatalf("Q since an hour ago: %+v %v", earlier, err)
		}

		// A retired pipeline's code still finds its trail.
		as(t, db, alice, "UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_CODE = 'Q'")
		retired, err := inspect.ReadAudit(ctx, db, inspect.AuditFilter{PipelineCode: "Q"})
		if err != nil || len(retired.Changes) != 4 {
			t.Fatalf("retired Q: %+v %v", retired, err)
		}
		_, err = inspect.ReadAudit(ctx, db, inspect.AuditFilter{PipelineCode: "PP"})
		wantCode(t, err, exit.Metadata, `no active pipeline has the code "PP"`)
	})
}
