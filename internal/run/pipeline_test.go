package run

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestDependencyTypesAgainstEachUpstreamOutcome(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "ok", "succeed")
		f.task("P", "zero", "succeed", "ROWS", "0")
		f.task("P", "bad", "fail")
		f.task("P", "skp", "succeed")
		f.b.Dep("P", "skp", "P", "ok", pipeline.Failure) // ok succeeds, so skp never runs
		want := map[string]string{}
		for _, typ := range []string{pipeline.Success, pipeline.Failure, pipeline.Always, pipeline.HasData} {
			for _, up := range []string{"ok", "zero", "bad", "skp"} {
				code := strings.ToLower(typ) + "_on_" + up
				f.task("P", code, "succeed")
				f.b.Dep("P", code, "P", up, typ)
				runs := map[string]map[string]bool{
					pipeline.Success: {"ok": true, "zero": true},
					pipeline.Failure: {"bad": true},
					pipeline.Always:  {"ok": true, "zero": true, "bad": true, "skp": true},
					pipeline.HasData: {"ok": true},
				}[typ][up]
				want[code] = TaskSkipped
				if runs {
					want[code] = TaskSuccess
				}
			}
		}
		out := f.runPipeline("P")
		if out.Status != RunFailed || out.Code != exit.Failure {
			t.Fatalf("outcome %+v", out)
		}
		got := f.statuses(out.RunID)
		for code, w := range want {
			if got[code] != w {
				t.Errorf("%s: %s, want %s", code, got[code], w)
			}
		}
		if got["skp"] != TaskSkipped || got["bad"] != TaskFailed {
			t.Errorf("upstreams: %v", got)
		}
		msg := f.nullString(`SELECT t.ERROR_MESSAGE FROM AUD_TASK_RUN_LOG t JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID
			WHERE c.TASK_CODE = 'failure_on_ok' AND t.PIPELINE_RUN_ID = $1`, out.RunID)
		if !strings.Contains(msg.String, "can never be met") || !strings.Contains(msg.String, "ok ended SUCCESS, which does not satisfy a FAILURE dependency") {
			t.Errorf("skip message %q", msg.String)
		}
		if !strings.HasPrefix(out.Detail, "1 task(s) did not succeed: bad (FAILED); skipped because of the failure: ") ||
			!strings.Contains(out.Detail, "success_on_bad") || strings.Contains(out.Detail, "failure_on_ok") {
			t.Errorf("detail %q", out.Detail)
		}
	})
}

func TestRunConditionsAllAnyAndN(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "succeed")
		f.task("P", "b", "fail")
		f.task("P", "c", "succeed")
		cases := map[string]struct {
			cond  string
			n     int
			state string
		}{
			"all": {pipeline.All, 0, TaskSkipped}, "any": {pipeline.Any, 0, TaskSuccess},
			"two": {pipeline.N, 2, TaskSuccess}, "three": {pipeline.N, 3, TaskSkipped},
		}
		for code, c := range cases {
			f.task("P", code, "succeed")
			for _, up := range []string{"a", "b", "c"} {
				f.b.Dep("P", code, "P", up, pipeline.Success)
			}
			f.b.Condition("P", code, c.cond, c.n)
		}
		out := f.runPipeline("P")
		got := f.statuses(out.RunID)
		for code, c := range cases {
			if got[code] != c.state {
				t.Errorf("%s (%s %d): %s, want %s", code, c.cond, c.n, got[code], c.state)
			}
		}
	})
}

