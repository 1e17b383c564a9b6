package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// upAndDown registers pipeline UP with its task publish, and pipeline DOWN
// with its task load (with the behaviour), which depends on UP with a
// SUCCESS dependency: on UP.publish when onTask, else a pipeline dependency.
func (f *fixture) upAndDown(load string, onTask bool) {
	f.t.Helper()
	f.b.Pipeline("UP", "FULL")
	f.task("UP", "publish", "succeed")
	f.b.Pipeline("DOWN", "FULL")
	f.task("DOWN", "load", load)
	if onTask {
		f.b.Dep("DOWN", "load", "UP", "publish", pipeline.Success)
	} else {
		f.b.PipelineDep("DOWN", "UP", pipeline.Success)
	}
}

// setParam changes one of a task's parameters.
func (f *fixture) setParam(pipe, task, name, value string) {
	f.t.Helper()
	f.b.Exec("UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = $1 WHERE TASK_ID = $2 AND PARAMETER_NAME = $3",
		value, f.b.TaskID(pipe, task), name)
}

// runningUpstream records a run of the pipeline that is IN-PROGRESS since
// start, with the task IN-PROGRESS under it, and returns the run's id.
func (f *fixture) runningUpstream(pipe, task string, start time.Time) int64 {
	f.t.Helper()
	key := "manual:" + newUUID()
	f.exec(`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND, RUN_DATE, START_DATE)
		VALUES ($1, 'IN-PROGRESS', $2, 'MANUAL', '2026-03-01', $3)`, f.b.PipelineID(pipe), key, f.db.TimeArg(start))
	var id int64
	f.scalar(&id, "SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG WHERE RUN_KEY = $1", key)
	f.exec(`INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, START_DATE, STATUS, ATTEMPT_COUNT, ROWS_WRITTEN)
		VALUES ($1, $2, $3, 'IN-PROGRESS', 1, 5)`, f.b.TaskID(pipe, task), id, f.db.TimeArg(start))
	return id
}

// finishUpstream ends a run recorded by runningUpstream SUCCESS.
func (f *fixture) finishUpstream(runID int64) {
	f.t.Helper()
	now := f.db.TimeArg(time.Now())
	f.exec("UPDATE AUD_TASK_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = $1 WHERE PIPELINE_RUN_ID = $2", now, runID)
	f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = $1 WHERE PIPELINE_RUN_ID = $2", now, runID)
}

