package run

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// upstream is what a dependency judges of its upstream task: the status its
// summary ended with, and what it wrote.
type upstream struct {
	Status      string
	RowsWritten sql.NullInt64
	TargetCount sql.NullInt64
}

// hasData reports whether the upstream wrote rows: ROWS_WRITTEN, or
// TARGET_COUNT for rows recorded before ROWS_WRITTEN existed.
func (u upstream) hasData() bool {
	if u.RowsWritten.Valid {
		return u.RowsWritten.Int64 > 0
	}
	return u.TargetCount.Valid && u.TargetCount.Int64 > 0
}

// satisfies reports whether an upstream task that ended so satisfies a
// dependency of the type, by the same rule as the gates of other pipelines
// (gate.Satisfies): SUCCESS needs SUCCESS, FAILURE needs FAILED, ALWAYS any
// ending, HAS_DATA SUCCESS with rows written. An unknown type, which graph
// validation refuses before a run, satisfies nothing.
func satisfies(depType string, u upstream) bool {
	ok, err := gate.Satisfies(depType, u.Status, u.hasData())
	return ok && err == nil
}

// unmetText says why an ended upstream does not satisfy the dependency.
func unmetText(d *pipeline.Dependency, u upstream) string {
	if d.Type == pipeline.HasData && u.Status == TaskSuccess {
		return fmt.Sprintf("%s ended SUCCESS with no rows written, which does not satisfy a HAS_DATA dependency", d.Label())
	}
	return fmt.Sprintf("%s ended %s, which does not satisfy a %s dependency", d.Label(), u.Status, d.Type)
}

// backfillCross judges a task's dependencies on other pipelines under a
// backfill's run, which checks none of them: a backfill replays history as
// if its upstreams had delivered, so SUCCESS, HAS_DATA and ALWAYS
// dependencies count as met; a FAILURE dependency does not, since nothing
// says an upstream failed. Nothing is decided or consumed.
func backfillCross(deps []*pipeline.Dependency) (met int, unmet []string) {
	for _, d := range deps {
		if d.Type == pipeline.Failure {
			unmet = append(unmet, fmt.Sprintf("upstream task %s (%s) is not evaluated in a backfill, so it is not met", d.Label(), d.Type))
			continue
		}
		met++
	}
	return met, unmet
}

// crossDeps returns the task's dependencies on tasks of other pipelines.
func crossDeps(t *pipeline.Task) []*pipeline.Dependency {
	var out []*pipeline.Dependency
	for _, d := range t.Deps {
		if d.CrossPipeline {
			out = append(out, d)
		}
	}
	return out
}

// taskAdmission is what the gate of a task's dependencies on other pipelines
// decided when an attempt of the task was about to start.
type taskAdmission struct {
	// queued is the admitted attempt, QUEUED with the gate's decisions.
	queued queued
	// nextCheck is set while the gate waits for a running upstream: nothing
	// was admitted, and the wait is kept in AUD_GATE_WAITS.
	nextCheck time.Time
	// unmet says why the gate did not pass.
	unmet string
	// skipped is set when the task was recorded SKIPPED for the run.
	skipped bool
	// notYet is set when a "no" that is not definitive (an upstream still
	// running when the budget ran out) recorded nothing, so that the
	// caller may look again later.
	notYet bool
	// bypass names the dependencies Dependency_gates let through.
	bypass string
}

// errNotYet rolls back a gate look that recorded nothing.
var errNotYet = errors.New("the gate's answer is not definitive yet")

// admitTask checks the gate of a task's dependencies on other pipelines, of
// which needed must be satisfied, in the transaction that admits its attempt.
// When the gate passes, the attempt is queued and the gate's decisions are
// recorded for it, with the GATE_BYPASS of what Dependency_gates let through.
// When it does not, the decisions are recorded without an attempt and the
// task is recorded SKIPPED (unless it has a summary already, from an earlier
// attempt); but when mayComeBack is set and the "no" is not definitive,
// nothing is recorded. A waiting gate admits nothing and holds no worker.
func (s *Supervisor) admitTask(ctx context.Context, r runRow, t *pipeline.Task, needed int, hasRow, mayComeBack bool,
	now time.Time) (taskAdmission, error) {
	var a taskAdmission
	gt := gate.TaskGate(r.ID, t, needed, s.opts.GatePolicy, s.opts.GateWait)
	err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
		o, err := gate.Evaluate(ctx, tx.Tx, gt, now)
		switch {
		case err != nil:
			return err
		case o.Waiting():
			a.nextCheck = o.NextCheckAt
			return nil
		case o.Pass:
			if err := unsettledTask(ctx, tx, r.ID, t.ID); err != nil {
				return err
			}
			if a.queued, err = queueAttempt(ctx, tx, r.ID, t.ID, nil, time.Now()); err != nil {
				return err
			}
			if err := gate.Record(ctx, tx.Tx, r.ID, a.queued.AttemptID, o.Decisions); err != nil {
				return err
			}
			a.bypass = o.BypassReason()
			if err := gate.RecordBypass(ctx, tx.Tx, r.PipelineID, r.ID, t.ID, a.bypass, now); err != nil {
				return err
			}
			return fault.Point("runner.after_decisions")
		}
		a.unmet = o.Reason()
		if mayComeBack && !o.Definitive() {
			a.notYet = true
			return errNotYet
		}
		if err := gate.Record(ctx, tx.Tx, r.ID, 0, o.Decisions); err != nil {
			return err
		}
		if hasRow {
			return nil
		}
		a.skipped = true
		_, err = skipTask(ctx, tx, r.ID, t.ID, "not run: its dependencies can never be met: "+a.unmet, time.Now())
		return err
	})
	if errors.Is(err, errNotYet) {
		err = nil
	}
	return a, err
}