func TestSkipsCascadeAndAlwaysDependentsRunAfterFailures(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "extract", "fail")
		f.task("P", "transform", "succeed")
		f.task("P", "publish", "succeed")
		f.task("P", "cleanup", "succeed")
		f.b.Task("P", "alert", pipeline.HandlerEmailAlert, map[string]string{behaviour: "succeed"})
		f.b.Dep("P", "transform", "P", "extract", pipeline.Success)
		f.b.Dep("P", "publish", "P", "transform", pipeline.Success)
		f.b.Dep("P", "cleanup", "P", "publish", pipeline.Always)
		f.b.Dep("P", "alert", "P", "extract", pipeline.Always)
		out := f.runPipeline("P")
		got := f.statuses(out.RunID)
		want := map[string]string{"extract": TaskFailed, "transform": TaskSkipped, "publish": TaskSkipped,
			"cleanup": TaskSuccess, "alert": TaskSuccess}
		for code, w := range want {
			if got[code] != w {
				t.Errorf("%s: %s, want %s", code, got[code], w)
			}
		}
		want2 := "1 task(s) did not succeed: extract (FAILED); skipped because of the failure: transform, publish"
		if out.Status != RunFailed || out.Detail != want2 || out.Code != exit.Failure {
			t.Fatalf("outcome %q", out.String())
		}
		if !strings.HasPrefix(out.String(), "P: pipeline_run_id=") || !strings.HasSuffix(out.String(), " FAILED — "+want2) {
			t.Fatalf("line %q", out.String())
		}
		var status, endedBy, kind string
		f.scalar(&status, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		f.scalar(&endedBy, "SELECT ENDED_BY FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		f.scalar(&kind, "SELECT ENDED_BY_KIND FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		if status != RunFailed || endedBy != "etl-craft" || kind != "SYSTEM" {
			t.Fatalf("run row %s %s %s", status, endedBy, kind)
		}
		if f.nullString("SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID).Valid {
			t.Fatal("the ended run kept its owner")
		}
	})
}

func TestFailureDependentsWaitUntilNothingElseCanStart(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "broken", "fail")
		f.task("P", "slow", "block")
		f.task("P", "on_failure", "succeed")
		f.b.Dep("P", "on_failure", "P", "broken", pipeline.Failure)
		done := make(chan Outcome)
		go func() { done <- f.runPipeline("P") }()
		f.h.waitStarted(t, "slow")
		ids := f.runIDs("P")
		// broken fails while slow still runs; on_failure must wait for slow.
		for f.count(`SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1 AND STATUS = 'FAILED'`, ids[0]) == 0 {
			time.Sleep(10 * time.Millisecond)
		}
		if n := f.count(`SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1`, ids[0]); n != 2 {
			t.Fatalf("%d task runs while slow runs, want 2 (on_failure must wait)", n)
		}
		close(f.h.gate("slow"))
		out := <-done
		if got := f.statuses(out.RunID); got["on_failure"] != TaskSuccess || got["slow"] != TaskSuccess {
			t.Fatalf("statuses %v", got)
		}
	})
}

func TestAlertsDoNotDecideTheRunUnlessThePipelineHasOnlyAlerts(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "load", "succeed")
		f.b.Task("P", "alert", pipeline.HandlerEmailAlert, map[string]string{behaviour: "fail"})
		f.b.Dep("P", "alert", "P", "load", pipeline.Always)
		if out := f.runPipeline("P"); out.Status != RunSuccess || out.Code != exit.Success || out.Detail != "" {
			t.Fatalf("data SUCCESS with a failed alert: %q", out.String())
		}
		f.b.Pipeline("ALERTS", "FULL")
		f.b.Task("ALERTS", "alert", pipeline.HandlerEmailAlert, map[string]string{behaviour: "fail"})
		if out := f.runPipeline("ALERTS"); out.Status != RunFailed {
			t.Fatalf("alert-only pipeline: %q", out.String())
		}
	})
}

func TestAllSkippedRunIsSkippedAndAnEmptyPipelineToo(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("EMPTY", "FULL")
		out := f.runPipeline("EMPTY")
		if out.Status != RunSkipped || out.Code != exit.Success || out.Detail != "the pipeline has no active task" {
			t.Fatalf("%q", out.String())
		}
	})
}

