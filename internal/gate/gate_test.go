package gate_test

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// G01: a task dependency on another pipeline's task, from no upstream run to
// consumption.
func TestTaskDependencyIsSatisfiedThenConsumed(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		run := f.downRun()
		g := f.taskGate(run, gate.Enforce, time.Hour)

		o := f.evaluate(g, t0)
		if o.Pass || o.Satisfied != 0 || !o.Definitive() || len(o.Decisions) != 1 ||
			o.Reason() != "upstream task UP.publish (SUCCESS) has no finished run" {
			t.Fatalf("no upstream run: %+v", o)
		}

		upRun, upTaskRun := f.upRun("SUCCESS", t0.Add(time.Minute), rows(3))
		attempt := f.attempt(run, "SUCCESS")
		o = f.admit(g, t0.Add(time.Hour), attempt)
		if !o.Pass || o.Satisfied != 1 || len(o.Decisions) != 1 {
			t.Fatalf("after a SUCCESS upstream run: %+v", o)
		}
		d := o.Decisions[0]
		wantReason := "upstream task UP.publish (SUCCESS) last finished run " + itoa(upRun) + " (task_run_id=" + itoa(upTaskRun) + ") ended SUCCESS"
		if d.Result != gate.Satisfied || d.Selected.TaskRunID != upTaskRun || d.Reason != wantReason {
			t.Fatalf("decision %+v; want the task row %d: %q", d, upTaskRun, wantReason)
		}
		var attemptID, taskDep, selRun, selTask sql.NullInt64
		var selRevision sql.NullInt64
		var result, reason string
		f.scan(`SELECT ATTEMPT_ID, TASK_DEPENDENCY_ID, SELECTED_PIPELINE_RUN_ID, SELECTED_TASK_RUN_ID, SELECTED_REVISION, RESULT, REASON
			FROM AUD_GATE_DECISIONS WHERE PIPELINE_RUN_ID = $1`, []any{run},
			&attemptID, &taskDep, &selRun, &selTask, &selRevision, &result, &reason)
		if attemptID.Int64 != attempt || taskDep.Int64 != f.taskDep || selRun.Int64 != upRun || selTask.Int64 != upTaskRun ||
			selRevision.Int64 != 1 || result != "SATISFIED" || reason != wantReason {
			t.Fatalf("decision row: attempt %v dep %v run %v task run %v revision %v %s %q",
				attemptID, taskDep, selRun, selTask, selRevision, result, reason)
		}

		if n := f.consumeAttempt(attempt); n != 1 {
			t.Fatalf("consumed %d rows", n)
		}
		var downPipe, downRun, task, upPipe, consumedRun, consumedTask, revision int64
		f.scan(`SELECT PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID, CONSUMED_PIPELINE_RUN_ID,
				CONSUMED_TASK_RUN_ID, CONSUMED_REVISION FROM AUD_DEPENDENCY_CONSUMPTION WHERE TASK_DEPENDENCY_ID = $1`,
			[]any{f.taskDep}, &downPipe, &downRun, &task, &upPipe, &consumedRun, &consumedTask, &revision)
		if downPipe != f.down || downRun != run || task != f.load || upPipe != f.up || consumedRun != upRun ||
			consumedTask != upTaskRun || revision != 1 {
			t.Fatalf("consumption row: %d %d %d %d %d %d %d", downPipe, downRun, task, upPipe, consumedRun, consumedTask, revision)
		}

		next := f.downRun()
		o = f.evaluate(f.taskGate(next, gate.Enforce, time.Hour), t0.Add(2*time.Hour))
		if o.Pass || !strings.HasSuffix(o.Reason(), "which was already consumed") {
			t.Fatalf("after consumption: %+v", o)
		}
	})
}

// G02, G08: only the upstream's latest finished run counts, and backfills
// never count.
func TestLatestFinishedRunDecides(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		f.upRun("SUCCESS", t0, nil)
		failed, _ := f.upRun("FAILED", t0.Add(time.Hour), nil)
		want := "upstream pipeline UP (SUCCESS) last finished run " + itoa(failed) +
			" ended FAILED, which does not satisfy a SUCCESS dependency"
		o := f.evaluate(f.pipelineGate(f.downRun(), gate.Enforce, time.Hour), t0.Add(3*time.Hour))
		if o.Pass || o.Reason() != want {
			t.Fatalf("%+v\nwant %q", o, want)
		}

		// A newer backfill run neither satisfies the gate, nor is waited for
		// while it runs; a failed one blocks nothing.
		f.rec.Run(f.up, backfillRun("SUCCESS"))
		o = f.evaluate(f.pipelineGate(f.downRun(), gate.Enforce, time.Hour), t0.Add(3*time.Hour))
		if o.Pass || o.Reason() != want {
			t.Fatalf("with a newer backfill: %+v", o)
		}
		f.rec.Run(f.up, backfillRun("IN-PROGRESS"))
		if o = f.evaluate(f.pipelineGate(f.downRun(), gate.Enforce, time.Hour), t0.Add(3*time.Hour)); o.Waiting() {
			t.Fatalf("waited for a running backfill: %+v", o)
		}
		ok, _ := f.upRun("SUCCESS", t0.Add(2*time.Hour), nil)
		f.rec.Run(f.up, backfillRun("FAILED"))
		o = f.evaluate(f.pipelineGate(f.downRun(), gate.Enforce, time.Hour), t0.Add(3*time.Hour))
		if !o.Pass || o.Decisions[0].Selected.PipelineRunID != ok {
			t.Fatalf("a failed backfill after a SUCCESS run: %+v", o)
		}
	})
}

