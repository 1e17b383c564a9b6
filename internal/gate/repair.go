package gate

import (
	"context"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
)

// A run's output has a revision (OUTPUT_REVISION, 1 when the run is
// created). Reopening an ended run starts a repair (REPAIR_PENDING 'Y'); a
// successful re-ending publishes it as the next revision, once, and a failed
// or cancelled repair publishes nothing and stays pending. Dependencies that
// consume repairs see a published revision as new output of the same run.
// The run engine owns the status changes; these functions own the flag and
// the revision, in the same transaction as the status change.

// BeginRepair marks a reopened run's repair pending. Call it in the
// transaction that puts the ended run back IN-PROGRESS (and records its
// REOPEN intervention), after the status change; a run that is not
// IN-PROGRESS is a stale transition (exit 20).
func BeginRepair(ctx context.Context, tx *engine.Tx, runID int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET REPAIR_PENDING = 'Y'
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $2`, runID, string(records.RunInProgress))
	n, err := affected(res, err)
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not mark the repair of pipeline_run_id=%d pending", runID)
	}
	if n == 0 {
		return exit.Errorf(exit.StaleTransition,
			"AUD_PIPELINES_RUN_LOG row_id=%d: cannot begin a repair: expected status %s", runID, records.RunInProgress)
	}
	return nil
}

// PublishRepair publishes a pending repair of a run that ended SUCCESS:
// OUTPUT_REVISION goes up by one and REPAIR_PENDING back to 'N'. Call it in
// the transaction that ends the run (or marks it SUCCESS), after the status
// change. It reports whether it published: a run with no pending repair, or
// that did not end SUCCESS, is left as it is, so a second finalizer cannot
// publish the same output twice.
func PublishRepair(ctx context.Context, tx *engine.Tx, runID int64) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET OUTPUT_REVISION = OUTPUT_REVISION + 1, REPAIR_PENDING = 'N'
		WHERE PIPELINE_RUN_ID = $1 AND REPAIR_PENDING = 'Y' AND STATUS = $2`, runID, string(records.RunSuccess))
	n, err := affected(res, err)
	if err != nil {
		return false, exit.Wrap(exit.EngineDB, err, "could not publish the repair of pipeline_run_id=%d", runID)
	}
	return n == 1, nil
}

// Revision returns a run's published OUTPUT_REVISION and whether a repair
// of it is pending.
func Revision(ctx context.Context, q engine.Querier, runID int64) (revision int, pending bool, err error) {
	var flag string
	err = q.QueryRowContext(ctx, "SELECT OUTPUT_REVISION, REPAIR_PENDING FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1",
		runID).Scan(&revision, &flag)
	if engine.IsNoRows(err) {
		return 0, false, exit.Errorf(exit.RunState, "AUD_PIPELINES_RUN_LOG has no pipeline_run_id=%d", runID)
	}
	if err != nil {
		return 0, false, exit.Wrap(exit.EngineDB, err, "could not read the revision of pipeline_run_id=%d", runID)
	}
	return revision, flag == "Y", nil
}

// affected returns how many rows a statement changed.
func affected(res interface{ RowsAffected() (int64, error) }, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