// wait is a run's AUD_GATE_WAITS row: "first|next|looks|until", with next
// "-" once settled.
func (f *fixture) wait(runID, taskID int64) string {
	f.t.Helper()
	var first, next, until engine.Time
	var looks int
	if err := f.db.QueryRowContext(context.Background(), `SELECT FIRST_CHECK_AT, NEXT_CHECK_AT, LOOKS, WAIT_UNTIL FROM AUD_GATE_WAITS
		WHERE PIPELINE_RUN_ID = $1 AND COALESCE(TASK_ID, 0) = $2`, runID, taskID).Scan(&first, &next, &looks, &until); err != nil {
		f.t.Fatalf("the gate wait of pipeline_run_id=%d: %v", runID, err)
	}
	at := func(t engine.Time) string {
		if !t.Valid {
			return "-"
		}
		return t.Time.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s|%s|%d|%s", at(first), at(next), looks, at(until))
}

// Every dependency type between pipelines: a new run is admitted or ended
// SKIPPED with the reason, and its decision names the upstream run and its
// revision. An upstream run is consumed once.
func TestEachPipelineDependencyTypeAdmitsOrSkipsANewRun(t *testing.T) {
	t.Parallel()
	type step struct {
		behave, rows string // the upstream task's
		admitted     bool
		why          string
	}
	cases := map[string][]step{
		pipeline.Success: {{"fail", "7", false, "ended FAILED, which does not satisfy a SUCCESS dependency"}, {"succeed", "7", true, ""}},
		pipeline.Failure: {{"succeed", "7", false, "ended SUCCESS, which does not satisfy a FAILURE dependency"}, {"fail", "7", true, ""}},
		pipeline.Always:  {{"fail", "7", true, ""}},
		pipeline.HasData: {{"succeed", "0", false, "ended SUCCESS with no rows written, which does not satisfy a HAS_DATA dependency"},
			{"succeed", "3", true, ""}},
	}
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		hooked := 0
		f.opts.Hooks = []Hook{{Name: "count", Run: func(context.Context, Ended) error { hooked++; return nil }}}
		for typ, steps := range cases {
			up, down := "UP_"+typ, "DOWN_"+typ
			f.b.Pipeline(up, "FULL")
			f.task(up, "publish", "succeed", "ROWS", "7")
			f.b.Pipeline(down, "FULL")
			f.task(down, "load", "succeed")
			f.b.PipelineDep(down, up, typ)
			label := fmt.Sprintf("upstream pipeline %s (%s)", up, typ)

			out := f.runPipeline(down)
			if out.Status != RunSkipped || out.Code != exit.Success || out.Detail != label+" has no finished run" {
				t.Fatalf("%s before any upstream run: %q", typ, out.String())
			}
			if len(f.statuses(out.RunID)) != 0 || fmtList(f.decisions(out.RunID)) != "[UNSATISFIED -/- run]" {
				t.Fatalf("%s: tasks %v decisions %v", typ, f.statuses(out.RunID), f.decisions(out.RunID))
			}
			for _, st := range steps {
				f.setBehaviour(up, "publish", st.behave)
				f.setParam(up, "publish", "ROWS", st.rows)
				u := f.runPipeline(up)
				out := f.runPipeline(down)
				if st.admitted {
					if out.Status != RunSuccess || fmtList(f.decisions(out.RunID)) != fmt.Sprintf("[SATISFIED %d/1 run]", u.RunID) {
						t.Fatalf("%s after %s: %q %v", typ, st.behave, out.String(), f.decisions(out.RunID))
					}
					if got := f.consumed(down); got[len(got)-1] != fmt.Sprintf("%d/1", u.RunID) {
						t.Fatalf("%s consumed %v", typ, got)
					}
					continue
				}
				if out.Status != RunSkipped || out.Detail != fmt.Sprintf("%s last finished run %d %s", label, u.RunID, st.why) ||
					fmtList(f.decisions(out.RunID)) != fmt.Sprintf("[UNSATISFIED %d/- run]", u.RunID) {
					t.Fatalf("%s after %s: %q %v", typ, st.behave, out.String(), f.decisions(out.RunID))
				}
			}
			// The upstream run is consumed once.
			again := f.runPipeline(down)
			if again.Status != RunSkipped || !strings.Contains(again.Detail, "which was already consumed") || len(f.consumed(down)) != 1 {
				t.Fatalf("%s again: %q %v", typ, again.String(), f.consumed(down))
			}
		}
		if runs := f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); hooked != runs {
			t.Fatalf("the after-run hooks ran %d times for %d runs", hooked, runs)
		}
	})
}

