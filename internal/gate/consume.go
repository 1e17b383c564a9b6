package gate

import (
	"context"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Consumption is decided at admission, not at the end: a downstream consumes
// exactly the upstream outputs its SATISFIED decisions selected, with the
// revisions they selected. A newer upstream run, a repair or a metadata
// change after admission changes nothing, BYPASSED and UNSATISFIED
// decisions are never consumed, and consuming twice adds nothing.

// consumeRunQuery consumes a successful run's ($1) pipeline-gate decisions
// that are SATISFIED ($2), when the run is SUCCESS ($3).
const consumeRunQuery = `INSERT INTO AUD_DEPENDENCY_CONSUMPTION (PIPELINE_DEPENDENCY_ID, PIPELINE_ID, PIPELINE_RUN_ID,
		DEPENDS_ON_PIPELINE_ID, CONSUMED_PIPELINE_RUN_ID, CONSUMED_REVISION)
	SELECT d.PIPELINE_DEPENDENCY_ID, r.PIPELINE_ID, d.PIPELINE_RUN_ID, u.PIPELINE_ID, d.SELECTED_PIPELINE_RUN_ID,
		d.SELECTED_REVISION
	FROM AUD_GATE_DECISIONS d
	JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = d.PIPELINE_RUN_ID
	JOIN AUD_PIPELINES_RUN_LOG u ON u.PIPELINE_RUN_ID = d.SELECTED_PIPELINE_RUN_ID
	WHERE d.PIPELINE_RUN_ID = $1 AND d.ATTEMPT_ID IS NULL AND d.PIPELINE_DEPENDENCY_ID IS NOT NULL
		AND d.RESULT = $2 AND d.SELECTED_REVISION IS NOT NULL AND r.STATUS = $3
		AND NOT EXISTS (SELECT 1 FROM AUD_DEPENDENCY_CONSUMPTION c
			WHERE c.PIPELINE_RUN_ID = d.PIPELINE_RUN_ID AND c.PIPELINE_DEPENDENCY_ID = d.PIPELINE_DEPENDENCY_ID
			AND c.CONSUMED_PIPELINE_RUN_ID = d.SELECTED_PIPELINE_RUN_ID AND c.CONSUMED_REVISION = d.SELECTED_REVISION)
	ORDER BY d.DECISION_ID`

// consumeAttemptQuery consumes a successful attempt's ($1) task-gate
// decisions that are SATISFIED ($2), when the attempt is SUCCESS ($3).
const consumeAttemptQuery = `INSERT INTO AUD_DEPENDENCY_CONSUMPTION (TASK_DEPENDENCY_ID, PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID,
		DEPENDS_ON_PIPELINE_ID, CONSUMED_PIPELINE_RUN_ID, CONSUMED_TASK_RUN_ID, CONSUMED_REVISION)
	SELECT d.TASK_DEPENDENCY_ID, r.PIPELINE_ID, d.PIPELINE_RUN_ID, t.TASK_ID, u.PIPELINE_ID, d.SELECTED_PIPELINE_RUN_ID,
		d.SELECTED_TASK_RUN_ID, d.SELECTED_REVISION
	FROM AUD_GATE_DECISIONS d
	JOIN AUD_TASK_ATTEMPTS a ON a.ATTEMPT_ID = d.ATTEMPT_ID
	JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
	JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = d.PIPELINE_RUN_ID
	JOIN AUD_PIPELINES_RUN_LOG u ON u.PIPELINE_RUN_ID = d.SELECTED_PIPELINE_RUN_ID
	WHERE d.ATTEMPT_ID = $1 AND d.TASK_DEPENDENCY_ID IS NOT NULL
		AND d.RESULT = $2 AND d.SELECTED_REVISION IS NOT NULL AND a.STATUS = $3
		AND NOT EXISTS (SELECT 1 FROM AUD_DEPENDENCY_CONSUMPTION c
			WHERE c.PIPELINE_RUN_ID = d.PIPELINE_RUN_ID AND c.TASK_DEPENDENCY_ID = d.TASK_DEPENDENCY_ID
			AND c.CONSUMED_TASK_RUN_ID = d.SELECTED_TASK_RUN_ID AND c.CONSUMED_REVISION = d.SELECTED_REVISION)
	ORDER BY d.DECISION_ID`

// ConsumeRun records what a run consumed through its pipeline dependencies,
// from its pipeline gate's SATISFIED decisions, and returns how many rows it
// added. Call it in the finalization transaction, after the run's status is
// set: a run that did not end SUCCESS consumes nothing.
func ConsumeRun(ctx context.Context, tx *engine.Tx, runID int64) (int64, error) {
	n, err := consume(ctx, tx, consumeRunQuery, runID, string(records.RunSuccess))
	return n, exit.Wrap(exit.EngineDB, err, "could not record what pipeline_run_id=%d consumed in AUD_DEPENDENCY_CONSUMPTION", runID)
}

// ConsumeAttempt records what a task consumed through its dependencies on
// other pipelines, from its attempt's SATISFIED decisions, and returns how
// many rows it added. Call it in the transaction that records the attempt's
// success, after the attempt is SUCCESS: any other attempt consumes nothing.
func ConsumeAttempt(ctx context.Context, tx *engine.Tx, attemptID int64) (int64, error) {
	n, err := consume(ctx, tx, consumeAttemptQuery, attemptID, string(records.AttemptSuccess))
	return n, exit.Wrap(exit.EngineDB, err, "could not record what attempt_id=%d consumed in AUD_DEPENDENCY_CONSUMPTION", attemptID)
}

// consume runs a consumption query for the run or attempt id, which must
// have ended with the status.
func consume(ctx context.Context, tx *engine.Tx, query string, id int64, status string) (int64, error) {
	res, err := tx.ExecContext(ctx, query, id, string(Satisfied), status)
	return affected(res, err)
}
