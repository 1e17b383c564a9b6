package gate_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// t0 is when the fixtures' history starts.
var t0 = time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)

// alice is who acts in the tests.
var alice = actor.Actor{Name: "alice@test", Kind: actor.Human}

// fixture is an Engine DB with two pipelines: DOWN depends on UP (a
// pipeline dependency), and DOWN.load on UP.publish (a task dependency),
// both of one type.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	db       *engine.DB
	b        *pipelinetest.Builder
	rec      *inspecttest.Recorder
	up, down int64
	publish  int64
	load     int64
	pipeDep  int64
	taskDep  int64
}

func newFixture(t *testing.T, db *engine.DB, depType string) *fixture {
	t.Helper()
	b := pipelinetest.New(t, db)
	f := &fixture{t: t, ctx: actor.With(context.Background(), alice), db: db, b: b, rec: inspecttest.New(t, db, alice)}
	f.up = b.Pipeline("UP", pipeline.Full)
	f.publish = b.Task("UP", "publish", pipeline.HandlerSQL, nil)
	f.down = b.Pipeline("DOWN", pipeline.Full)
	f.load = b.Task("DOWN", "load", pipeline.HandlerSQL, nil)
	f.pipeDep = b.PipelineDep("DOWN", "UP", depType)
	f.taskDep = b.Dep("DOWN", "load", "UP", "publish", depType)
	return f
}

// graph loads DOWN's definition.
func (f *fixture) graph() *pipeline.Graph {
	f.t.Helper()
	g, err := pipeline.Load(f.ctx, f.db, "DOWN")
	if err != nil {
		f.t.Fatal(err)
	}
	return g
}

// pipelineGate is the pipeline gate of a DOWN run.
func (f *fixture) pipelineGate(runID int64, policy gate.Policy, wait time.Duration) gate.Gate {
	return gate.PipelineGate(runID, f.graph(), policy, wait)
}

// taskGate is the gate of DOWN.load under a DOWN run, needing its one
// cross-pipeline dependency.
func (f *fixture) taskGate(runID int64, policy gate.Policy, wait time.Duration) gate.Gate {
	g := f.graph()
	return gate.TaskGate(runID, g.Task("load"), 1, policy, wait)
}

// upRun records a run of UP with the status, started at start (ended a
// minute later unless it is IN-PROGRESS or QUEUED), whose publish task has
// the same status and wrote rows (nil: NULL). It returns the run and the
// task row (0 when the run has none: QUEUED).
func (f *fixture) upRun(status string, start time.Time, rows *int64) (runID, taskRunID int64) {
	f.t.Helper()
	end := start.Add(time.Minute)
	if status == "IN-PROGRESS" || status == "QUEUED" {
		end = time.Time{}
	}
	runID = f.rec.Run(f.up, inspecttest.Run{Status: status, Start: start, End: end})
	if status != "QUEUED" {
		taskRunID = f.rec.TaskRun(runID, f.publish, inspecttest.TaskRun{Status: status, Start: start, End: end, RowsWritten: rows})
	}
	return runID, taskRunID
}

// downRun records a QUEUED run of DOWN, to be admitted.
func (f *fixture) downRun() int64 {
	f.t.Helper()
	return f.rec.Run(f.down, inspecttest.Run{Status: "QUEUED", Start: t0})
}

// tx runs fn in one engine transaction as alice.
func (f *fixture) tx(fn func(tx *engine.Tx) error) {
	f.t.Helper()
	if err := f.db.Tx(f.ctx, fn); err != nil {
		f.t.Fatal(err)
	}
}

// inTx returns what fn returns in one engine transaction as alice.
func inTx[T any](f *fixture, fn func(tx *engine.Tx) (T, error)) T {
	f.t.Helper()
	var v T
	f.tx(func(tx *engine.Tx) (err error) {
		v, err = fn(tx)
		return err
	})
	return v
}

// evaluate checks the gate once at now.
func (f *fixture) evaluate(g gate.Gate, now time.Time) gate.Outcome {
	f.t.Helper()
	return inTx(f, func(tx *engine.Tx) (gate.Outcome, error) { return gate.Evaluate(f.ctx, tx, g, now) })
}

