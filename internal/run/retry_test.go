package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	g := &pipeline.Graph{Pipeline: pipeline.Pipeline{Code: "P"}}
	task := func(params map[string]string) *pipeline.Task { return &pipeline.Task{Code: "t", Params: params} }
	p, err := PolicyOf(g, task(nil), Defaults{TaskTimeout: 21600 * time.Second, Retries: 1})
	if err != nil || p.Retries != 1 || p.Delay != 60*time.Second || p.Backoff != 2 || p.Timeout != 6*time.Hour {
		t.Fatalf("defaults %+v %v", p, err)
	}
	var delays []time.Duration
	for n := 1; n <= 8; n++ {
		delays = append(delays, p.RetryDelay(n))
	}
	want := []time.Duration{60, 120, 240, 480, 960, 1920, 3600, 3600}
	for i := range want {
		if delays[i] != want[i]*time.Second {
			t.Fatalf("delays %v", delays)
		}
	}
	p, err = PolicyOf(g, task(map[string]string{ParamRetries: "3", ParamRetryDelay: "0", ParamRetryBackoff: "1.5", ParamTimeout: "0"}), Defaults{})
	if err != nil || p.Retries != 3 || p.RetryDelay(3) != 0 || p.Timeout != 0 {
		t.Fatalf("parameters %+v %v", p, err)
	}
	// The largest whole number is a duration still, and a delay is capped.
	p, err = PolicyOf(g, task(map[string]string{ParamRetryDelay: "2147483647", ParamTimeout: "2147483647"}), Defaults{})
	if err != nil || p.Timeout != 2147483647*time.Second || p.RetryDelay(1) != MaxRetryDelay {
		t.Fatalf("the largest values: %+v %v", p, err)
	}
	_, err = PolicyOf(g, task(map[string]string{ParamTimeout: "10000000000"}), Defaults{})
	if err == nil || !strings.Contains(err.Error(), "CFG_TASK_PARAMETERS TASK_TIMEOUT_SECONDS must be a whole number from 0 to 2147483647; got '10000000000'") {
		t.Fatalf("an overflowing timeout: %v", err)
	}
	for name, values := range map[string][]string{
		ParamRetries: {"-1", "1.5", "no", "10000000000"}, ParamRetryDelay: {"no", "-1", "inf", "0.5", "10000000000", "2147483648"},
		ParamRetryBackoff: {"0.5", "nan", "inf", "no"}, ParamTimeout: {"soon", "-5", "10000000000", "2147483648", "+5", "٣"},
	} {
		for _, v := range values {
			_, err := PolicyOf(g, task(map[string]string{name: v}), Defaults{})
			if exit.CodeOf(err) != exit.Metadata || !strings.Contains(err.Error(), "CFG_TASK_PARAMETERS "+name) {
				t.Errorf("%s=%q: %v", name, v, err)
			}
		}
	}
}

func TestRetriesThenSuccessOnOneTaskRun(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "flaky", "retry", "FAILURES", "2", ParamRetries, "2", ParamRetryDelay, "0")
		f.task("P", "after", "succeed")
		f.b.Task("P", "on_failure", pipeline.HandlerEmailAlert, map[string]string{behaviour: "succeed"})
		f.b.Dep("P", "after", "P", "flaky", pipeline.Success)
		f.b.Dep("P", "on_failure", "P", "flaky", pipeline.Failure)
		out := f.runPipeline("P")
		if out.Status != RunSuccess {
			t.Fatalf("%q", out.String())
		}
		if got := fmtList(f.attempts(out.RunID, "flaky")); got != "[FAILED FAILED SUCCESS]" {
			t.Fatalf("attempts %s", got)
		}
		got := f.statuses(out.RunID)
		if got["after"] != TaskSuccess || got["on_failure"] != TaskSkipped {
			t.Fatalf("statuses %v", got)
		}
		if n := f.count("SELECT count(DISTINCT OWNER_ID) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE c.TASK_CODE = 'flaky'"); n != 3 {
			t.Fatalf("%d owners", n)
		}
		var count int
		var msg any
		f.scalar(&count, `SELECT t.ATTEMPT_COUNT FROM AUD_TASK_RUN_LOG t JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE c.TASK_CODE = 'flaky'`)
		f.scalar(&msg, `SELECT t.ERROR_MESSAGE FROM AUD_TASK_RUN_LOG t JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE c.TASK_CODE = 'flaky'`)
		if count != 3 || msg != nil {
			t.Fatalf("summary count %d, error %v", count, msg)
		}
	})
}

func TestGuardErrorsAreNeverRetried(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "merge", "guard", ParamRetries, "3", ParamRetryDelay, "0")
		out := f.runPipeline("P")
		if out.Status != RunFailed || fmtList(f.attempts(out.RunID, "merge")) != "[FAILED]" {
			t.Fatalf("%q %v", out.String(), f.attempts(out.RunID, "merge"))
		}
		var retryable, code int
		f.scalar(&retryable, "SELECT CASE WHEN RETRYABLE THEN 1 ELSE 0 END FROM AUD_TASK_ATTEMPTS")
		f.scalar(&code, "SELECT EXIT_CODE FROM AUD_TASK_ATTEMPTS")
		if retryable != 0 || code != int(exit.SQLGuard) {
			t.Fatalf("retryable %d exit %d", retryable, code)
		}
	})
}