// A repaired upstream run (REOPEN, then success: revision 2) is new output
// for pipeline and task dependencies that consume repairs, and not for those
// that do not.
func TestARepairedUpstreamIsConsumedAgainOnlyWithConsumeRepairs(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "publish", "succeed")
		for _, consume := range []string{"Y", "N"} {
			f.b.Pipeline("PIPE_"+consume, "FULL")
			f.task("PIPE_"+consume, "load", "succeed")
			id := f.b.PipelineDep("PIPE_"+consume, "UP", pipeline.Success)
			f.b.Exec("UPDATE CFG_PIPELINE_DEPENDENCY SET CONSUME_REPAIRS = $1 WHERE PIPELINE_DEPENDENCY_ID = $2", consume, id)
			f.b.Pipeline("TASK_"+consume, "FULL")
			f.task("TASK_"+consume, "load", "succeed")
			id = f.b.Dep("TASK_"+consume, "load", "UP", "publish", pipeline.Success)
			f.b.Exec("UPDATE CFG_TASK_DEPENDENCY SET CONSUME_REPAIRS = $1 WHERE TASK_DEPENDENCY_ID = $2", consume, id)
		}
		up := f.runPipeline("UP")
		downs := []string{"PIPE_Y", "PIPE_N", "TASK_Y", "TASK_N"}
		for _, d := range downs {
			if out := f.runPipeline(d); out.Status != RunSuccess {
				t.Fatalf("%s: %q", d, out.String())
			}
		}
		repair, err := f.supervisor().Rerun(f.ctx(), Request{PipelineCode: "UP", TaskCode: "publish", RunID: up.RunID, Reason: "the feed was late"}, false)
		if err != nil || repair.Status != RunSuccess || repair.RunID != up.RunID {
			t.Fatalf("the repair: %q %v", repair.String(), err)
		}
		var revision int
		f.scalar(&revision, "SELECT OUTPUT_REVISION FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", up.RunID)
		if revision != 2 || fmtList(f.interventions(up.RunID)) !=
			"[REOPEN - SUCCESS>IN-PROGRESS the feed was late by tester@host HUMAN RERUN publish SUCCESS>IN-PROGRESS the feed was late by tester@host HUMAN]" {
			t.Fatalf("revision %d, interventions %v", revision, f.interventions(up.RunID))
		}
		for _, d := range downs {
			out := f.runPipeline(d)
			unit := "run"
			if strings.HasPrefix(d, "TASK") {
				unit = "attempt"
			}
			want := map[bool]string{
				true:  fmt.Sprintf("SUCCESS [%d/1 %d/2] [SATISFIED %d/2 %s]", up.RunID, up.RunID, up.RunID, unit),
				false: fmt.Sprintf("SKIPPED [%d/1] [UNSATISFIED %d/- run]", up.RunID, up.RunID),
			}[strings.HasSuffix(d, "_Y")]
			if got := fmt.Sprintf("%s %v %v", out.Status, f.consumed(d), f.decisions(out.RunID)); got != want {
				t.Errorf("%s: %s, want %s (%s)", d, got, want, out.Detail)
			}
			if strings.HasSuffix(d, "_N") && !strings.Contains(out.Detail, "CONSUME_REPAIRS='N'") &&
				!strings.Contains(f.nullString("SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID).String, "CONSUME_REPAIRS='N'") {
				t.Errorf("%s: %q", d, out.String())
			}
		}
	})
}

// A downstream consumes the upstream run it was admitted with, even when the
// upstream finishes a newer run meanwhile; the newer one is left for its next
// run.
func TestARunConsumesWhatItWasAdmittedWith(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.upAndDown("block", false)
		first := f.runPipeline("UP")
		done := make(chan Outcome)
		go func() { done <- f.runPipeline("DOWN") }()
		f.h.waitStarted(t, "load")
		second := f.runPipeline("UP")
		close(f.h.gate("load"))
		if out := <-done; out.Status != RunSuccess || fmtList(f.consumed("DOWN")) != fmt.Sprintf("[%d/1]", first.RunID) {
			t.Fatalf("%q consumed %v", out.String(), f.consumed("DOWN"))
		}
		if out := f.runPipeline("DOWN"); out.Status != RunSuccess ||
			fmtList(f.consumed("DOWN")) != fmt.Sprintf("[%d/1 %d/1]", first.RunID, second.RunID) {
			t.Fatalf("%q consumed %v", out.String(), f.consumed("DOWN"))
		}
	})
}

