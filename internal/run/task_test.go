package run

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// runTask runs one task and fails the test on an error.
func (f *fixture) runTask(req Request) Outcome {
	f.t.Helper()
	out, err := f.supervisor().RunTask(f.ctx(), req)
	if err != nil {
		f.t.Fatalf("run %s.%s: %v\nlog:\n%s", req.PipelineCode, req.TaskCode, err, f.logs.String())
	}
	return out
}

// openRun starts a run of the pipeline that nobody holds, as `run
// --init-only` would leave it.
func (f *fixture) openRun(pipe string) int64 {
	f.t.Helper()
	var id int64
	if err := f.tx(func(tx *wtx) error {
		var err error
		if id, err = insertRun(context.Background(), tx, newRun{PipelineID: f.b.PipelineID(pipe), Key: "manual:" + newUUID(),
			TriggerKind: TriggerManual, RunDate: "2026-02-03"}); err != nil {
			return err
		}
		return admitRun(context.Background(), tx, f.b.PipelineID(pipe), id, "", time.Now())
	}); err != nil {
		f.t.Fatal(err)
	}
	return id
}

func TestSingleTaskRefusalsAndOutcomes(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "extract", "succeed")
		f.task("P", "load", "succeed")
		f.task("P", "on_failure", "succeed")
		f.b.Dep("P", "load", "P", "extract", pipeline.Success)
		f.b.Dep("P", "on_failure", "P", "extract", pipeline.Failure)

		_, err := f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "extract"})
		wantCode(t, err, exit.RunState, "matched 0 runs")
		_, err = f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "nope"})
		wantCode(t, err, exit.Metadata, "has no active task with the code \"nope\"")

		run := f.openRun("P")
		out := f.runTask(Request{PipelineCode: "P", TaskCode: "load"})
		if out.Code != exit.Waiting || out.Status != "WAITING" || !strings.Contains(out.Detail, "extract (SUCCESS) has not ended") {
			t.Fatalf("%q", out.String())
		}
		if n := f.count("SELECT count(*) FROM AUD_TASK_RUN_LOG"); n != 0 {
			t.Fatalf("a waiting task recorded %d row(s)", n)
		}
		out = f.runTask(Request{PipelineCode: "P", TaskCode: "extract"})
		if out.String() != "extract: SUCCESS" || out.Code != exit.Success || out.RunID != run {
			t.Fatalf("%q", out.String())
		}
		out = f.runTask(Request{PipelineCode: "P", TaskCode: "extract"})
		if out.Code != exit.Success || exit.Flags(out.Detail) != fmt.Sprintf("already SUCCESS under pipeline_run_id=%d; use --force to run it again", run) {
			t.Fatalf("%q", out.String())
		}
		out = f.runTask(Request{PipelineCode: "P", TaskCode: "on_failure"})
		if out.Status != TaskSkipped || !strings.Contains(out.Detail, "can never be met") {
			t.Fatalf("%q", out.String())
		}
		out = f.runTask(Request{PipelineCode: "P", TaskCode: "extract", Force: true})
		if out.Status != TaskSuccess || fmtList(f.attempts(run, "extract")) != "[SUCCESS SUCCESS]" {
			t.Fatalf("%q %v", out.String(), f.attempts(run, "extract"))
		}
		// Another process runs load: this delivery runs nothing and exits 0 (CH02).
		q, _ := (&ledger{fixture: f, pipe: "P", run: run}).queue(f.b.TaskID("P", "load"), nil)
		f.exec("UPDATE AUD_TASK_ATTEMPTS SET STATUS = 'CLAIMED', OWNER_ID = 'elsewhere:1:1:00000000', LEASE_EXPIRES_AT = $2 WHERE ATTEMPT_ID = $1",
			q.AttemptID, f.db.TimeArg(time.Now().Add(time.Minute)))
		out = f.runTask(Request{PipelineCode: "P", TaskCode: "load", Force: true})
		if out.Code != exit.Success || out.Status != TaskInProgress || !strings.Contains(out.Detail, "already IN-PROGRESS") {
			t.Fatalf("%q", out.String())
		}
	})
}

