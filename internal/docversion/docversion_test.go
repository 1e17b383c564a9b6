package docversion_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/etl-craft/etl-craft/internal/docversion"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// TestVersions records version 1 of each text, nothing when no text
// changed, version 2 of a changed one, and nothing under Check, on both
// Engine DB dialects.
func TestVersions(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		b := pipelinetest.New(t, db)
		b.Pipeline("P", "FULL")
		a := b.Task("P", "a", "SQL", map[string]string{"DOCUMENTATION": "Loads the orders."})
		b.Task("P", "b", "SQL", map[string]string{"DOCUMENTATION": "Sums them."})
		b.Task("P", "c", "SQL", map[string]string{"SQL_ACTION": "DROP_TABLE"})
		refresh := func(req docversion.Request) string {
			t.Helper()
			doc, err := docversion.Refresh(ctx, db, req)
			if err != nil {
				t.Fatal(err)
			}
			return fmt.Sprint(doc.Tasks)
		}
		rows := func() (n int) {
			db.QueryRowContext(ctx, "SELECT count(*) FROM AUD_TASK_DOCUMENTATION").Scan(&n)
			return n
		}
		if got := refresh(docversion.Request{Check: true}); got != "[{P a 1 true} {P b 1 true}]" || rows() != 0 {
			t.Fatalf("first check: %s with %d rows", got, rows())
		}
		if got := refresh(docversion.Request{}); got != "[{P a 1 true} {P b 1 true}]" || rows() != 2 {
			t.Fatalf("first record: %s with %d rows", got, rows())
		}
		if got := refresh(docversion.Request{}); got != "[{P a 1 false} {P b 1 false}]" || rows() != 2 {
			t.Fatalf("no change: %s with %d rows", got, rows())
		}
		b.Exec("UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = 'Loads the orders, deduplicated.' WHERE TASK_ID = $1", a)
		if got := refresh(docversion.Request{Check: true}); got != "[{P a 2 true} {P b 1 false}]" || rows() != 2 {
			t.Fatalf("check after a change: %s with %d rows", got, rows())
		}
		if got := refresh(docversion.Request{PipelineCode: "P", TaskCode: "a"}); got != "[{P a 2 true}]" || rows() != 3 {
			t.Fatalf("record one task: %s with %d rows", got, rows())
		}
		var text string
		db.QueryRowContext(ctx, "SELECT DOCUMENTATION FROM AUD_TASK_DOCUMENTATION WHERE TASK_ID = $1 AND VERSION = 2", a).Scan(&text)
		if text != "Loads the orders, deduplicated." {
			t.Errorf("version 2 holds %q", text)
		}
		_, err := docversion.Refresh(ctx, db, docversion.Request{PipelineCode: "P", TaskCode: "aa"})
		if exit.CodeOf(err) != exit.Metadata {
			t.Errorf("an unknown task: %v (exit %d), want exit 4", err, exit.CodeOf(err))
		}
	})
}