// A pipeline gate waiting for a running upstream keeps its budget in
// AUD_GATE_WAITS: a restarted supervisor goes on with the same first check,
// looks and deadline, and once the deadline has passed judges at once. A
// gate that sees the upstream finish while it waits admits the run.
func TestAGateWaitSurvivesARestartWithItsBudget(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.opts.GateWait = time.Hour
		f.upAndDown("succeed", false)
		t0 := time.Now().UTC().Truncate(time.Second)
		upRun := f.runningUpstream("UP", "publish", t0)
		killed := errors.New("the process was stopped")
		stopped := func(at time.Time) *Supervisor {
			return f.supervisorWith(func(o *Options) { o.Clock = newTestClock(at, func(int) error { return killed }) })
		}
		out, err := stopped(t0).RunPipeline(f.ctx(), Request{PipelineCode: "DOWN"})
		if err != nil || out.Status != RunQueued || out.Code != exit.Incomplete {
			t.Fatalf("%q %v", out.String(), err)
		}
		stamp := func(d time.Duration) string { return t0.Add(d).Format(time.RFC3339) }
		// The first look: 70 % of the default 300 s run length.
		if got := f.wait(out.RunID, 0); got != stamp(0)+"|"+stamp(210*time.Second)+"|0|"+stamp(time.Hour) {
			t.Fatalf("wait %s", got)
		}
		// Restarted after that look was due: the same budget, one more look.
		again, err := stopped(t0.Add(5*time.Minute)).RunPipeline(f.ctx(), Request{PipelineCode: "DOWN"})
		if err != nil || again.RunID != out.RunID || again.Status != RunQueued {
			t.Fatalf("%q %v", again.String(), err)
		}
		if got := f.wait(out.RunID, 0); got != stamp(0)+"|"+stamp(5*time.Minute+time.Second)+"|1|"+stamp(time.Hour) {
			t.Fatalf("wait after a restart %s", got)
		}
		// Restarted after the deadline: judged at once, without waiting.
		late := stopped(t0.Add(61 * time.Minute))
		last, err := late.RunPipeline(f.ctx(), Request{PipelineCode: "DOWN"})
		if err != nil || last.RunID != out.RunID || last.Status != RunSkipped ||
			last.Detail != fmt.Sprintf("upstream pipeline UP (SUCCESS) has no finished run; run %d is still IN-PROGRESS", upRun) {
			t.Fatalf("%q %v", last.String(), err)
		}
		if got := f.wait(out.RunID, 0); got != stamp(0)+"|-|2|"+stamp(time.Hour) {
			t.Fatalf("settled wait %s", got)
		}

		// A gate that waits once and then sees the upstream finished.
		clock := newTestClock(time.Now(), func(int) error { f.finishUpstream(upRun); return nil })
		ok, err := f.supervisorWith(func(o *Options) { o.Clock = clock }).RunPipeline(f.ctx(), Request{PipelineCode: "DOWN"})
		if err != nil || ok.Status != RunSuccess || clock.sleeps != 1 || fmtList(f.decisions(ok.RunID)) != fmt.Sprintf("[SATISFIED %d/1 run]", upRun) {
			t.Fatalf("%q %v, %d sleeps, decisions %v", ok.String(), err, clock.sleeps, f.decisions(ok.RunID))
		}
		if !strings.Contains(f.wait(ok.RunID, 0), "|-|1|") {
			t.Fatalf("wait %s", f.wait(ok.RunID, 0))
		}
	})
}

// A task whose gate waits for a running upstream holds no worker: with one
// worker, the pipeline's other task runs meanwhile, and the waiting task
// gets no attempt until its gate passes.
func TestAWaitingTaskGateHoldsNoWorker(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.opts.MaxParallel, f.opts.GateWait = 1, time.Hour
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "publish", "succeed")
		f.b.Pipeline("DOWN", "FULL")
		f.task("DOWN", "a_gated", "succeed")
		f.task("DOWN", "b_free", "succeed")
		f.b.Dep("DOWN", "a_gated", "UP", "publish", pipeline.Success)
		upRun := f.runningUpstream("UP", "publish", time.Now())
		attemptsWhileWaiting := -1
		clock := newTestClock(time.Now(), func(n int) error {
			if n == 1 {
				deadline := time.Now().Add(20 * time.Second)
				for f.count("SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE STATUS = 'SUCCESS' AND TASK_ID = $1", f.b.TaskID("DOWN", "b_free")) == 0 {
					if time.Now().After(deadline) {
						return errors.New("b_free never ran")
					}
					time.Sleep(10 * time.Millisecond)
				}
				attemptsWhileWaiting = f.count(`SELECT count(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
					WHERE t.TASK_ID = $1`, f.b.TaskID("DOWN", "a_gated"))
				f.finishUpstream(upRun)
			}
			return nil
		})
		out, err := f.supervisorWith(func(o *Options) { o.Clock = clock }).RunPipeline(f.ctx(), Request{PipelineCode: "DOWN"})
		if err != nil || out.Status != RunSuccess || attemptsWhileWaiting != 0 || f.h.peak != 1 {
			t.Fatalf("%q %v; %d attempt(s) while waiting, %d at once", out.String(), err, attemptsWhileWaiting, f.h.peak)
		}
		if got := fmtList(f.decisions(out.RunID)); got != fmt.Sprintf("[SATISFIED %d/1 attempt]", upRun) {
			t.Fatalf("decisions %s", got)
		}
		if got := f.wait(out.RunID, f.b.TaskID("DOWN", "a_gated")); !strings.Contains(got, "|-|1|") {
			t.Fatalf("wait %s", got)
		}
		if got := fmtList(f.consumed("DOWN")); got != fmt.Sprintf("[%d/1]", upRun) {
			t.Fatalf("consumed %s", got)
		}
	})
}