func TestSingleTaskRunSelection(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.b.Pipeline("OTHER", "FULL")
		f.task("P", "a", "succeed")
		f.task("OTHER", "x", "succeed")
		other := f.openRun("OTHER")
		_, err := f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "a", RunID: other})
		wantCode(t, err, exit.RunState, fmt.Sprintf("matched 0 runs: pipeline P has no run with --run-id %d", other))
		active := f.openRun("P")
		f.exec(`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND, RUN_DATE) VALUES ($1, 'QUEUED', 'daily:2026-10-07', 'SCHEDULE', '2026-10-07')`,
			f.b.PipelineID("P"))
		_, err = f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "a"})
		wantCode(t, err, exit.RunState, "matched 2 runs")
		if !strings.Contains(err.Error(), fmt.Sprintf("id=%d key=manual:", active)) || !strings.Contains(err.Error(), "key=daily:2026-10-07 kind=SCHEDULE run_date=2026-10-07 status=QUEUED") {
			t.Fatalf("candidates: %v", err)
		}
		out := f.runTask(Request{PipelineCode: "P", TaskCode: "a", RunID: active})
		if out.Status != TaskSuccess || out.RunID != active {
			t.Fatalf("%q", out.String())
		}
		_, err = f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "a", RunKey: "daily:2026-10-07"})
		wantCode(t, err, exit.RunState, "is QUEUED")
	})
}

func TestForcingATaskOntoAnEndedRunReopensAndEndsItAgain(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "succeed")
		f.task("P", "b", "retry", "FAILURES", "1")
		var ended []string
		f.opts.Hooks = []Hook{{Name: "record", Run: func(_ context.Context, e Ended) error { ended = append(ended, e.Status); return nil }}}
		out := f.runPipeline("P")
		if out.Status != RunFailed {
			t.Fatalf("%q", out.String())
		}
		_, err := f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "b", RunID: out.RunID})
		wantCode(t, err, exit.RunState, "ended FAILED; use --force")
		task := f.runTask(Request{PipelineCode: "P", TaskCode: "b", RunID: out.RunID, Force: true})
		if task.Status != TaskSuccess {
			t.Fatalf("%q", task.String())
		}
		var status, pending string
		var revision int
		f.scalar(&status, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		f.scalar(&pending, "SELECT REPAIR_PENDING FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		f.scalar(&revision, "SELECT OUTPUT_REVISION FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		if status != RunSuccess || pending != "N" || revision != 2 || fmtList(ended) != "[FAILED SUCCESS]" {
			t.Fatalf("run %s pending %s revision %d hooks %v", status, pending, revision, ended)
		}
		if n := f.count("SELECT count(*) FROM AUD_RUN_INTERVENTIONS WHERE ACTION = 'REOPEN' AND PIPELINE_RUN_ID = $1", out.RunID); n != 1 {
			t.Fatalf("%d REOPEN interventions", n)
		}
		f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'CANCELLED' WHERE PIPELINE_RUN_ID = $1", out.RunID)
		_, err = f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "b", RunID: out.RunID, Force: true})
		wantCode(t, err, exit.RunState, "was CANCELLED and is never reopened")
		// Each refusal names the command or flag that does what it cannot.
		_, err = f.supervisor().Rerun(f.ctx(), Request{PipelineCode: "P", TaskCode: "b", RunID: out.RunID, Reason: "again"}, false)
		wantCode(t, err, exit.RunState, "was CANCELLED and is never reopened; start a new run with etl-craft run --pipeline_code P")
		_, err = f.supervisor().Mark(f.ctx(), MarkRequest{PipelineCode: "P", TaskCode: "b", RunID: out.RunID, Status: TaskFailed, Reason: "x"})
		wantCode(t, err, exit.RunState, "start a new run with etl-craft run --pipeline_code P, or record one with --new-run")
	})
}

func TestFaultPointsAroundAnAttempt(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "succeed")
		run := f.openRun("P")
		t.Setenv(fault.Variable, "runner.after_timeout")
		_, err := f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "a"})
		wantCode(t, err, exit.InjectedFault, "injected fault at runner.after_timeout")
		if n := f.count("SELECT count(*) FROM AUD_TASK_RUN_LOG"); n != 0 {
			t.Fatalf("runner.after_timeout left %d task row(s)", n)
		}
		for i, point := range []string{"runner.after_bind", "supervisor.after_mkdir", "attempt.after_status", "attempt.before_summary"} {
			t.Setenv(fault.Variable, point)
			out := f.runTask(Request{PipelineCode: "P", TaskCode: "a"})
			if out.Status != TaskFailed || out.Code != exit.Failure || out.Detail != "injected fault at "+point {
				t.Fatalf("%s: %q", point, out.String())
			}
			if got := f.attempts(run, "a"); len(got) != i+1 || got[i] != AttemptFailed {
				t.Fatalf("%s: attempts %v", point, got)
			}
		}
		t.Setenv(fault.Variable, "child.after_outcome")
		out := f.runTask(Request{PipelineCode: "P", TaskCode: "a"})
		if out.Status != TaskSuccess || out.Code != exit.Success {
			t.Fatalf("child.after_outcome: %q", out.String())
		}
		var count int
		f.scalar(&count, "SELECT ATTEMPT_COUNT FROM AUD_TASK_RUN_LOG")
		if count != 5 {
			t.Fatalf("attempt count %d", count)
		}
	})
}

