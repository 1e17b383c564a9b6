package clone

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// A value the clone cannot read, in one row of one table (a RUN_DATE stored
// malformed before migration 0023 made the Engine DB refuse one), fails
// that table alone: the error names the table, the row and the column, the
// table's mirror keeps what the last clone left, and every other table is
// still copied, new rows included.
func TestABadValueFailsItsTableAlone(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.SQLite)
	tg := newTarget(t, db, warehouse.DuckDB)
	ctx := context.Background()
	history(t, db)
	if _, err := Run(ctx, db, tg.src, tg.options("all")); err != nil {
		t.Fatal(err)
	}

	// A run stored as an API request could store it before the fix.
	for _, trigger := range []string{"trg_check_run_date_insert", "trg_check_run_date_update"} {
		if _, err := db.SQL().ExecContext(ctx, "DROP TRIGGER IF EXISTS "+trigger); err != nil {
			t.Fatal(err)
		}
	}
	b := pipelinetest.New(t, db)
	rec := inspecttest.New(t, db, actor.SystemActor)
	bad := rec.Run(b.PipelineID("SALES"), inspecttest.Run{Status: "SUCCESS", RunDate: "not-a-date; DROP TABLE x"})
	good := rec.Run(b.PipelineID("SALES"), inspecttest.Run{Status: "SUCCESS", RunDate: "2026-03-03"})
	rec.TaskRun(good, b.TaskID("SALES", "load"), inspecttest.TaskRun{Status: "SUCCESS", End: time.Now()})
	b.Pipeline("LATER", "FULL")

	out, err := Run(ctx, db, tg.src, tg.options("all"))
	var te *TableError
	if !exit.Is(err, exit.Cloning) || !errors.As(err, &te) || te.Table != "AUD_PIPELINES_RUN_LOG" {
		t.Fatalf("the clone ended %v, want exit 17 naming AUD_PIPELINES_RUN_LOG", err)
	}
	for _, says := range []string{"AUD_PIPELINES_RUN_LOG", fmt.Sprintf("PIPELINE_RUN_ID %d", bad), "column RUN_DATE", "not-a-date"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("the error does not say %q: %v", says, err)
		}
	}
	var copied []string
	for _, tb := range out {
		copied = append(copied, tb.Engine)
	}
	if slices.Contains(copied, "AUD_PIPELINES_RUN_LOG") || !slices.Contains(copied, "AUD_TASK_RUN_LOG") ||
		!slices.Contains(copied, "CFG_PIPELINES") || len(copied) < 10 {
		t.Errorf("copied %v", copied)
	}
	if got := tg.strings(t, "SELECT CAST(COUNT(*) AS VARCHAR) FROM "+tg.mirror("AUD_PIPELINES_RUN_LOG")); !slices.Equal(got, []string{"1"}) {
		t.Errorf("the failed table's mirror holds %v row(s), want the 1 the last clone left", got)
	}
	if got := tg.strings(t, "SELECT CAST(COUNT(*) AS VARCHAR) FROM "+tg.mirror("AUD_TASK_RUN_LOG")); !slices.Equal(got, []string{"2"}) {
		t.Errorf("the other tables' new rows were not copied: AUD_TASK_RUN_LOG holds %v", got)
	}
	if got := tg.strings(t, `SELECT "PIPELINE_CODE" FROM `+tg.mirror("CFG_PIPELINES")+` ORDER BY 1`); !slices.Equal(got, []string{"LATER", "SALES"}) {
		t.Errorf("CFG_PIPELINES mirror holds %v", got)
	}
}