func TestReadySetDispatchRespectsMaxParallel(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.opts.MaxParallel = 2
		f.b.Pipeline("P", "FULL")
		for _, c := range []string{"a", "b", "c", "d"} {
			f.task("P", c, "block")
		}
		f.task("P", "after_a", "succeed")
		f.b.Dep("P", "after_a", "P", "a", pipeline.Success)
		done := make(chan Outcome)
		go func() { done <- f.runPipeline("P") }()
		first := <-f.h.started
		second := <-f.h.started
		select {
		case c := <-f.h.started:
			t.Fatalf("%s started while %s and %s held both slots", c, first, second)
		case <-time.After(200 * time.Millisecond):
		}
		for _, c := range []string{"a", "b", "c", "d"} {
			close(f.h.gate(c))
		}
		out := <-done
		if out.Status != RunSuccess || f.h.peak != 2 {
			t.Fatalf("%q, peak %d", out.String(), f.h.peak)
		}
	})
}

func TestAttemptLogFileAndTaskLog(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "load", "succeed")
		out := f.runPipeline("P")
		var taskRunID int64
		var log, path string
		var src, tgt, ins, rows int64
		err := db.QueryRowContext(context.Background(), `SELECT t.TASK_RUN_ID, t.TASK_LOG, a.LOG_PATH, t.SOURCE_COUNT, t.TARGET_COUNT,
			t.INSERT_COUNT, t.ROWS_WRITTEN FROM AUD_TASK_RUN_LOG t JOIN AUD_TASK_ATTEMPTS a ON a.TASK_RUN_ID = t.TASK_RUN_ID
			WHERE t.PIPELINE_RUN_ID = $1`, out.RunID).Scan(&taskRunID, &log, &path, &src, &tgt, &ins, &rows)
		if err != nil {
			t.Fatal(err)
		}
		wantPath := filepath.Join(f.opts.LogDir, "P", "run-"+itoa(int(out.RunID)), "load.attempt-1.log")
		if path != wantPath {
			t.Fatalf("LOG_PATH %s, want %s", path, wantPath)
		}
		if src != 10 || tgt != 9 || ins != 7 || rows != 7 {
			t.Fatalf("counts %d %d %d %d", src, tgt, ins, rows)
		}
		if !strings.HasPrefix(log, "SOURCE_COUNT = 10\nTARGET_COUNT = 9\nINSERT_COUNT = 7\nROWS_WRITTEN = 7\n\n") ||
			!strings.Contains(log, "hello from the test handler") {
			t.Fatalf("TASK_LOG %q", log)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, tag := range []string{"pipeline=P", "task=load", "pipeline_run_id=" + itoa(int(out.RunID)),
			"task_run_id=" + itoa(int(taskRunID)), "attempt=1", "attempt started", "attempt ended"} {
			if !strings.Contains(string(b), tag) {
				t.Errorf("the log file lacks %q:\n%s", tag, b)
			}
		}
	})
}

