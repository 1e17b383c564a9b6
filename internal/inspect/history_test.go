package inspect_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/report"
)

// historyRuns records three runs of P — a backfill, a failed run with a
// rerun and a reopen, and a success with a mark — and returns their ids.
func historyRuns(t *testing.T, db *engine.DB) (b *pipelinetest.Builder, r1, r2, r3 int64) {
	b = pipelinetest.New(t, db)
	pid := b.Pipeline("P", pipeline.Full)
	load := b.Task("P", "load", pipeline.HandlerSQL, nil)
	publish := b.Task("P", "publish", pipeline.HandlerSQL, nil)
	rec := inspecttest.New(t, db, alice)
	day := 24 * time.Hour
	r1 = rec.Run(pid, inspecttest.Run{Key: "backfill:2026-02-27:x", TriggerKind: "BACKFILL", Backfill: true,
		Status: "SUCCESS", RunDate: "2026-02-27", Start: t0.Add(-2 * day), End: t0.Add(-2*day + time.Minute)})
	r2 = rec.Run(pid, inspecttest.Run{Status: "FAILED", RunDate: "2026-02-28", Start: t0.Add(-day), End: t0.Add(-day + time.Minute)})
	failed := rec.TaskRun(r2, load, inspecttest.TaskRun{Status: "FAILED", Attempts: 2, ErrorMessage: "no such table"})
	rec.Attempt(failed, 1, "FAILED", "no such table")
	rec.Attempt(failed, 2, "FAILED", "no such table")
	rec.Intervention(pid, r2, load, "RERUN", "FAILED", "IN-PROGRESS", "table restored", t0.Add(-day+2*time.Minute))
	rec.Intervention(pid, r2, 0, "REOPEN", "FAILED", "IN-PROGRESS", "table restored", t0.Add(-day+2*time.Minute))
	r3 = rec.Run(pid, inspecttest.Run{Status: "SUCCESS", RunDate: "2026-03-01", Start: t0, End: t0.Add(time.Minute), SLAStatus: "MET"})
	rec.TaskRun(r3, load, inspecttest.TaskRun{Status: "SUCCESS", TargetCount: count(12)})
	rec.Intervention(pid, r3, publish, "MARK", "FAILED", "SUCCESS", "loaded by hand", t0.Add(2*time.Minute))
	return b, r1, r2, r3
}

