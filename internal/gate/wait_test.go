package gate_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// budget reads a gate's AUD_GATE_WAITS row.
func (f *fixture) budget(runID, taskID int64) gate.Budget {
	f.t.Helper()
	b, err := gate.LoadBudget(f.ctx, f.db, runID, taskID)
	if err != nil || b == nil {
		f.t.Fatalf("gate wait of run %d task %d: %v, %v", runID, taskID, b, err)
	}
	return *b
}

// G18: a pipeline gate's wait is kept in AUD_GATE_WAITS, and a later check
// (after a restart) resumes its budget.
func TestGateWaitIsPersistedAndResumed(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		up, _ := f.upRun("IN-PROGRESS", t0, nil)
		// Later QUEUED and SKIPPED runs of the upstream do not hide it.
		f.rec.Run(f.up, inspecttest.Run{Status: "QUEUED", Start: t0.Add(time.Second)})
		skipped := f.rec.Run(f.up, inspectRunAt("SKIPPED", t0.Add(2*time.Second)))
		run := f.downRun()
		g := f.pipelineGate(run, gate.Enforce, time.Hour)

		o := f.evaluate(g, t0)
		want := gate.Budget{FirstCheckAt: t0, NextCheckAt: t0.Add(210 * time.Second), Looks: 0, WaitUntil: t0.Add(time.Hour)}
		if !o.Waiting() || !o.NextCheckAt.Equal(want.NextCheckAt) || len(o.Decisions) != 0 {
			t.Fatalf("first look: %+v; want the next at %v", o, want.NextCheckAt)
		}
		sameBudget(t, f.budget(run, 0), want)
		if n := f.count("SELECT count(*) FROM AUD_GATE_WAITS WHERE PIPELINE_RUN_ID = $1 AND TASK_ID IS NULL", run); n != 1 {
			t.Fatalf("%d pipeline-gate waits", n)
		}

		// Before the look is due nothing changes.
		if o = f.evaluate(g, t0.Add(100*time.Second)); !o.NextCheckAt.Equal(want.NextCheckAt) {
			t.Fatalf("early look: %+v", o)
		}
		sameBudget(t, f.budget(run, 0), want)

		// After a restart, with a longer Gate_wait_minutes configured, the
		// check resumes the budget it started with.
		o = f.evaluate(f.pipelineGate(run, gate.Enforce, 3*time.Hour), t0.Add(210*time.Second))
		want.NextCheckAt, want.Looks = t0.Add(240*time.Second), 1
		if !o.NextCheckAt.Equal(want.NextCheckAt) {
			t.Fatalf("second look: %+v; want %v", o, want.NextCheckAt)
		}
		sameBudget(t, f.budget(run, 0), want)

		// The upstream finishes: the next look judges the latest finished
		// run, which is the later SKIPPED one, and settles.
		f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = $2 WHERE PIPELINE_RUN_ID = $1",
			up, db.TimeArg(t0.Add(230*time.Second)))
		o = f.admit(g, t0.Add(240*time.Second), 0)
		if o.Waiting() || o.Pass || o.Decisions[0].Selected.PipelineRunID != skipped || !o.Definitive() {
			t.Fatalf("after the upstream finished: %+v", o)
		}
		want.NextCheckAt, want.Looks = time.Time{}, 2
		sameBudget(t, f.budget(run, 0), want)
	})
}

// G18: the budget is shared and bounded: by Gate_wait_minutes (one look
// for 20 s) and by MaxLooks.
func TestGateWaitBudgetRunsOut(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		f.upRun("IN-PROGRESS", t0, nil)

		run := f.downRun()
		g := f.pipelineGate(run, gate.Enforce, 20*time.Second)
		if o := f.evaluate(g, t0); !o.NextCheckAt.Equal(t0.Add(20 * time.Second)) {
			t.Fatalf("20 s budget: %+v", o)
		}
		o := f.admit(g, t0.Add(20*time.Second), 0)
		if o.Waiting() || o.Pass || o.Definitive() || len(o.Unmet()) != 1 {
			t.Fatalf("spent budget: %+v", o)
		}
		sameBudget(t, f.budget(run, 0), gate.Budget{FirstCheckAt: t0, Looks: 1, WaitUntil: t0.Add(20 * time.Second)})
		var result string
		f.scan("SELECT RESULT FROM AUD_GATE_DECISIONS WHERE PIPELINE_RUN_ID = $1", []any{run}, &result)
		if result != "UNSATISFIED" {
			t.Fatalf("decision %s", result)
		}

		run = f.downRun()
		g = f.pipelineGate(run, gate.Enforce, 24*time.Hour)
		waits, now := 0, t0
		for o = f.evaluate(g, now); o.Waiting(); o = f.evaluate(g, now) {
			if !o.NextCheckAt.After(now) || waits > gate.MaxLooks {
				t.Fatalf("look %d at %v: next %v", waits, now, o.NextCheckAt)
			}
			now = o.NextCheckAt
			waits++
		}
		if waits != gate.MaxLooks || o.Pass {
			t.Fatalf("waited %d times, then %+v", waits, o)
		}
		b := f.budget(run, 0)
		if b.Looks != gate.MaxLooks || b.Waiting() {
			t.Fatalf("budget after the last look: %+v", b)
		}
	})
}

