package run

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// The steps of a remote orchestrator (P08, P09, P10, P17, X21, X24, X25,
// CH02, CH03): init ignores pipeline dependencies and is resumed by a second
// init; tasks run in any order, without dependency checks or retries, and a
// second delivery of a running task is refused; finalize records the tasks
// never run SKIPPED and those left IN-PROGRESS FAILED; clearing an old DAG
// run reopens only that run; a run's date never changes.
func TestRemoteOrchestratorSteps(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.opts.Remote = true
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "x", "succeed")
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "succeed")
		f.task("P", "b", "fail", "RETRIES", "2", "RETRY_DELAY_SECONDS", "0")
		f.task("P", "alert", "succeed")
		f.b.Dep("P", "b", "P", "a", pipeline.Success)
		f.b.Dep("P", "alert", "P", "b", pipeline.Success)
		f.b.PipelineDep("P", "UP", pipeline.Success) // never satisfied: UP never runs
		s := f.supervisor()
		key := Request{PipelineCode: "P", RunKey: "orchestrator:r1", RunDate: "2026-10-07"}
		task := func(code string, r Request) (Outcome, error) {
			r.TaskCode = code
			return s.RunTask(f.ctx(), r)
		}

		_, err := task("a", Request{PipelineCode: "P"})
		wantCode(t, err, exit.RunState, "matched 0 runs")
		_, err = s.FinalizeRun(f.ctx(), Request{PipelineCode: "P"})
		wantCode(t, err, exit.RunState, "matched 0 runs")
		init, err := s.InitRun(f.ctx(), key)
		if err != nil || init.String() != fmt.Sprintf("P: pipeline_run_id=%d IN-PROGRESS", init.RunID) {
			t.Fatalf("%q %v", init.String(), err)
		}
		var row string
		f.scalar(&row, `SELECT TRIGGER_KIND || ' ' || RUN_KEY || ' ' || CAST(RUN_DATE AS VARCHAR) || ' ' || COALESCE(OWNER_ID, 'unowned')
			FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1`, init.RunID)
		if row != "ORCHESTRATOR orchestrator:r1 2026-10-07 unowned" || len(f.decisions(init.RunID)) != 0 {
			t.Fatalf("%s %v", row, f.decisions(init.RunID))
		}
		if again, err := s.InitRun(f.ctx(), key); err != nil || again.RunID != init.RunID {
			t.Fatalf("a second init: %q %v", again.String(), err)
		}
		_, err = s.InitRun(f.ctx(), Request{PipelineCode: "P", RunDate: "2026-10-08"})
		wantCode(t, err, exit.RunState, "as of 2026-10-07, not 2026-10-08; finish it with etl-craft run --pipeline_code P --finalize-only")

		// Any order, no dependency check, no retries.
		if out, err := task("b", key); err != nil || out.Status != TaskFailed || out.Code != exit.Failure ||
			fmtList(f.attempts(init.RunID, "b")) != "[FAILED]" {
			t.Fatalf("%q %v %v", out.String(), err, f.attempts(init.RunID, "b"))
		}
		if out, err := task("a", key); err != nil || out.Status != TaskSuccess {
			t.Fatalf("%q %v", out.String(), err)
		}
		fin, err := s.FinalizeRun(f.ctx(), key)
		if err != nil || fin.Status != RunFailed || fin.Code != exit.Failure || !strings.HasSuffix(fin.Detail, "; not run by the orchestrator: alert") {
			t.Fatalf("%q %v", fin.String(), err)
		}
		if msg := f.nullString("SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE TASK_ID = $1", f.b.TaskID("P", "alert")); msg.String != NotRunByOrchestrator {
			t.Fatalf("alert: %q", msg.String)
		}

		// A newer DAG run, then the old one cleared: only the old run reopens.
		newer := Request{PipelineCode: "P", RunKey: "orchestrator:r2", RunDate: "2026-10-08"}
		r2, err := s.InitRun(f.ctx(), newer)
		if err != nil {
			t.Fatal(err)
		}
		// P09: a run the orchestrator ran no task of ends SKIPPED.
		if fin, err := s.FinalizeRun(f.ctx(), newer); err != nil || fin.Status != RunSkipped ||
			fin.Detail != "all 3 task(s) were skipped; not run by the orchestrator: a, alert, b" {
			t.Fatalf("%q %v", fin.String(), err)
		}
		snapshot := func(id int64) string {
			var s string
			f.scalar(&s, `SELECT STATUS || ' ' || RUN_KEY || ' ' || CAST(RUN_DATE AS VARCHAR) || ' ' || CAST(END_DATE AS VARCHAR)
				FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1`, id)
			return s
		}
		before := snapshot(r2.RunID)
		_, err = s.FinalizeRun(f.ctx(), key)
		wantCode(t, err, exit.RunState, "is FAILED; expected IN-PROGRESS to finalize")
		if out, err := task("b", Request{PipelineCode: "P"}); err == nil {
			t.Fatalf("without a selector an ended run was chosen: %q", out.String())
		}
		wrongDate := key
		wrongDate.RunDate = "2026-10-09"
		for name, step := range map[string]func() error{
			"init":     func() error { _, err := s.InitRun(f.ctx(), wrongDate); return err },
			"task":     func() error { _, err := task("b", wrongDate); return err },
			"finalize": func() error { _, err := s.FinalizeRun(f.ctx(), wrongDate); return err },
		} {
			wantCode(t, step(), exit.RunState, "a run's date cannot change")
			if snapshot(init.RunID) == "" || f.runStatus(init.RunID) != RunFailed {
				t.Fatalf("%s changed the run", name)
			}
		}
		f.setBehaviour("P", "b", "succeed")
		if out, err := task("b", key); err != nil || out.Status != TaskSuccess || fmtList(f.attempts(init.RunID, "b")) != "[FAILED SUCCESS]" {
			t.Fatalf("the cleared task: %q %v %v", out.String(), err, f.attempts(init.RunID, "b"))
		}
		if f.runStatus(init.RunID) != RunInProgress || snapshot(r2.RunID) != before ||
			fmtList(f.interventions(init.RunID)) != "[REOPEN b FAILED>IN-PROGRESS the orchestrator ran b again after the run ended FAILED by tester@host HUMAN]" {
			t.Fatalf("status %s, newer run %q (was %q), interventions %v", f.runStatus(init.RunID), snapshot(r2.RunID), before, f.interventions(init.RunID))
		}
		if fin, err := s.FinalizeRun(f.ctx(), key); err != nil || fin.Status != RunSuccess {
			t.Fatalf("%q %v", fin.String(), err)
		}

		// P10, CH02: a second delivery of a running task is refused; finalize
		// fails a task left IN-PROGRESS.
		r3 := Request{PipelineCode: "P", RunKey: "orchestrator:r3", RunDate: "2026-10-10"}
		third, err := s.InitRun(f.ctx(), r3)
		if err != nil {
			t.Fatal(err)
		}
		owner := NewOwner()
		if err := f.tx(func(tx *wtx) error {
			q, err := queueAttempt(f.ctx(), tx, third.RunID, f.b.TaskID("P", "a"), queueing{}, time.Now())
			if err != nil {
				return err
			}
			if err := claimAttempt(f.ctx(), tx, q.AttemptID, owner, time.Now()); err != nil {
				return err
			}
			return startAttempt(f.ctx(), tx, q.AttemptID, owner, "a.log", time.Now())
		}); err != nil {
			t.Fatal(err)
		}
		_, err = task("a", r3)
		wantCode(t, err, exit.StaleTransition, "a: already IN-PROGRESS under pipeline_run_id=")
		fin, err = s.FinalizeRun(f.ctx(), r3)
		if err != nil || fin.Status != RunFailed || !strings.HasPrefix(fin.Detail, "1 task(s) did not succeed: a (FAILED)") {
			t.Fatalf("%q %v", fin.String(), err)
		}
		if msg := f.nullString("SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1 AND TASK_ID = $2", third.RunID,
			f.b.TaskID("P", "a")); !strings.HasPrefix(msg.String, "still IN-PROGRESS when the orchestrator finalized the run") {
			t.Fatalf("%q", msg.String)
		}
	})
}