func TestHistoryListsRunsTasksAndInterventions(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b, r1, r2, r3 := historyRuns(t, db)
		ctx := context.Background()
		read := func(req inspect.HistoryRequest) report.History {
			t.Helper()
			req.PipelineCode = "P"
			if req.Limit == 0 {
				req.Limit = inspect.DefaultHistoryLimit
			}
			h, err := inspect.RunHistory(ctx, db, req)
			if err != nil {
				t.Fatal(err)
			}
			return h
		}
		runIDs := func(h report.History) []int64 {
			var out []int64
			for _, r := range h.Runs {
				out = append(out, r.ID)
			}
			for _, r := range h.TaskRuns {
				out = append(out, r.PipelineRunID)
			}
			return out
		}
		actions := func(h report.History) string {
			var out []string
			for _, c := range h.Changes {
				out = append(out, c.Action)
			}
			return strings.Join(out, ",")
		}

		h := read(inspect.HistoryRequest{All: true})
		if ids := runIDs(h); len(ids) != 3 || ids[0] != r3 || ids[2] != r1 {
			t.Fatalf("--all lists %v", ids)
		}
		if bf := h.Runs[2]; !bf.Backfill || bf.TriggerKind != "BACKFILL" || *bf.StartedBy != "alice@test" || *bf.EndedByKind != "HUMAN" {
			t.Fatalf("the backfill run %+v", bf)
		}
		if got := actions(h); got != "RERUN,REOPEN,MARK" {
			t.Fatalf("interventions %s", got)
		}
		h = read(inspect.HistoryRequest{All: true, Limit: 1})
		if ids := runIDs(h); len(ids) != 1 || ids[0] != r3 || actions(h) != "MARK" {
			t.Fatalf("--limit 1: %v %s", ids, actions(h))
		}
		// Without a selector the recent runs are listed, as with --all.
		h = read(inspect.HistoryRequest{Limit: 2})
		if ids := runIDs(h); len(ids) != 2 || ids[0] != r3 || ids[1] != r2 || actions(h) != "RERUN,REOPEN,MARK" {
			t.Fatalf("no selector: %v %s", ids, actions(h))
		}
		h = read(inspect.HistoryRequest{Selector: inspect.RunSelector{ID: r2}})
		if ids := runIDs(h); len(ids) != 1 || ids[0] != r2 || actions(h) != "RERUN,REOPEN" {
			t.Fatalf("--run-id: %v %s", ids, actions(h))
		}
		c := h.Changes[0]
		if *c.TaskCode != "load" || *c.FromStatus != "FAILED" || c.RequestedBy != "alice@test" || *c.RequestedByKind != "HUMAN" {
			t.Fatalf("the rerun %+v", c)
		}

		// The task view: load's runs with their attempts, and the
		// interventions on load or on its runs, not on publish.
		h = read(inspect.HistoryRequest{TaskCode: "load", All: true})
		if ids := runIDs(h); len(ids) != 2 || ids[0] != r3 || ids[1] != r2 || actions(h) != "RERUN,REOPEN" {
			t.Fatalf("task view %v %s", ids, actions(h))
		}
		if f := h.TaskRuns[1]; f.Status != "FAILED" || f.AttemptCount != 2 || len(f.Attempts) != 2 ||
			f.Attempts[1].AttemptNumber != 2 || *f.Attempts[1].ErrorMessage != "no such table" {
			t.Fatalf("the failed task run %+v", f)
		}
		if *h.TaskRuns[0].TargetCount != 12 || len(h.TaskRuns[0].Attempts) != 0 {
			t.Fatalf("the succeeded task run %+v", h.TaskRuns[0])
		}
		doc, _ := json.Marshal(h)
		var parsed struct {
			Schema   string            `json:"schema"`
			TaskCode string            `json:"task_code"`
			Entries  []json.RawMessage `json:"entries"`
		}
		if err := json.Unmarshal(doc, &parsed); err != nil || parsed.Schema != report.SchemaHistory ||
			parsed.TaskCode != "load" || len(parsed.Entries) != 2 || !strings.Contains(string(parsed.Entries[0]), `"schema":"etl-craft/task-run/1"`) {
			t.Fatalf("JSON %s", doc)
		}

		for _, c := range []struct {
			req  inspect.HistoryRequest
			code exit.Code
			want string
		}{
			{inspect.HistoryRequest{PipelineCode: "P", Limit: 20, Selector: inspect.RunSelector{Key: "nope"}}, exit.RunState,
				"matched 0 runs: pipeline P has no run with --run-key nope"},
			{inspect.HistoryRequest{PipelineCode: "P", Limit: 0, All: true}, exit.Usage, "--limit must be 1 or more"},
			{inspect.HistoryRequest{PipelineCode: "P", Limit: 5, All: true, Selector: inspect.RunSelector{ID: r1}}, exit.Usage, "--all lists"},
			{inspect.HistoryRequest{PipelineCode: "P", Limit: 5, TaskCode: "loads"}, exit.Metadata, "did you mean load?"},
			{inspect.HistoryRequest{PipelineCode: "PP", Limit: 5}, exit.Metadata, "did you mean P?"},
		} {
			_, err := inspect.RunHistory(ctx, db, c.req)
			wantCode(t, err, c.code, c.want)
		}

		b.Pipeline("NEVER_RUN", pipeline.Full)
		h, err := inspect.RunHistory(ctx, db, inspect.HistoryRequest{PipelineCode: "NEVER_RUN", Limit: 20})
		if err != nil || !h.Empty() {
			t.Fatalf("a pipeline that never ran: %+v %v", h, err)
		}
	})
}