// interruptWhen runs the pipeline and interrupts it once cond holds, and
// returns the outcome.
func (f *fixture) interruptWhen(pipe string, cond func() bool) Outcome {
	f.t.Helper()
	ctx, cancel := context.WithCancel(f.ctx())
	defer cancel()
	done := make(chan Outcome, 1)
	go func() {
		out, err := f.supervisor().RunPipeline(ctx, Request{PipelineCode: pipe})
		if err != nil {
			f.t.Errorf("run: %v", err)
		}
		done <- out
	}()
	for !cond() {
		select {
		case out := <-done:
			f.t.Fatalf("the run ended before the condition: %q", out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	return <-done
}

func TestDelayedRetriesArePersistedAndTheirBudgetSurvivesRestarts(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "flaky", "fail", ParamRetries, "2", ParamRetryDelay, "60")
		queuedRetry := func() bool {
			return f.count("SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = 'QUEUED'") == 1
		}
		delayOf := func(number int) time.Duration {
			var queuedAt, notBefore engine.Time
			f.scalar(&queuedAt, "SELECT QUEUED_AT FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_NUMBER = $1", number)
			f.scalar(&notBefore, "SELECT NOT_BEFORE FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_NUMBER = $1", number)
			return notBefore.Time.Sub(queuedAt.Time).Round(time.Second)
		}
		out := f.interruptWhen("P", queuedRetry)
		if out.Code != exit.Incomplete || out.Status != RunInProgress {
			t.Fatalf("%q", out.String())
		}
		if d := delayOf(2); d != 60*time.Second {
			t.Fatalf("the first retry waits %s", d)
		}
		// Restarted before the retry is due: no new attempt is created.
		out = f.interruptWhen("P", func() bool {
			return f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE OWNER_ID IS NOT NULL") == 1
		})
		if got := fmtList(f.attempts(out.RunID, "flaky")); got != "[FAILED QUEUED]" {
			t.Fatalf("after a restart: %s", got)
		}
		// Time passes; the restart claims the persisted retry.
		f.exec("UPDATE AUD_TASK_ATTEMPTS SET NOT_BEFORE = $1 WHERE STATUS = 'QUEUED'", f.db.TimeArg(time.Now().Add(-time.Second)))
		out = f.interruptWhen("P", func() bool {
			return f.count("SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = 'QUEUED' AND ATTEMPT_NUMBER = 3") == 1
		})
		if d := delayOf(3); d != 120*time.Second {
			t.Fatalf("the second retry waits %s", d)
		}
		f.exec("UPDATE AUD_TASK_ATTEMPTS SET NOT_BEFORE = $1 WHERE STATUS = 'QUEUED'", f.db.TimeArg(time.Now().Add(-time.Second)))
		out = f.runPipeline("P")
		if out.Status != RunFailed || fmtList(f.attempts(out.RunID, "flaky")) != "[FAILED FAILED FAILED]" || len(f.runIDs("P")) != 1 {
			t.Fatalf("%q %v", out.String(), f.attempts(out.RunID, "flaky"))
		}
	})
}

func TestAWaitingRetryHoldsNoSlot(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.opts.MaxParallel = 1
		f.b.Pipeline("P", "FULL")
		f.task("P", "a_flaky", "fail", ParamRetries, "1", ParamRetryDelay, "3600")
		f.task("P", "b_other", "succeed")
		out := f.interruptWhen("P", func() bool {
			return f.count("SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE STATUS = 'SUCCESS'") == 1
		})
		if got := f.statuses(out.RunID); got["b_other"] != TaskSuccess || fmtList(f.attempts(out.RunID, "a_flaky")) != "[FAILED QUEUED]" {
			t.Fatalf("%v %v", got, f.attempts(out.RunID, "a_flaky"))
		}
	})
}

func TestTimeoutsEndAttemptsTimedOutAndAreRetriedByPolicy(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "slow", "sleep", ParamTimeout, "1", ParamRetries, "1", ParamRetryDelay, "0")
		out := f.runPipeline("P")
		if out.Status != RunFailed || fmtList(f.attempts(out.RunID, "slow")) != "[TIMED_OUT TIMED_OUT]" {
			t.Fatalf("%q %v", out.String(), f.attempts(out.RunID, "slow"))
		}
		msg := f.nullString("SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG")
		if msg.String != "timed out after 1s and was stopped" {
			t.Fatalf("message %q", msg.String)
		}
	})
}

func TestAnInterruptedRunStopsItsTasksAndResumes(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "first", "succeed")
		f.task("P", "stalls", "stall")
		f.b.Dep("P", "stalls", "P", "first", pipeline.Success)
		var hooks int
		f.opts.Hooks = []Hook{{Name: "count", Run: func(context.Context, Ended) error { hooks++; return nil }}}
		out := f.interruptWhen("P", func() bool {
			return f.count(`SELECT count(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
				JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE a.STATUS = 'RUNNING' AND c.TASK_CODE = 'stalls'`) == 1
		})
		if out.Code != exit.Incomplete || out.Status != RunInProgress || !strings.Contains(out.Detail, "1 running task(s) were stopped") {
			t.Fatalf("%q", out.String())
		}
		msg := f.nullString(`SELECT a.ERROR_MESSAGE FROM AUD_TASK_ATTEMPTS a WHERE a.STATUS = 'FAILED'`)
		if msg.String != "was stopped because the run was interrupted" {
			t.Fatalf("%q", msg.String)
		}
		if f.nullString("SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG").Valid || hooks != 0 {
			t.Fatalf("the interrupted run kept its owner, or hooks ran (%d)", hooks)
		}
		again := f.runPipeline("P")
		if again.RunID != out.RunID || again.Status != RunSuccess || hooks != 1 {
			t.Fatalf("%q, hooks %d", again.String(), hooks)
		}
		if fmtList(f.attempts(out.RunID, "first")) != "[SUCCESS]" || fmtList(f.attempts(out.RunID, "stalls")) != "[FAILED SUCCESS]" {
			t.Fatalf("first %v stalls %v", f.attempts(out.RunID, "first"), f.attempts(out.RunID, "stalls"))
		}
	})
}