// admit checks the gate once at now and, when it settled, records its
// decisions for the attempt (0: none) in the same transaction.
func (f *fixture) admit(g gate.Gate, now time.Time, attemptID int64) gate.Outcome {
	f.t.Helper()
	var o gate.Outcome
	f.tx(func(tx *engine.Tx) (err error) {
		if o, err = gate.Evaluate(f.ctx, tx, g, now); err != nil || o.Waiting() {
			return err
		}
		return gate.Record(f.ctx, tx, g.RunID, attemptID, o.Decisions)
	})
	return o
}

// exec runs one statement as alice.
func (f *fixture) exec(query string, args ...any) {
	f.t.Helper()
	f.tx(func(tx *engine.Tx) error {
		_, err := tx.ExecContext(f.ctx, query, args...)
		return err
	})
}

// scan reads one row into dest.
func (f *fixture) scan(query string, args []any, dest ...any) {
	f.t.Helper()
	if err := f.db.QueryRowContext(f.ctx, query, args...).Scan(dest...); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
}

// count returns a count(*) query's answer.
func (f *fixture) count(query string, args ...any) int {
	f.t.Helper()
	var n int
	f.scan(query, args, &n)
	return n
}

// succeedDown ends a DOWN run SUCCESS, as finalization would.
func (f *fixture) succeedDown(runID int64) {
	f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = $2 WHERE PIPELINE_RUN_ID = $1",
		runID, f.db.TimeArg(t0.Add(time.Hour)))
}

// consumeRun consumes a DOWN run's pipeline-gate decisions and returns how
// many rows that added.
func (f *fixture) consumeRun(runID int64) int64 {
	f.t.Helper()
	return inTx(f, func(tx *engine.Tx) (int64, error) { return gate.ConsumeRun(f.ctx, tx, runID) })
}

// consumeAttempt consumes an attempt's task-gate decisions and returns how
// many rows that added.
func (f *fixture) consumeAttempt(attemptID int64) int64 {
	f.t.Helper()
	return inTx(f, func(tx *engine.Tx) (int64, error) { return gate.ConsumeAttempt(f.ctx, tx, attemptID) })
}

// other makes DOWN depend on a pipeline OTHER too, with the type, and
// records a run of OTHER with the status.
func (f *fixture) other(depType, status string) {
	f.t.Helper()
	f.rec.Run(f.b.Pipeline("OTHER", pipeline.Full), inspectRunAt(status, t0))
	f.b.PipelineDep("DOWN", "OTHER", depType)
}

// attempt records DOWN.load's row and one attempt of it with the status
// under the run, and returns the attempt.
func (f *fixture) attempt(runID int64, status string) int64 {
	f.t.Helper()
	taskRun := f.rec.TaskRun(runID, f.load, inspecttest.TaskRun{Status: status, Start: t0, End: t0.Add(time.Minute)})
	return f.rec.Attempt(taskRun, 1, status, "")
}

func rows(n int64) *int64 { return &n }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// inspectRunAt is a run with the status started at start, ended a minute
// later unless it is IN-PROGRESS.
func inspectRunAt(status string, start time.Time) inspecttest.Run {
	r := inspecttest.Run{Status: status, Start: start}
	if status != "IN-PROGRESS" {
		r.End = start.Add(time.Minute)
	}
	return r
}

// backfillRun is a backfill's run with the status, started at t0.
func backfillRun(status string) inspecttest.Run {
	r := inspectRunAt(status, t0)
	r.Backfill, r.TriggerKind = true, "BACKFILL"
	return r
}

// taskRun is a task row with the status, started at start and ended a
// minute later, with its rows written and target count (nil: NULL).
func taskRun(status string, start time.Time, written, target *int64) inspecttest.TaskRun {
	return inspecttest.TaskRun{Status: status, Start: start, End: start.Add(time.Minute), RowsWritten: written, TargetCount: target}
}
