package run

import (
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// pause records an open pause of the pipeline.
func (f *fixture) pause(pipe string) {
	f.exec(`INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_BY, REASON, PAUSED_BY_KIND) VALUES ($1, 'ops@host', 'warehouse upgrade', 'HUMAN')`,
		f.b.PipelineID(pipe))
}

func TestAPausedPipelineStartsNothing(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "succeed")
		f.pause("P")
		for _, task := range []string{"", "a"} {
			out, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "P"})
			if task != "" {
				out, err = f.supervisor().RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: task})
			}
			if err != nil || out.Status != Paused || out.Code != exit.Success ||
				!strings.Contains(out.String(), "paused by ops@host (HUMAN) since ") ||
				!strings.HasSuffix(exit.Flags(out.String()), ": warehouse upgrade; nothing was started: etl-craft resume --pipeline_code P lets it run again") {
				t.Fatalf("%q %v", out.String(), err)
			}
		}
		f.wantRuns(0)
	})
}

func TestPausingOrEndingARunWhileItRuns(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "block")
		f.task("P", "b", "succeed")
		f.b.Dep("P", "b", "P", "a", pipeline.Success)
		done := make(chan Outcome)
		go func() { done <- f.runPipeline("P") }()
		f.h.waitStarted(t, "a")
		f.pause("P")
		for !strings.Contains(f.logs.String(), "the pipeline was paused") {
			time.Sleep(10 * time.Millisecond)
		}
		close(f.h.gate("a"))
		out := <-done
		if out.Code != exit.Incomplete || out.Status != RunInProgress || !strings.Contains(out.Detail, "the pipeline was paused by ops@host") {
			t.Fatalf("%q", out.String())
		}
		if got := f.statuses(out.RunID); got["a"] != TaskSuccess || got["b"] != "" {
			t.Fatalf("paused mid-run: %v", got)
		}
		f.exec("UPDATE AUD_PIPELINE_PAUSES SET RESUMED_AT = $1, RESUMED_BY = 'ops@host'", f.db.TimeArg(time.Now()))

		f.b.Pipeline("Q", "FULL")
		f.task("Q", "slow", "sleep")
		go func() { done <- f.runPipeline("Q") }()
		f.h.waitStarted(t, "slow")
		f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'CANCELLED', END_DATE = $1, ENDED_BY = 'ops@host', ENDED_BY_KIND = 'HUMAN' WHERE STATUS = 'IN-PROGRESS' AND PIPELINE_ID = $2",
			f.db.TimeArg(time.Now()), f.b.PipelineID("Q"))
		out = <-done
		if out.Status != RunCancelled || out.Code != exit.Failure {
			t.Fatalf("%q", out.String())
		}
		if got := f.attempts(out.RunID, "slow"); fmtList(got) != "[FAILED]" {
			t.Fatalf("attempts %v", got)
		}
		if again := f.runPipeline("P"); again.RunID != out.RunID-1 || again.Status != RunSuccess {
			t.Fatalf("the resumed run: %q", again.String())
		}
	})
}

func TestForceRunsEveryTaskOnceItsUpstreamsFinished(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "extract", "succeed")
		f.task("P", "stalls", "stall")
		f.task("P", "on_failure", "succeed")
		f.b.Dep("P", "stalls", "P", "extract", pipeline.Success)
		f.b.Dep("P", "on_failure", "P", "extract", pipeline.Failure)
		out := f.interruptWhen("P", func() bool {
			return f.count("SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = 'RUNNING' AND ATTEMPT_NUMBER = 1 AND TASK_RUN_ID IN (SELECT TASK_RUN_ID FROM AUD_TASK_RUN_LOG WHERE TASK_ID = $1)", f.b.TaskID("P", "stalls")) == 1
		})
		forced, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "P", Force: true})
		if err != nil || forced.RunID != out.RunID || forced.Status != RunSuccess {
			t.Fatalf("%q %v", forced.String(), err)
		}
		for task, want := range map[string]string{"extract": "[SUCCESS SUCCESS]", "stalls": "[FAILED SUCCESS]", "on_failure": "[SUCCESS]"} {
			if got := fmtList(f.attempts(out.RunID, task)); got != want {
				t.Errorf("%s: %s, want %s", task, got, want)
			}
		}
	})
}

func TestRunSelectionOfWholePipelineRuns(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.b.Pipeline("OTHER", "FULL")
		f.task("P", "a", "succeed")
		out, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "P", RunKey: "daily:2026-10-07"})
		if err != nil || out.Status != RunSuccess {
			t.Fatalf("%q %v", out.String(), err)
		}
		var key, kind string
		f.scalar(&key, "SELECT RUN_KEY FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		f.scalar(&kind, "SELECT TRIGGER_KIND FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		if key != "daily:2026-10-07" || kind != TriggerManual {
			t.Fatalf("key %s kind %s", key, kind)
		}
		_, err = f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "P", RunKey: "daily:2026-10-07"})
		wantCode(t, err, exit.RunState, "ended SUCCESS; it is not started again")
		other := f.openRun("OTHER")
		_, err = f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "P", RunID: other})
		wantCode(t, err, exit.RunState, "matched 0 runs")
		f.wantRuns(2)
	})
}

func TestCrossPipelineTaskDependenciesJudgeTheUpstreamsLatestFinishedRun(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.upAndDown("succeed", true)
		out := f.runPipeline("DOWN")
		msg := f.nullString("SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		if out.Status != RunSkipped || !strings.Contains(msg.String, "upstream task UP.publish (SUCCESS) has no finished run") {
			t.Fatalf("%q %q", out.String(), msg.String)
		}
		f.runPipeline("UP")
		if out := f.runPipeline("DOWN"); out.Status != RunSuccess {
			t.Fatalf("%q", out.String())
		}
		f.b.Exec("UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = 'fail' WHERE TASK_ID = $1", f.b.TaskID("UP", "publish"))
		up := f.runPipeline("UP")
		out = f.runPipeline("DOWN")
		msg = f.nullString("SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		if out.Status != RunSkipped || !strings.Contains(msg.String, "upstream task UP.publish (SUCCESS) last finished run "+itoa(int(up.RunID))+" (task_run_id=") ||
			!strings.HasSuffix(msg.String, " ended FAILED, which does not satisfy a SUCCESS dependency") {
			t.Fatalf("%q %q", out.String(), msg.String)
		}
	})
}