// G18: a hundred task gates waiting on a running upstream each keep a
// budget of their own, and take no look before it is due.
func TestTaskGateWaits(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		f.upRun("IN-PROGRESS", t0, nil)
		for i := range 99 {
			code := "load_" + strconv.Itoa(i)
			f.b.Task("DOWN", code, pipeline.HandlerSQL, nil)
			f.b.Dep("DOWN", code, "UP", "publish", pipeline.Success)
		}
		run := f.downRun()
		g := f.graph()
		for _, task := range g.Tasks {
			o := f.evaluate(gate.TaskGate(run, task, 1, gate.Enforce, time.Hour), t0.Add(30*time.Second))
			if !o.NextCheckAt.Equal(t0.Add(210 * time.Second)) {
				t.Fatalf("%s: %+v", task.Code, o)
			}
		}
		if n := f.count("SELECT count(*) FROM AUD_GATE_WAITS WHERE PIPELINE_RUN_ID = $1 AND TASK_ID IS NOT NULL AND LOOKS = 0", run); n != 100 {
			t.Fatalf("%d task-gate waits with no look; want 100", n)
		}
		if n := f.count("SELECT count(*) FROM AUD_GATE_DECISIONS"); n != 0 {
			t.Fatalf("%d decisions while waiting", n)
		}

		// A task whose run condition is met meanwhile by its own pipeline
		// needs nothing more: its wait settles.
		o := f.evaluate(gate.TaskGate(run, g.Task("load"), 0, gate.Enforce, time.Hour), t0.Add(time.Minute))
		if !o.Pass || o.Waiting() || len(o.Decisions) != 0 {
			t.Fatalf("nothing needed any more: %+v", o)
		}
		sameBudget(t, f.budget(run, f.load), gate.Budget{FirstCheckAt: t0.Add(30 * time.Second), Looks: 0,
			WaitUntil: t0.Add(30*time.Second + time.Hour)})
	})
}

// G10, G18: looks follow the upstream's average real run length: runs that
// ended SUCCESS or FAILED, no backfill, stand-in or zero-length run.
func TestLooksFollowTheAverageRunLength(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		past := []struct {
			status, kind string
			length       time.Duration
			backfill     bool
		}{
			{"SUCCESS", "", 100 * time.Second, false},
			{"FAILED", "", 300 * time.Second, false},
			{"SUCCESS", "STAND_IN", 1000 * time.Second, false},
			{"SUCCESS", "", 0, false},
			{"SUCCESS", "BACKFILL", 5000 * time.Second, true},
			{"SKIPPED", "", 10 * time.Second, false},
		}
		for i, p := range past {
			start := t0.Add(time.Duration(i) * time.Hour)
			run := f.rec.Run(f.up, inspecttest.Run{Status: p.status, TriggerKind: p.kind, Backfill: p.backfill,
				Start: start, End: start.Add(p.length)})
			f.rec.TaskRun(run, f.publish, inspecttest.TaskRun{Status: p.status, Start: start, End: start.Add(p.length)})
		}
		start := t0.Add(24 * time.Hour)
		f.upRun("IN-PROGRESS", start, nil)
		run := f.downRun()
		for _, g := range []gate.Gate{f.pipelineGate(run, gate.Enforce, time.Hour), f.taskGate(run, gate.Enforce, time.Hour)} {
			// 70 % of the 200 s average is 140 s after the upstream started.
			if o := f.evaluate(g, start.Add(30*time.Second)); !o.NextCheckAt.Equal(start.Add(140 * time.Second)) {
				t.Fatalf("task gate %v: %+v", g.TaskID != 0, o)
			}
		}
	})
}

// clock is a test clock whose Sleep moves time on at once; onSleep runs
// after each sleep.
type clock struct {
	now     time.Time
	slept   []time.Duration
	onSleep func()
}

func (c *clock) Now() time.Time { return c.now }

func (c *clock) Sleep(_ context.Context, d time.Duration) error {
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	c.onSleep()
	return nil
}

// G04: Await waits for a running upstream (one sleep), then judges it.
func TestAwaitSleepsUntilTheUpstreamFinishes(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		up, _ := f.upRun("IN-PROGRESS", t0, nil)
		run := f.downRun()
		g := f.pipelineGate(run, gate.Enforce, time.Hour)
		c := &clock{now: t0, onSleep: func() {
			f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = $2 WHERE PIPELINE_RUN_ID = $1",
				up, db.TimeArg(t0.Add(200*time.Second)))
		}}
		o, err := gate.Await(f.ctx, c, func(ctx context.Context, now time.Time) (gate.Outcome, error) {
			return f.admit(g, now, 0), nil
		})
		if err != nil || !o.Pass || len(c.slept) != 1 || c.slept[0] != 210*time.Second {
			t.Fatalf("%+v, %v after sleeping %v", o, err, c.slept)
		}
		if n := f.count("SELECT count(*) FROM AUD_GATE_DECISIONS WHERE PIPELINE_RUN_ID = $1 AND RESULT = 'SATISFIED'", run); n != 1 {
			t.Fatalf("%d satisfied decisions", n)
		}

		// A cancelled context stops the wall clock's sleep at once.
		f.upRun("IN-PROGRESS", t0.Add(time.Hour), nil)
		ctx, cancel := context.WithCancel(f.ctx)
		cancel()
		g = f.pipelineGate(f.downRun(), gate.Enforce, time.Hour)
		o, err = gate.Await(ctx, gate.WallClock, func(ctx context.Context, now time.Time) (gate.Outcome, error) {
			return f.evaluate(g, now), nil
		})
		if !errors.Is(err, context.Canceled) || !o.Waiting() {
			t.Fatalf("cancelled: %+v, %v", o, err)
		}
	})
}

// sameBudget fails the test unless the budgets are equal.
func sameBudget(t *testing.T, got, want gate.Budget) {
	t.Helper()
	if !got.FirstCheckAt.Equal(want.FirstCheckAt) || !got.NextCheckAt.Equal(want.NextCheckAt) || got.Looks != want.Looks ||
		!got.WaitUntil.Equal(want.WaitUntil) {
		t.Fatalf("budget %+v; want %+v", got, want)
	}
}