// A single task's gate: a definitive "no" records it SKIPPED with the
// decision; a "no" that is not definitive (the upstream is still running)
// records nothing and exits 23; a "yes" runs it, recording the decision for
// its attempt, which consumes it when it succeeds.
func TestASingleTasksGate(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.upAndDown("succeed", true)
		first := f.openRun("DOWN")
		out := f.runTask(Request{PipelineCode: "DOWN", TaskCode: "load"})
		if out.Status != TaskSkipped || out.Detail != "not run: its dependencies can never be met: upstream task UP.publish (SUCCESS) has no finished run" ||
			fmtList(f.decisions(first)) != "[UNSATISFIED -/- run]" {
			t.Fatalf("%q %v", out.String(), f.decisions(first))
		}
		if ended := f.runPipeline("DOWN"); ended.RunID != first || ended.Status != RunSkipped {
			t.Fatalf("%q", ended.String())
		}
		upRun := f.runningUpstream("UP", "publish", time.Now())
		second := f.openRun("DOWN")
		out = f.runTask(Request{PipelineCode: "DOWN", TaskCode: "load"})
		if out.Status != Waiting || out.Code != exit.Waiting || !strings.Contains(out.Detail, "is still IN-PROGRESS") ||
			len(f.statuses(second)) != 0 || len(f.decisions(second)) != 0 {
			t.Fatalf("%q %v %v", out.String(), f.statuses(second), f.decisions(second))
		}
		f.finishUpstream(upRun)
		out = f.runTask(Request{PipelineCode: "DOWN", TaskCode: "load"})
		if out.Status != TaskSuccess || fmtList(f.decisions(second)) != fmt.Sprintf("[SATISFIED %d/1 attempt]", upRun) ||
			fmtList(f.consumed("DOWN")) != fmt.Sprintf("[%d/1]", upRun) {
			t.Fatalf("%q %v %v", out.String(), f.decisions(second), f.consumed("DOWN"))
		}
	})
}

// Dependency_gates warn and off let unsatisfied gates through, recording
// BYPASSED decisions and a GATE_BYPASS for the run and the task; nothing is
// consumed, so an enforced gate still judges that upstream as new.
func TestDependencyGatesWarnAndOffBypassAndConsumeNothing(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "publish", "fail")
		f.b.Pipeline("DOWN", "FULL")
		f.task("DOWN", "load", "succeed")
		f.b.PipelineDep("DOWN", "UP", pipeline.Success)
		f.b.Dep("DOWN", "load", "UP", "publish", pipeline.Success)
		up := f.runPipeline("UP")
		why := map[gate.Policy]string{
			gate.Warn: fmt.Sprintf("last finished run %d ended FAILED, which does not satisfy a SUCCESS dependency", up.RunID),
			gate.Off:  "was not checked: Dependency_gates is off",
		}
		for _, policy := range []gate.Policy{gate.Warn, gate.Off} {
			out, err := f.supervisorWith(func(o *Options) { o.GatePolicy = policy }).RunPipeline(f.ctx(), Request{PipelineCode: "DOWN"})
			if err != nil || out.Status != RunSuccess || !strings.Contains(out.Detail, "dependency gate bypassed") {
				t.Fatalf("%s: %q %v", policy, out.String(), err)
			}
			runWhy := "upstream pipeline UP (SUCCESS) " + why[policy]
			got := f.interventions(out.RunID)
			if len(got) != 2 || got[0] != "GATE_BYPASS - ->- dependency gate bypassed: "+runWhy+" by tester@host HUMAN" ||
				!strings.HasPrefix(got[1], "GATE_BYPASS load ->- dependency gate bypassed: upstream task UP.publish (SUCCESS) ") {
				t.Fatalf("%s: interventions %v", policy, got)
			}
			for _, d := range f.decisions(out.RunID) {
				if !strings.HasPrefix(d, "BYPASSED ") {
					t.Fatalf("%s: decisions %v", policy, f.decisions(out.RunID))
				}
			}
			if len(f.consumed("DOWN")) != 0 {
				t.Fatalf("%s: consumed %v", policy, f.consumed("DOWN"))
			}
		}
		if out := f.runPipeline("DOWN"); out.Status != RunSkipped {
			t.Fatalf("enforced: %q", out.String())
		}
	})
}