// G03: HAS_DATA needs rows written, falling back to TARGET_COUNT for rows
// recorded before ROWS_WRITTEN existed.
func TestHasDataNeedsRowsWritten(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.HasData)
		cases := []struct {
			name          string
			written, goal *int64
			ok            bool
		}{
			{"no rows", rows(0), nil, false},
			{"4 rows", rows(4), nil, true},
			{"target 4 but nothing written", rows(0), rows(4), false},
			{"target 4 recorded before ROWS_WRITTEN", nil, rows(4), true},
		}
		for i, c := range cases {
			start := t0.Add(time.Duration(i) * time.Hour)
			run := f.rec.Run(f.up, inspectRunAt("SUCCESS", start))
			f.rec.TaskRun(run, f.publish, taskRun("SUCCESS", start, c.written, c.goal))
			down := f.downRun()
			for _, g := range []gate.Gate{f.pipelineGate(down, gate.Enforce, 0), f.taskGate(down, gate.Enforce, 0)} {
				o := f.evaluate(g, start.Add(30*time.Minute))
				if o.Pass != c.ok {
					t.Errorf("%s, task gate %v: %+v", c.name, g.TaskID != 0, o)
				}
				if !c.ok && !strings.Contains(o.Reason(), "ended SUCCESS with no rows written, which does not satisfy a HAS_DATA dependency") {
					t.Errorf("%s: reason %q", c.name, o.Reason())
				}
			}
		}
	})
}

// G05, G06: a gate told not to wait judges a running upstream at once; a
// gate that needs nothing checks nothing.
func TestNoWaitAndNothingNeeded(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		running, _ := f.upRun("IN-PROGRESS", t0, nil)
		run := f.downRun()
		o := f.admit(f.pipelineGate(run, gate.Enforce, 0), t0.Add(time.Minute), 0)
		want := "upstream pipeline UP (SUCCESS) has no finished run; run " + itoa(running) + " is still IN-PROGRESS"
		if o.Waiting() || o.Pass || o.Definitive() || o.Reason() != want {
			t.Fatalf("%+v\nwant %q, not definitive", o, want)
		}
		if n := f.count("SELECT count(*) FROM AUD_GATE_WAITS"); n != 0 {
			t.Fatalf("%d gate waits recorded for a gate that may not wait", n)
		}
		var selected sql.NullInt64
		f.scan("SELECT SELECTED_PIPELINE_RUN_ID FROM AUD_GATE_DECISIONS WHERE PIPELINE_RUN_ID = $1", []any{run}, &selected)
		if selected.Valid {
			t.Fatalf("selected run %d with none finished", selected.Int64)
		}

		g := f.taskGate(f.downRun(), gate.Enforce, time.Hour)
		g.Needed = 0
		if o := f.evaluate(g, t0); !o.Pass || len(o.Decisions) != 0 || o.Waiting() {
			t.Fatalf("nothing needed: %+v", o)
		}
	})
}

// G07: a pipeline consumes the upstream run it was admitted with; a newer
// upstream run is left for its next run.
func TestPipelineConsumesTheRunItWasAdmittedWith(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		first, _ := f.upRun("SUCCESS", t0, nil)
		run := f.downRun()
		if o := f.admit(f.pipelineGate(run, gate.Enforce, time.Hour), t0.Add(time.Hour), 0); !o.Pass {
			t.Fatalf("admission: %+v", o)
		}
		if n := f.consumeRun(run); n != 0 {
			t.Fatalf("a run that has not succeeded consumed %d rows", n)
		}
		second, _ := f.upRun("SUCCESS", t0.Add(2*time.Hour), nil)
		f.succeedDown(run)
		if n := f.consumeRun(run); n != 1 {
			t.Fatalf("consumed %d rows", n)
		}
		var consumed int64
		f.scan("SELECT CONSUMED_PIPELINE_RUN_ID FROM AUD_DEPENDENCY_CONSUMPTION WHERE PIPELINE_DEPENDENCY_ID = $1",
			[]any{f.pipeDep}, &consumed)
		if consumed != first {
			t.Fatalf("consumed run %d; want the admitted run %d", consumed, first)
		}
		o := f.admit(f.pipelineGate(f.downRun(), gate.Enforce, time.Hour), t0.Add(3*time.Hour), 0)
		if !o.Pass || o.Decisions[0].Selected.PipelineRunID != second {
			t.Fatalf("next run: %+v; want run %d", o, second)
		}
	})
}