// CH11: the run's ending and what it consumes commit together.
func TestFinalizationFaultsLeaveTheRunInProgress(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "publish", "succeed")
		up := f.runPipeline("UP")
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "succeed")
		f.b.PipelineDep("P", "UP", pipeline.Success)
		f.b.Exec("UPDATE CFG_PIPELINES SET SLA_IN_HOURS = 1")
		for _, point := range []string{"pipeline.after_insert", "pipeline.before_consumption", "pipeline.after_consumption"} {
			t.Setenv(fault.Variable, point)
			_, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "P"})
			wantCode(t, err, exit.InjectedFault, point)
		}
		t.Setenv(fault.Variable, "")
		ids := f.runIDs("P")
		if len(ids) != 1 {
			t.Fatalf("runs %v", ids)
		}
		var end, sla any
		f.scalar(&end, "SELECT END_DATE FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", ids[0])
		f.scalar(&sla, "SELECT SLA_STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", ids[0])
		if end != nil || sla != nil || len(f.consumed("P")) != 0 {
			t.Fatalf("a failed finalization left END_DATE %v SLA %v consumed %v", end, sla, f.consumed("P"))
		}
		out := f.runPipeline("P")
		var slaStatus string
		f.scalar(&slaStatus, "SELECT SLA_STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		if out.Status != RunSuccess || slaStatus != "MET" || fmtList(f.attempts(out.RunID, "a")) != "[SUCCESS]" ||
			fmtList(f.consumed("P")) != fmt.Sprintf("[%d/1]", up.RunID) {
			t.Fatalf("%q %s %v", out.String(), slaStatus, f.consumed("P"))
		}
	})
}

// CH12: an attempt's success and what its task consumes commit together: a
// fault between them records the attempt FAILED and consumes nothing; the
// next attempt, admitted again, consumes once.
func TestAttemptConsumptionFaults(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "publish", "succeed")
		up := f.runPipeline("UP")
		f.b.Pipeline("DOWN", "FULL")
		f.task("DOWN", "load", "succeed")
		f.b.Dep("DOWN", "load", "UP", "publish", pipeline.Success)
		run := f.openRun("DOWN")
		for _, point := range []string{"runner.before_consumption", "attempt.after_consumption"} {
			t.Setenv(fault.Variable, point)
			out := f.runTask(Request{PipelineCode: "DOWN", TaskCode: "load"})
			if out.Status != TaskFailed || out.Detail != "injected fault at "+point || len(f.consumed("DOWN")) != 0 {
				t.Fatalf("%s: %q %v", point, out.String(), f.consumed("DOWN"))
			}
		}
		t.Setenv(fault.Variable, "")
		out := f.runTask(Request{PipelineCode: "DOWN", TaskCode: "load"})
		if out.Status != TaskSuccess || fmtList(f.attempts(run, "load")) != "[FAILED FAILED SUCCESS]" ||
			fmtList(f.consumed("DOWN")) != fmt.Sprintf("[%d/1]", up.RunID) {
			t.Fatalf("%q %v %v", out.String(), f.attempts(run, "load"), f.consumed("DOWN"))
		}
	})
}

func TestTwoSupervisorsOfOnePipeline(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "hold", "block")
		type returned struct {
			out Outcome
			err error
		}
		var barrier sync.WaitGroup
		barrier.Add(2)
		results := make(chan returned, 2)
		for range 2 {
			go func() {
				barrier.Done()
				barrier.Wait()
				out, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "P"})
				results <- returned{out, err}
			}()
		}
		// The supervisor holds its task until the other caller has returned.
		loser := <-results
		f.h.waitStarted(t, "hold")
		close(f.h.gate("hold"))
		winner := <-results
		if winner.err != nil || winner.out.Status != RunSuccess {
			t.Fatalf("the supervisor: %q %v", winner.out.String(), winner.err)
		}
		// The loser either found the winner's run supervised, or lost the
		// admission of its own QUEUED run, which stays QUEUED (CH06).
		refused := exit.CodeOf(loser.err) == exit.RunState && (strings.Contains(loser.err.Error(), "is supervised by") ||
			strings.Contains(loser.err.Error(), "another process started pipeline_run_id="+itoa(int(winner.out.RunID))))
		queued := f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'QUEUED'")
		if !refused || len(f.runIDs("P")) != 1+queued || f.count("SELECT count(*) FROM AUD_TASK_ATTEMPTS") != 1 {
			t.Fatalf("the other: %v, runs %v", loser.err, f.runIDs("P"))
		}
		if queued == 1 {
			if again := f.runPipeline("P"); again.Status != RunSuccess || again.RunID == winner.out.RunID {
				t.Fatalf("the run left QUEUED: %q", again.String())
			}
		}
	})
}