// Gate decisions commit with the admission: an injected fault after the
// decisions leaves the run QUEUED with none; the next run admits (or skips)
// that same run and records its decisions once.
func TestGateDecisionsRollBackWithTheAdmission(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "publish", "succeed")
		f.b.Pipeline("NEVER", "FULL")
		f.task("NEVER", "x", "succeed")
		for _, c := range []struct{ down, up string }{{"DOWN", "UP"}, {"BLOCKED", "NEVER"}} {
			f.b.Pipeline(c.down, "FULL")
			f.task(c.down, "load", "succeed")
			f.b.PipelineDep(c.down, c.up, pipeline.Success)
		}
		f.runPipeline("UP")
		for _, c := range []struct{ down, status string }{{"DOWN", RunSuccess}, {"BLOCKED", RunSkipped}} {
			t.Setenv(fault.Variable, "pipeline.after_insert")
			_, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: c.down})
			wantCode(t, err, exit.InjectedFault, "pipeline.after_insert")
			ids := f.runIDs(c.down)
			var id int64
			fmt.Sscan(ids[0], &id)
			if len(ids) != 1 || f.runStatus(id) != RunQueued || len(f.decisions(id)) != 0 {
				t.Fatalf("%s after the fault: runs %v, decisions %v", c.down, ids, f.decisions(id))
			}
			t.Setenv(fault.Variable, "")
			out := f.runPipeline(c.down)
			if out.RunID != id || out.Status != c.status || len(f.decisions(id)) != 1 {
				t.Fatalf("%s: %q %v", c.down, out.String(), f.decisions(id))
			}
		}
	})
}

