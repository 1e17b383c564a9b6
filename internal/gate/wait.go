package gate

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// The pacing of looks at a running upstream.
const (
	// FirstLookPercent is when the first look is due, in percent of the
	// upstream's average run length; each later look is LookStepPercent more.
	FirstLookPercent = 70
	LookStepPercent  = 10
	// MaxLooks is how many looks one check may take, across all its
	// dependencies (AUD_GATE_WAITS.LOOKS never exceeds it).
	MaxLooks = 30
	// MinLookInterval is the shortest wait between two looks, for an
	// upstream already past its expected length.
	MinLookInterval = time.Second
	// DefaultRunLength is the run length assumed for an upstream with no
	// real run to average.
	DefaultRunLength = 300 * time.Second
)

// NextLook returns how long from now the next look at a running upstream is
// due. The upstream has been running for elapsed and its runs take average;
// the check has taken looks looks so far, and remaining is what is left of
// its budget. The look is due when the upstream has run 70 % of its average
// length, then 80 %, 90 % and so on; never sooner than MinLookInterval, and
// never after the deadline.
func NextLook(average, elapsed time.Duration, looks int, remaining time.Duration) time.Duration {
	percent := time.Duration(FirstLookPercent + LookStepPercent*looks)
	delay := max(average*percent/100-elapsed, MinLookInterval)
	return max(min(delay, remaining), 0)
}

// Budget is a check's waiting budget, kept in AUD_GATE_WAITS so that a
// restart resumes it instead of starting a new one.
type Budget struct {
	// FirstCheckAt is when the check first found an upstream running.
	FirstCheckAt time.Time
	// NextCheckAt is when the next look is due; zero once the check settled.
	NextCheckAt time.Time
	// Looks is how many looks the check has taken, at most MaxLooks.
	Looks int
	// WaitUntil is the deadline: FirstCheckAt plus Gate_wait_minutes.
	WaitUntil time.Time
}

// Waiting reports whether the check is waiting for a look.
func (b Budget) Waiting() bool { return !b.NextCheckAt.IsZero() }

// exhausted reports whether the budget allows no more waiting at now.
func (b Budget) exhausted(now time.Time) bool {
	return b.Looks >= MaxLooks || !now.Before(b.WaitUntil)
}

// LoadBudget returns the AUD_GATE_WAITS row of a run's pipeline gate (taskID
// 0) or of one of its tasks' gates, nil when the gate never waited.
func LoadBudget(ctx context.Context, q engine.Querier, runID, taskID int64) (*Budget, error) {
	var first, next, until engine.Time
	var b Budget
	err := q.QueryRowContext(ctx, `SELECT FIRST_CHECK_AT, NEXT_CHECK_AT, LOOKS, WAIT_UNTIL FROM AUD_GATE_WAITS
		WHERE PIPELINE_RUN_ID = $1 AND COALESCE(TASK_ID, 0) = $2`, runID, taskID).Scan(&first, &next, &b.Looks, &until)
	if engine.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read AUD_GATE_WAITS of pipeline_run_id=%d", runID)
	}
	b.FirstCheckAt, b.WaitUntil = first.Time, until.Time
	if next.Valid {
		b.NextCheckAt = next.Time
	}
	return &b, nil
}

// saveBudget writes the gate's AUD_GATE_WAITS row, creating it on the first
// wait.
func saveBudget(ctx context.Context, tx *engine.Tx, runID, taskID int64, b Budget) error {
	var next, task any
	if b.Waiting() {
		next = tx.TimeArg(b.NextCheckAt)
	}
	if taskID != 0 {
		task = taskID
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_GATE_WAITS SET FIRST_CHECK_AT = $3, NEXT_CHECK_AT = $4, LOOKS = $5, WAIT_UNTIL = $6
		WHERE PIPELINE_RUN_ID = $1 AND COALESCE(TASK_ID, 0) = $2`,
		runID, taskID, tx.TimeArg(b.FirstCheckAt), next, b.Looks, tx.TimeArg(b.WaitUntil))
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err == nil && n == 0 {
		_, err = tx.ExecContext(ctx, `INSERT INTO AUD_GATE_WAITS (PIPELINE_RUN_ID, TASK_ID, FIRST_CHECK_AT, NEXT_CHECK_AT, LOOKS, WAIT_UNTIL)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			runID, task, tx.TimeArg(b.FirstCheckAt), next, b.Looks, tx.TimeArg(b.WaitUntil))
	}
	return exit.Wrap(exit.EngineDB, err, "could not record the gate wait of pipeline_run_id=%d in AUD_GATE_WAITS", runID)
}

// SettleWaits clears NEXT_CHECK_AT of every gate of a run that is still
// waiting, in the caller's transaction: call it when the run ends without its
// gates settling, as when an operator cancels or marks it. The budgets stay
// as they were, for the record.
func SettleWaits(ctx context.Context, tx *engine.Tx, runID int64) error {
	_, err := tx.ExecContext(ctx, `UPDATE AUD_GATE_WAITS SET NEXT_CHECK_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND NEXT_CHECK_AT IS NOT NULL`, runID)
	return exit.Wrap(exit.EngineDB, err, "could not settle the gate waits of pipeline_run_id=%d in AUD_GATE_WAITS", runID)
}