// G16: bypassed decisions are recorded and never consumed.
func TestBypassedDecisionsAreNeverConsumed(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		failed, _ := f.upRun("FAILED", t0, nil)
		for _, policy := range []gate.Policy{gate.Warn, gate.Off} {
			run := f.downRun()
			g := f.pipelineGate(run, policy, time.Hour)
			o := f.admit(g, t0.Add(time.Hour), 0)
			if !o.Pass || len(o.Decisions) != 1 || o.Decisions[0].Result != gate.Bypassed || len(o.Unmet()) != 0 {
				t.Fatalf("%s: %+v", policy, o)
			}
			want := "upstream pipeline UP (SUCCESS) last finished run " + itoa(failed) + " ended FAILED"
			if policy == gate.Off {
				want = "upstream pipeline UP (SUCCESS) was not checked: Dependency_gates is off"
			}
			if !strings.HasPrefix(o.Decisions[0].Reason, want) || o.BypassReason() != "dependency gate bypassed: "+o.Decisions[0].Reason {
				t.Fatalf("%s: reason %q, bypass %q", policy, o.Decisions[0].Reason, o.BypassReason())
			}
			f.tx(func(tx *engine.Tx) error {
				return gate.RecordBypass(f.ctx, tx, f.down, run, 0, o.BypassReason(), t0.Add(time.Hour))
			})
			f.succeedDown(run)
			if n := f.consumeRun(run); n != 0 {
				t.Fatalf("%s: consumed %d rows", policy, n)
			}
			var result, action, reason, by, kind string
			var revision sql.NullInt64
			f.scan("SELECT RESULT, SELECTED_REVISION FROM AUD_GATE_DECISIONS WHERE PIPELINE_RUN_ID = $1", []any{run}, &result, &revision)
			f.scan(`SELECT ACTION, REASON, REQUESTED_BY, REQUESTED_BY_KIND FROM AUD_RUN_INTERVENTIONS
				WHERE PIPELINE_RUN_ID = $1 AND TASK_ID IS NULL`, []any{run}, &action, &reason, &by, &kind)
			if result != "BYPASSED" || revision.Valid || action != "GATE_BYPASS" || reason != o.BypassReason() ||
				by != alice.Name || kind != string(alice.Kind) {
				t.Fatalf("%s: decision %s %v, intervention %s %q by %s (%s)", policy, result, revision, action, reason, by, kind)
			}
		}
		// Recording a bypass with nothing bypassed adds nothing.
		other := f.downRun()
		f.tx(func(tx *engine.Tx) error { return gate.RecordBypass(f.ctx, tx, f.down, other, f.load, "", t0) })
		if n := f.count("SELECT count(*) FROM AUD_RUN_INTERVENTIONS"); n != 2 {
			t.Fatalf("%d interventions; want the 2 bypasses", n)
		}
	})
}

// G17: consuming a run's decisions twice leaves one row per dependency.
func TestConsumingIsIdempotent(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		f.other(pipeline.Always, "FAILED")
		f.upRun("SUCCESS", t0, nil)
		run := f.downRun()
		if o := f.admit(f.pipelineGate(run, gate.Enforce, time.Hour), t0.Add(time.Hour), 0); !o.Pass || o.Satisfied != 2 {
			t.Fatalf("admission: %+v", o)
		}
		f.succeedDown(run)
		if first, second := f.consumeRun(run), f.consumeRun(run); first != 2 || second != 0 {
			t.Fatalf("consumed %d then %d rows", first, second)
		}
		if n := f.count("SELECT count(*) FROM AUD_DEPENDENCY_CONSUMPTION WHERE PIPELINE_RUN_ID = $1", run); n != 2 {
			t.Fatalf("%d consumption rows; want 2", n)
		}
	})
}

// An enforced pipeline gate stops at its first unsatisfied dependency; the
// zero policy enforces.
func TestEnforcedGateStopsAtTheFirstUnsatisfied(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		f.other(pipeline.Success, "IN-PROGRESS")
		o := f.evaluate(f.pipelineGate(f.downRun(), gate.Enforce, time.Hour), t0)
		if o.Pass || o.Waiting() || len(o.Decisions) != 1 || o.Decisions[0].Dependency.ID != f.pipeDep {
			t.Fatalf("%+v; want one UNSATISFIED decision and no wait for OTHER", o)
		}
		if o := f.evaluate(f.pipelineGate(f.downRun(), "", time.Hour), t0); o.Pass {
			t.Fatalf("the zero policy let the run through: %+v", o)
		}
	})
}