func TestHandlerErrorsAndPanicsAreRecordedFailed(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "fails", "fail")
		f.task("P", "boom", "panic")
		f.b.Task("P", "script", "BUSINESS_RULES", nil)
		f.opts.Warehouse = nil
		_, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "P"})
		wantCode(t, err, exit.Configuration, "has no Warehouse section")
		f.wantRuns(0)
		f.b.Exec("UPDATE CFG_TASKS SET HANDLER = 'EMAIL_ALERT' WHERE TASK_CODE = 'script'")
		delete(f.opts.Handlers, pipeline.HandlerEmailAlert)
		out := f.runPipeline("P")
		var msg string
		var code, retryable int
		f.scalar(&msg, `SELECT a.ERROR_MESSAGE FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE c.TASK_CODE = 'fails' AND t.PIPELINE_RUN_ID = $1`, out.RunID)
		f.scalar(&code, `SELECT a.EXIT_CODE FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE c.TASK_CODE = 'fails' AND t.PIPELINE_RUN_ID = $1`, out.RunID)
		if msg != "the source file is missing" || code != int(exit.Handler) {
			t.Fatalf("fails: %q exit %d", msg, code)
		}
		f.scalar(&msg, `SELECT t.ERROR_MESSAGE FROM AUD_TASK_RUN_LOG t JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID
			WHERE c.TASK_CODE = 'boom' AND t.PIPELINE_RUN_ID = $1`, out.RunID)
		if !strings.Contains(msg, "failed unexpectedly: an unexpected value") {
			t.Fatalf("boom: %q", msg)
		}
		f.scalar(&msg, `SELECT t.ERROR_MESSAGE FROM AUD_TASK_RUN_LOG t JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID
			WHERE c.TASK_CODE = 'script' AND t.PIPELINE_RUN_ID = $1`, out.RunID)
		f.scalar(&retryable, `SELECT CASE WHEN a.RETRYABLE THEN 1 ELSE 0 END FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE c.TASK_CODE = 'script' AND t.PIPELINE_RUN_ID = $1`, out.RunID)
		if !strings.Contains(msg, "no handler for EMAIL_ALERT tasks") || retryable != 1 {
			t.Fatalf("script: %q retryable %d", msg, retryable)
		}
	})
}

func TestGraphErrorsStopTheRunBeforeAnythingIsRecorded(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("CYCLE", "FULL")
		f.task("CYCLE", "a", "succeed")
		f.task("CYCLE", "b", "succeed")
		f.b.Dep("CYCLE", "a", "CYCLE", "b", pipeline.Success)
		f.b.Dep("CYCLE", "b", "CYCLE", "a", pipeline.Success)
		_, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "CYCLE"})
		wantCode(t, err, exit.DependencyCycle, "cycle")
		f.b.Pipeline("BADPARAM", "FULL")
		f.task("BADPARAM", "a", "succeed", ParamTimeout, "soon")
		_, err = f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "BADPARAM"})
		wantCode(t, err, exit.Metadata, "TASK_TIMEOUT_SECONDS must be a whole number of at least 0; got 'soon'")
		f.b.Pipeline("RETIRED", "FULL")
		f.task("RETIRED", "never", "succeed")
		f.task("RETIRED", "root", "succeed")
		f.b.Dep("RETIRED", "never", "RETIRED", "root", pipeline.Failure)
		f.b.Exec("UPDATE CFG_TASKS SET ACTIVE_FLAG = 'N' WHERE TASK_CODE = 'root'")
		_, err = f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "RETIRED"})
		wantCode(t, err, exit.UnknownTask, "which is RETIRED.root, a retired task of the pipeline RETIRED: activate it or retire the dependency")
		_, err = f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: "NOPE"})
		wantCode(t, err, exit.Metadata, "no active pipeline")
		f.wantRuns(0)
	})
}

func TestHooksRunAfterTheRunEndsAndTheirFailureChangesNothing(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "load", "succeed")
		var calls []string
		f.opts.Hooks = []Hook{
			{Name: "first", Run: func(ctx context.Context, e Ended) error {
				var status string
				db.QueryRowContext(ctx, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", e.RunID).Scan(&status)
				calls = append(calls, "first:"+e.PipelineCode+":"+e.Status+":"+status)
				return exit.Errorf(exit.Cloning, "the clone failed on CFG_TASKS")
			}},
			{Name: "second", Run: func(ctx context.Context, e Ended) error {
				calls = append(calls, "second")
				return nil
			}},
		}
		out := f.runPipeline("P")
		if out.Status != RunSuccess || out.Code != exit.Success {
			t.Fatalf("%q", out.String())
		}
		if fmtList(calls) != "[first:P:SUCCESS:SUCCESS second]" {
			t.Fatalf("hooks %v", calls)
		}
		if logs := f.logs.String(); !strings.Contains(logs, "level=ERROR") || !strings.Contains(logs, "the clone failed on CFG_TASKS") {
			t.Fatalf("the hook's failure was not logged at ERROR:\n%s", logs)
		}
	})
}
