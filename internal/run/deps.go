package run

import (
	"context"
	"errors"
	"time"

	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

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
			if a.queued, err = queueAttempt(ctx, tx, r.ID, t.ID, queueing{unsettled: true}, time.Now()); err != nil {
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
