package run

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestBackfillDates(t *testing.T) {
	t.Parallel()
	dates, err := BackfillDates("2024-02-27", "2024-03-01")
	if err != nil || fmtList(dates) != "[2024-02-27 2024-02-28 2024-02-29 2024-03-01]" {
		t.Fatalf("%v %v", dates, err)
	}
	if d, err := BackfillDates("2025-01-01", "2025-12-31"); err != nil || len(d) != 365 {
		t.Fatalf("%d %v", len(d), err)
	}
	_, err = BackfillDates("2024-01-01", "2025-01-01")
	wantCode(t, err, exit.Usage, "is 367 dates; one backfill runs at most 366")
	_, err = BackfillDates("2026-01-05", "2026-01-01")
	wantCode(t, err, exit.Usage, "2026-01-05 is after 2026-01-01")
	_, err = BackfillDates("2026-01-05", "soon")
	wantCode(t, err, exit.Usage, `"soon" is not a date`)
	_, err = BackfillDates("9999-12-31", "10000-01-01")
	wantCode(t, err, exit.Usage, `"10000-01-01" is not a date from 0001-01-01 to 9999-12-31`)
	if d, err := BackfillDates("0001-01-01", "0001-01-02"); err != nil || len(d) != 2 {
		t.Fatalf("the first dates: %v %v", d, err)
	}
}

// I12: a backfill of five dates runs one BACKFILL run per date, oldest first,
// checking no pipeline gate and consuming nothing, and stops at the first
// date that fails, leaving the later dates untouched; it is refused while a
// run is in progress, and plain runs and backfills do not take over each
// other's runs.
func TestABackfillStopsAtTheFirstFailingDate(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "publish", "succeed")
		f.b.Pipeline("P", "FULL")
		f.task("P", "load", "fail_on", "FAIL_DATE", "2026-01-03")
		f.task("P", "on_up_failure", "succeed")
		f.task("P", "after_up", "succeed")
		f.b.Dep("P", "on_up_failure", "UP", "publish", pipeline.Failure)
		f.b.Dep("P", "after_up", "UP", "publish", pipeline.Success)
		f.b.PipelineDep("P", "UP", pipeline.Success) // UP never ran: a plain run would be SKIPPED
		s := f.supervisor()
		b, err := s.Backfill(f.ctx(), BackfillRequest{PipelineCode: "P", From: "2026-01-01", To: "2026-01-05", Reason: "reload January"})
		if err != nil || b.Code != exit.Failure || b.Status != RunFailed || len(b.Runs) != 3 || b.Stopped == nil || b.Stopped.RunID != b.Runs[2].RunID {
			t.Fatalf("%+v %v", b, err)
		}
		if !strings.HasPrefix(b.Message, "P: backfill stopped at 2026-01-03 after 3 of 5 run(s): ") ||
			!strings.HasSuffix(exit.Flags(b.Message), "; etl-craft run --pipeline_code P --backfill 2026-01-03:2026-01-05 --reason ... takes up from there once it is fixed") {
			t.Fatalf("%q", b.Message)
		}
		rows := f.column(`SELECT CAST(RUN_DATE AS VARCHAR) || ' ' || STATUS || ' ' || TRIGGER_KIND || ' ' || BACKFILL || ' ' || RUN_KEY
			FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 ORDER BY PIPELINE_RUN_ID`, f.b.PipelineID("P"))
		key := regexp.MustCompile(`^(2026-01-0[1-3]) (SUCCESS|FAILED) BACKFILL Y backfill:(2026-01-0[1-3]):[0-9a-f-]{36}$`)
		if len(rows) != 3 {
			t.Fatalf("runs %v", rows)
		}
		for i, r := range rows {
			m := key.FindStringSubmatch(r)
			if m == nil || m[1] != m[3] || m[1] != fmt.Sprintf("2026-01-0%d", i+1) || (m[2] == RunFailed) != (i == 2) {
				t.Fatalf("run %d: %s", i, r)
			}
		}
		first := b.Runs[0].RunID
		if got := fmtList(f.interventions(first)); got != "[GATE_BYPASS - ->- backfill for 2026-01-01: reload January; "+
			"dependencies on other pipelines are not checked, and nothing is consumed by tester@host HUMAN]" {
			t.Fatalf("interventions %s", got)
		}
		msg := f.nullString("SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1 AND TASK_ID = $2", first, f.b.TaskID("P", "on_up_failure"))
		if got := f.statuses(first); got["after_up"] != TaskSuccess || got["on_up_failure"] != TaskSkipped ||
			!strings.HasSuffix(msg.String, "upstream task UP.publish (FAILURE) is not evaluated in a backfill, so it is not met") {
			t.Fatalf("statuses %v, %q", got, msg.String)
		}
		if n := f.count("SELECT count(*) FROM AUD_GATE_DECISIONS") + f.count("SELECT count(*) FROM AUD_DEPENDENCY_CONSUMPTION"); n != 0 {
			t.Fatalf("a backfill recorded %d decisions and consumptions", n)
		}

		// Refusals.
		_, err = s.Backfill(f.ctx(), BackfillRequest{PipelineCode: "P", From: "2026-01-01", To: "2026-01-05"})
		wantCode(t, err, exit.Usage, "--backfill needs a --reason")
		_, err = f.supervisorWith(func(o *Options) { o.Remote = true }).
			Backfill(f.ctx(), BackfillRequest{PipelineCode: "P", From: "2026-01-01", To: "2026-01-05", Reason: "x"})
		wantCode(t, err, exit.RunRefused, "only available in local mode")
		plain := f.openRun("P")
		_, err = s.Backfill(f.ctx(), BackfillRequest{PipelineCode: "P", From: "2026-01-04", To: "2026-01-05", Reason: "x"})
		wantCode(t, err, exit.RunState, fmt.Sprintf("P has a run in progress (pipeline_run_id=%d)", plain))
		f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'CANCELLED' WHERE PIPELINE_RUN_ID = $1", plain)
		f.exec(`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND, RUN_DATE, BACKFILL)
			VALUES ($1, 'IN-PROGRESS', 'backfill:2026-01-04:x', 'BACKFILL', '2026-01-04', 'Y')`, f.b.PipelineID("P"))
		_, err = s.RunPipeline(f.ctx(), Request{PipelineCode: "P"})
		wantCode(t, err, exit.RunState, "is a backfill's run in progress; a plain run does not take it over")
		if n := f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1", f.b.PipelineID("P")); n != 5 {
			t.Fatalf("%d runs after the refusals", n)
		}
	})
}