// Three callers resume one QUEUED run whose upstream is being repaired and
// meet while its gate waits; once the repair is published, one of them
// admits and supervises the run, which consumes the repaired revision, and
// the other two stop with a run-state error.
func TestThreeCallersOfOneWaitingRun(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.opts.GateWait = time.Hour
		f.upAndDown("succeed", false)
		up := f.runPipeline("UP")
		rows := int64(5)
		if _, err := f.supervisor().Mark(f.ctx(), MarkRequest{PipelineCode: "UP", TaskCode: "publish", RunID: up.RunID,
			Status: TaskSuccess, Rows: &rows, Reason: "recounted"}); err != nil {
			t.Fatal(err)
		}
		stop := errors.New("stopped")
		queued, err := f.supervisorWith(func(o *Options) { o.Clock = newTestClock(time.Now(), func(int) error { return stop }) }).
			RunPipeline(f.ctx(), Request{PipelineCode: "DOWN"})
		if err != nil || queued.Status != RunQueued {
			t.Fatalf("%q %v", queued.String(), err)
		}
		arrived, release := make(chan struct{}, 3), make(chan struct{})
		type returned struct {
			out Outcome
			err error
		}
		results := make(chan returned, 3)
		for range 3 {
			clock := newTestClock(time.Now(), func(int) error { arrived <- struct{}{}; <-release; return nil })
			go func() {
				out, err := f.supervisorWith(func(o *Options) { o.Clock = clock }).RunPipeline(f.ctx(), Request{PipelineCode: "DOWN"})
				results <- returned{out, err}
			}()
		}
		for range 3 {
			<-arrived
		}
		if repaired := f.runPipeline("UP"); repaired.RunID != up.RunID || repaired.Status != RunSuccess {
			t.Fatalf("the repair: %q", repaired.String())
		}
		close(release)
		won, lost := 0, 0
		for range 3 {
			r := <-results
			switch {
			case r.err == nil && r.out.Status == RunSuccess && r.out.RunID == queued.RunID:
				won++
			case exit.CodeOf(r.err) == exit.RunState && strings.Contains(r.err.Error(), "another process started pipeline_run_id="+itoa(int(queued.RunID))):
				lost++
			default:
				t.Errorf("a caller: %q %v", r.out.String(), r.err)
			}
		}
		if won != 1 || lost != 2 || len(f.runIDs("DOWN")) != 1 || fmtList(f.attempts(queued.RunID, "load")) != "[SUCCESS]" ||
			fmtList(f.consumed("DOWN")) != fmt.Sprintf("[%d/2]", up.RunID) {
			t.Fatalf("won %d lost %d, runs %v, attempts %v, consumed %v", won, lost, f.runIDs("DOWN"),
				f.attempts(queued.RunID, "load"), f.consumed("DOWN"))
		}
	})
}

// P05: while a new run's gate waits, another process starts a run of the
// pipeline, and the upstream fails: the waiting run is neither admitted nor
// skipped, it stays QUEUED, and the other run is left as it is.
func TestAnotherRunStartedWhileTheGateWaited(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.opts.GateWait = time.Hour
		f.upAndDown("succeed", false)
		upRun := f.runningUpstream("UP", "publish", time.Now())
		var other int64
		clock := newTestClock(time.Now(), func(n int) error {
			if n == 1 {
				other = f.openRun("DOWN")
				f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'FAILED', END_DATE = $1 WHERE PIPELINE_RUN_ID = $2", f.db.TimeArg(time.Now()), upRun)
			}
			return nil
		})
		_, err := f.supervisorWith(func(o *Options) { o.Clock = clock }).RunPipeline(f.ctx(), Request{PipelineCode: "DOWN"})
		wantCode(t, err, exit.RunState, fmt.Sprintf("another process started pipeline_run_id=%d", other))
		if f.runStatus(other) != RunInProgress || f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'QUEUED'") != 1 ||
			f.count("SELECT count(*) FROM AUD_GATE_DECISIONS") != 0 {
			t.Fatalf("the other run is %s; runs %v", f.runStatus(other), f.runIDs("DOWN"))
		}
	})
}

// G15, the attempt claim: a task's gate decisions commit with the attempt
// they admit. A failure recording the admission leaves no decision, no
// attempt and no task row; the next delivery admits the task once.
func TestGateDecisionsRollBackWithTheAttemptClaim(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.upAndDown("succeed", true)
		up := f.runPipeline("UP")
		run := f.openRun("DOWN")

		t.Setenv(fault.Variable, "runner.after_decisions")
		_, err := f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "DOWN", TaskCode: "load"})
		wantCode(t, err, exit.InjectedFault, "runner.after_decisions")
		if d, a, rows := f.decisions(run), f.attempts(run, "load"), f.statuses(run); len(d) != 0 || len(a) != 0 || len(rows) != 0 {
			t.Fatalf("after the fault: decisions %v, attempts %v, task rows %v", d, a, rows)
		}

		t.Setenv(fault.Variable, "")
		out := f.runTask(Request{PipelineCode: "DOWN", TaskCode: "load"})
		want := fmt.Sprintf("[SATISFIED %d/1 attempt]", up.RunID)
		if out.Status != TaskSuccess || fmtList(f.decisions(run)) != want || fmtList(f.attempts(run, "load")) != "[SUCCESS]" {
			t.Fatalf("%q: decisions %v, attempts %v", out.String(), f.decisions(run), f.attempts(run, "load"))
		}
	})
}