// P11: remote init refuses the rules an orchestrator cannot express, listing
// each, and records nothing; local mode runs the same pipeline.
func TestRemoteInitRefusesRulesAnOrchestratorCannotExpress(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		for _, c := range []string{"a", "b", "c", "two_of", "mixed", "rows"} {
			f.task("P", c, "succeed")
		}
		f.b.Dep("P", "two_of", "P", "a", pipeline.Success)
		f.b.Dep("P", "two_of", "P", "b", pipeline.Success)
		f.b.Dep("P", "two_of", "P", "c", pipeline.Success)
		f.b.Condition("P", "two_of", "N", 2)
		f.b.Dep("P", "mixed", "P", "a", pipeline.Success)
		f.b.Dep("P", "mixed", "P", "b", pipeline.Failure)
		f.b.Dep("P", "rows", "P", "a", pipeline.HasData)
		remote := f.supervisorWith(func(o *Options) { o.Remote = true })
		_, err := remote.InitRun(f.ctx(), Request{PipelineCode: "P"})
		wantCode(t, err, exit.RemoteUnsupported, "P has 3 rule(s) the remote orchestrator cannot express")
		for _, want := range []string{"P.mixed: its dependencies have different types (a: SUCCESS, b: FAILURE)",
			"P.rows: depends on a with DEPENDENCY_TYPE = 'HAS_DATA'", "P.two_of: RUN_CONDITION = 'N' (RUN_CONDITION_COUNT = 2)",
			"or run the pipeline in local mode (Orchestration.Mode: local)"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v does not name %q", err, want)
			}
		}
		f.wantRuns(0)
		if out, err := f.supervisor().InitRun(f.ctx(), Request{PipelineCode: "P"}); err != nil || out.Status != RunInProgress {
			t.Fatalf("local init: %q %v", out.String(), err)
		}
	})
}
