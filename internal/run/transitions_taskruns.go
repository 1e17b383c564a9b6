package run

// The transitions of AUD_TASK_RUN_LOG rows (see transitions.go).

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// skipTask records a task that will not run under the run: a SKIPPED summary
// with the reason and no attempt. A task that already has a summary is
// never rewritten as SKIPPED.
func skipTask(ctx context.Context, tx *wtx, runID, taskID int64, reason string, now time.Time) (int64, error) {
	if err := lockActiveRun(ctx, tx, runID, "skip a task of"); err != nil {
		return 0, err
	}
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO AUD_TASK_RUN_LOG
		(TASK_ID, PIPELINE_RUN_ID, START_DATE, END_DATE, STATUS, ERROR_MESSAGE, ATTEMPT_COUNT)
		VALUES ($1, $2, $3, $3, $4, $5, 0) RETURNING TASK_RUN_ID`,
		taskID, runID, tx.TimeArg(now), TaskSkipped, reason).Scan(&id)
	if err != nil && tx.isUnique(err) {
		var status string
		tx.db.QueryRowContext(ctx, "SELECT STATUS FROM AUD_TASK_RUN_LOG WHERE TASK_ID = $1 AND PIPELINE_RUN_ID = $2",
			taskID, runID).Scan(&status)
		return 0, exit.Errorf(exit.StaleTransition,
			"%s: cannot skip task_id=%d under pipeline_run_id=%d: expected no task run, found status %s",
			taskRunsTable, taskID, runID, status)
	}
	return id, exit.Wrap(exit.EngineDB, err, "could not record a skipped task in %s", taskRunsTable)
}

// taskMark is what an operator's mark writes to a task's summary.
type taskMark struct {
	// From is the summary's status as the operator read it; "" when the
	// task had no summary under the run.
	From string
	To   string
	// Message becomes the summary's ERROR_MESSAGE, such as "marked SUCCESS
	// by alice@host: loaded by hand".
	Message string
	// Rows, when set, is the row count stated: ROWS_WRITTEN and TARGET_COUNT.
	Rows *int64
}

// markTaskRun sets a task's summary under the run on an operator's request,
// creating it when the task had none, and returns its id. The summary must
// still have the status the operator read, and no attempt of it may be
// claimed or running: an attempt admitted meanwhile makes the mark stale.
// The run may have ended: the caller reopens it. Attempts are never
// rewritten.
func markTaskRun(ctx context.Context, tx *wtx, runID, taskID int64, m taskMark, now time.Time) (int64, error) {
	switch m.To {
	case TaskSuccess, TaskFailed, TaskSkipped:
	default:
		return 0, exit.Errorf(exit.StaleTransition, "%s: cannot mark task_id=%d: expected a status SUCCESS, FAILED or SKIPPED, found %s",
			taskRunsTable, taskID, m.To)
	}
	var id int64
	if m.From == "" {
		err := tx.QueryRowContext(ctx, `INSERT INTO AUD_TASK_RUN_LOG
			(TASK_ID, PIPELINE_RUN_ID, START_DATE, END_DATE, STATUS, ERROR_MESSAGE, ATTEMPT_COUNT, ROWS_WRITTEN, TARGET_COUNT)
			VALUES ($1, $2, $3, $3, $4, $5, 0, $6, $6) RETURNING TASK_RUN_ID`,
			taskID, runID, tx.TimeArg(now), m.To, m.Message, m.Rows).Scan(&id)
		if err != nil && tx.isUnique(err) {
			return 0, exit.Errorf(exit.StaleTransition,
				"%s: cannot mark task_id=%d under pipeline_run_id=%d: expected no task run, found one just created by another process",
				taskRunsTable, taskID, runID)
		}
		return id, exit.Wrap(exit.EngineDB, err, "could not record the mark of task_id=%d in %s", taskID, taskRunsTable)
	}
	err := tx.QueryRowContext(ctx, `UPDATE AUD_TASK_RUN_LOG
		SET STATUS = $3, END_DATE = $4, ERROR_MESSAGE = $5,
		    ROWS_WRITTEN = COALESCE(CAST($6 AS BIGINT), ROWS_WRITTEN),
		    TARGET_COUNT = COALESCE(CAST($6 AS BIGINT), TARGET_COUNT)
		WHERE TASK_ID = $1 AND PIPELINE_RUN_ID = $2 AND STATUS = $7
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a WHERE a.TASK_RUN_ID = AUD_TASK_RUN_LOG.TASK_RUN_ID AND a.STATUS IN ($8, $9))
		RETURNING TASK_RUN_ID`,
		taskID, runID, m.To, tx.TimeArg(now), m.Message, m.Rows, m.From, AttemptClaimed, AttemptRunning).Scan(&id)
	if engine.IsNoRows(err) {
		var status string
		var active int
		tx.QueryRowContext(ctx, `SELECT t.STATUS, (SELECT count(*) FROM AUD_TASK_ATTEMPTS a WHERE a.TASK_RUN_ID = t.TASK_RUN_ID
				AND a.STATUS IN ($3, $4))
			FROM AUD_TASK_RUN_LOG t WHERE t.TASK_ID = $1 AND t.PIPELINE_RUN_ID = $2`,
			taskID, runID, AttemptClaimed, AttemptRunning).Scan(&status, &active)
		found := "status " + status
		if active > 0 {
			found += " with an active attempt"
		}
		return 0, exit.Errorf(exit.StaleTransition,
			"%s: cannot mark task_id=%d under pipeline_run_id=%d: expected status %s and no active attempt, found %s",
			taskRunsTable, taskID, runID, m.From, found)
	}
	return id, exit.Wrap(exit.EngineDB, err, "could not record the mark of task_id=%d in %s", taskID, taskRunsTable)
}

// resetTaskRun removes a task's summary that the engine recorded SKIPPED
// without running it, so that the resumed run decides about the task again.
// A summary with attempts is never removed.
func resetTaskRun(ctx context.Context, tx *wtx, taskRunID int64) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = $1 AND STATUS = $2
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a WHERE a.TASK_RUN_ID = $1)`, taskRunID, TaskSkipped)
	missed, err := noRow(res, err)
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not reset task_run_id=%d in %s", taskRunID, taskRunsTable)
	}
	if missed {
		return exit.Errorf(exit.StaleTransition, "%s row_id=%d: cannot reset: expected status SKIPPED with no attempt",
			taskRunsTable, taskRunID)
	}
	return nil
}

// lockActiveRun checks, holding the run's row until the transaction ends,
// that the run is IN-PROGRESS: work is only added to an active run.
func lockActiveRun(ctx context.Context, tx *wtx, runID int64, action string) error {
	return lockRun(ctx, tx, runID, RunInProgress, action)
}

// lockRun checks that the run has the status, holding its row until the
// transaction ends so that no work is added to it meanwhile.
func lockRun(ctx context.Context, tx *wtx, runID int64, status, action string) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = STATUS
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $2`, runID, status)
	return runCAS(ctx, tx, res, err, runID, action, "status "+status)
}
