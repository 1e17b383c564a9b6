package run

// This file owns every status write of runs, task runs and attempts. Each
// transition is a compare-and-set on the row id, the status it expects and,
// where a lease is involved, the owner: when the row is not as expected the
// write changes nothing and returns a StaleTransition error (exit 20) saying
// what was expected and what was found. Nothing else in the package updates
// STATUS, OWNER_ID or LEASE_EXPIRES_AT.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/handler"
)

const (
	runsTable     = "AUD_PIPELINES_RUN_LOG"
	taskRunsTable = "AUD_TASK_RUN_LOG"
	attemptsTable = "AUD_TASK_ATTEMPTS"
)

// stale is the error of a compare-and-set that found the row changed.
func stale(table string, id int64, action, expected, found string) error {
	return exit.Errorf(exit.StaleTransition, "%s row_id=%d: cannot %s: expected %s, found %s",
		table, id, action, expected, found)
}

// noRow reports whether a statement changed no row.
func noRow(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 0, err
}

// ---------------------------------------------------------------------------
// Runs.
// ---------------------------------------------------------------------------

// newRun is what a new run row is created with.
type newRun struct {
	PipelineID  int64
	Key         string
	TriggerKind string
	RunDate     string // YYYY-MM-DD
	Backfill    bool
}

// insertRun inserts a QUEUED run and returns its id. A key the pipeline
// already has is a stale transition.
func insertRun(ctx context.Context, tx *wtx, r newRun) (int64, error) {
	backfill := "N"
	if r.Backfill {
		backfill = "Y"
	}
	var date any
	if r.RunDate != "" {
		date = r.RunDate
	}
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO AUD_PIPELINES_RUN_LOG
		(PIPELINE_ID, STATUS, RUN_DATE, BACKFILL, RUN_KEY, TRIGGER_KIND)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING PIPELINE_RUN_ID`,
		r.PipelineID, RunQueued, date, backfill, r.Key, r.TriggerKind).Scan(&id)
	if err != nil {
		if tx.isUnique(err) {
			return 0, exit.Errorf(exit.StaleTransition,
				"%s: another run of the pipeline already has the run key %q", runsTable, r.Key)
		}
		return 0, exit.Wrap(exit.EngineDB, err, "could not insert a run into %s", runsTable)
	}
	return id, nil
}

// admitRun moves a QUEUED run of the pipeline to IN-PROGRESS under owner's
// lease, or with no owner when owner is "" (a run started for an
// orchestrator or a later supervisor). Another active run of the pipeline
// makes it stale: the database allows one.
func admitRun(ctx context.Context, tx *wtx, pipelineID, id int64, owner string, now time.Time) error {
	var holder, lease any
	if owner != "" {
		holder, lease = owner, tx.TimeArg(now.Add(LeaseDuration))
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, OWNER_ID = $3, LEASE_EXPIRES_AT = $4, START_DATE = $5
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $6`,
		id, RunInProgress, holder, lease, tx.TimeArg(now), RunQueued)
	if err != nil && tx.isUnique(err) {
		// A failed statement aborts a PostgreSQL transaction: look outside it.
		other, _ := activeRunOf(ctx, tx.db, pipelineID)
		return stale(runsTable, id, "start", "no other IN-PROGRESS run of the pipeline",
			fmt.Sprintf("another process started pipeline_run_id=%d", other))
	}
	return runCAS(ctx, tx, res, err, id, "start", "status QUEUED")
}

// activeRunOf returns the IN-PROGRESS run of the pipeline, 0 when none.
func activeRunOf(ctx context.Context, q engine.Querier, pipelineID int64) (int64, error) {
	var other int64
	err := q.QueryRowContext(ctx, `SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 AND STATUS = $2`,
		pipelineID, RunInProgress).Scan(&other)
	if engine.IsNoRows(err) {
		return 0, nil
	}
	return other, err
}

// takeRun gives an unowned IN-PROGRESS run to owner, to resume it. A run
// another supervisor holds is stale: "is supervised by <owner>".
func takeRun(ctx context.Context, tx *wtx, id int64, owner string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET OWNER_ID = $2, LEASE_EXPIRES_AT = $3
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $4 AND OWNER_ID IS NULL`,
		id, owner, tx.TimeArg(now.Add(LeaseDuration)), RunInProgress)
	return runCAS(ctx, tx, res, err, id, "supervise", "status IN-PROGRESS with no owner")
}

// renewRun extends owner's live lease on an IN-PROGRESS run.
func renewRun(ctx context.Context, tx *wtx, id int64, owner string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET LEASE_EXPIRES_AT = $3
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $4 AND OWNER_ID = $2 AND LEASE_EXPIRES_AT >= $5`,
		id, owner, tx.TimeArg(now.Add(LeaseDuration)), RunInProgress, tx.TimeArg(now))
	return runCAS(ctx, tx, res, err, id, "renew the lease", fmt.Sprintf("status IN-PROGRESS owner='%s' with a live lease", owner))
}

// releaseRun gives up owner's lease on a run that stays IN-PROGRESS, so the
// next supervisor may resume it at once.
func releaseRun(ctx context.Context, tx *wtx, id int64, owner string) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND OWNER_ID = $2`, id, owner)
	return runCAS(ctx, tx, res, err, id, "release", fmt.Sprintf("owner='%s'", owner))
}

// releaseAbandonedRun takes owner's lease, ending before cutoff, away from
// an IN-PROGRESS run that has no live attempt at now, so another supervisor
// can resume it.
func releaseAbandonedRun(ctx context.Context, tx *wtx, id int64, owner string, cutoff, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $2 AND OWNER_ID = $3 AND LEASE_EXPIRES_AT < $4
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			WHERE t.PIPELINE_RUN_ID = $1 AND a.STATUS IN ($5, $6) AND a.LEASE_EXPIRES_AT >= $7)`,
		id, RunInProgress, owner, tx.TimeArg(cutoff), AttemptClaimed, AttemptRunning, tx.TimeArg(now))
	return runCAS(ctx, tx, res, err, id, "release",
		fmt.Sprintf("status IN-PROGRESS owner='%s' with a lease ended before %s and no live attempt", owner, cutoff.UTC().Format(time.RFC3339)))
}

// runEnding is how a run ends.
type runEnding struct {
	Status string
	// SLA is MET or BREACHED, "" when the pipeline has no SLA. A run keeps
	// the SLA status decided first.
	SLA string
}

// finishRun ends an IN-PROGRESS run held by owner ("" for a run nobody
// holds) while no attempt of it is claimed or running. The engine ends it
// (ENDED_BY is the SYSTEM actor) and gives up the lease. A successful end of
// a reopened run publishes its repair (gate.PublishRepair).
func finishRun(ctx context.Context, tx *wtx, id int64, owner string, e runEnding, now time.Time) error {
	switch e.Status {
	case RunSuccess, RunFailed, RunSkipped, RunCancelled:
	default:
		return stale(runsTable, id, "finish", "an ending status", e.Status)
	}
	var sla any
	if e.SLA != "" {
		sla = e.SLA
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = $3, ENDED_BY = $4, ENDED_BY_KIND = $5, OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL,
		    SLA_STATUS = COALESCE(SLA_STATUS, $6)
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $7 AND COALESCE(OWNER_ID, '') = $8
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			WHERE t.PIPELINE_RUN_ID = $1 AND a.STATUS IN ($9, $10))`,
		id, e.Status, tx.TimeArg(now), actor.SystemActor.Name, string(actor.SystemActor.Kind), sla,
		RunInProgress, owner, AttemptClaimed, AttemptRunning)
	if err := runCAS(ctx, tx, res, err, id, "finish",
		fmt.Sprintf("status IN-PROGRESS owner='%s' and no claimed or running attempt", owner)); err != nil {
		return err
	}
	_, err = gate.PublishRepair(ctx, tx.Tx, id)
	return err
}

// endQueuedRun ends a QUEUED run that was never admitted: SKIPPED when its
// pipeline gate was not satisfied. The engine ends it (the SYSTEM actor).
func endQueuedRun(ctx context.Context, tx *wtx, id int64, status string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = $3, ENDED_BY = $4, ENDED_BY_KIND = $5
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $6`,
		id, status, tx.TimeArg(now), actor.SystemActor.Name, string(actor.SystemActor.Kind), RunQueued)
	return runCAS(ctx, tx, res, err, id, "end", "status QUEUED")
}

// markRun sets a run's status on an operator's request, ending it now when
// it had not ended: the run must still be as the operator read it (status
// and owner), and no attempt of it may be claimed or running. The operator
// is the run's ending actor. A SUCCESS mark of a pending repair publishes
// it.
func markRun(ctx context.Context, tx *wtx, id int64, from, owner, to string, now time.Time) error {
	switch to {
	case RunSuccess, RunFailed, RunSkipped:
	default:
		return stale(runsTable, id, "mark", "a status SUCCESS, FAILED or SKIPPED", to)
	}
	a := actor.From(ctx)
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = COALESCE(END_DATE, $3), ENDED_BY = $4, ENDED_BY_KIND = $5,
		    OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $6 AND COALESCE(OWNER_ID, '') = $7
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			WHERE t.PIPELINE_RUN_ID = $1 AND a.STATUS IN ($8, $9))`,
		id, to, tx.TimeArg(now), a.Name, string(a.Kind), from, owner, AttemptClaimed, AttemptRunning)
	if err := runCAS(ctx, tx, res, err, id, "mark",
		fmt.Sprintf("status %s owner='%s' and no claimed or running attempt", from, owner)); err != nil {
		return err
	}
	if to == RunSuccess {
		if _, err := gate.PublishRepair(ctx, tx.Tx, id); err != nil {
			return err
		}
	}
	return gate.SettleWaits(ctx, tx.Tx, id)
}

// cancelRun ends a QUEUED or IN-PROGRESS run CANCELLED on an operator's
// request: the run must still have the status the operator read, and its
// active attempts must have been cancelled first. The operator is the run's
// ending actor; its gate waits are settled.
func cancelRun(ctx context.Context, tx *wtx, id int64, from string, now time.Time) error {
	a := actor.From(ctx)
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = $3, ENDED_BY = $4, ENDED_BY_KIND = $5, OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $6 AND STATUS IN ($7, $8)
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			WHERE t.PIPELINE_RUN_ID = $1 AND a.STATUS IN ($9, $10))`,
		id, RunCancelled, tx.TimeArg(now), a.Name, string(a.Kind), from, RunQueued, RunInProgress, AttemptClaimed, AttemptRunning)
	if err := runCAS(ctx, tx, res, err, id, "cancel", "status "+from+" and no claimed or running attempt"); err != nil {
		return err
	}
	return gate.SettleWaits(ctx, tx.Tx, id)
}

// insertEndedRun records a run that ended as soon as it was recorded, on an
// operator's request: a stand-in run, or a run skipped on purpose. The
// operator starts and ends it.
func insertEndedRun(ctx context.Context, tx *wtx, r newRun, status string, now time.Time) (int64, error) {
	a := actor.From(ctx)
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO AUD_PIPELINES_RUN_LOG
		(PIPELINE_ID, STATUS, START_DATE, END_DATE, RUN_DATE, BACKFILL, RUN_KEY, TRIGGER_KIND, ENDED_BY, ENDED_BY_KIND)
		VALUES ($1, $2, $3, $3, $4, 'N', $5, $6, $7, $8) RETURNING PIPELINE_RUN_ID`,
		r.PipelineID, status, tx.TimeArg(now), r.RunDate, r.Key, r.TriggerKind, a.Name, string(a.Kind)).Scan(&id)
	if err != nil && tx.isUnique(err) {
		return 0, exit.Errorf(exit.StaleTransition,
			"%s: another run of the pipeline already has the run key %q", runsTable, r.Key)
	}
	return id, exit.Wrap(exit.EngineDB, err, "could not record a run in %s", runsTable)
}

// reopenRun puts an ended run back IN-PROGRESS for a repair
// (gate.BeginRepair: REPAIR_PENDING 'Y') and records the REOPEN intervention
// with the reason, in the same transaction. A CANCELLED
// run is never reopened; another active run of the pipeline makes it stale.
func reopenRun(ctx context.Context, tx *wtx, id int64, taskID int64, reason string) error {
	var pipelineID int64
	var from string
	err := tx.QueryRowContext(ctx, "SELECT PIPELINE_ID, STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", id).
		Scan(&pipelineID, &from)
	if engine.IsNoRows(err) {
		return stale(runsTable, id, "reopen", "an ended run", "missing")
	}
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not read %s", runsTable)
	}
	if !runEnded(from) || from == RunCancelled {
		return stale(runsTable, id, "reopen", "status SUCCESS, FAILED or SKIPPED", "status "+from)
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = NULL, ENDED_BY = NULL, ENDED_BY_KIND = NULL
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $3`, id, RunInProgress, from)
	if err != nil && tx.isUnique(err) {
		other, _ := activeRunOf(ctx, tx.db, pipelineID)
		return stale(runsTable, id, "reopen", "no other IN-PROGRESS run of the pipeline",
			fmt.Sprintf("pipeline_run_id=%d IN-PROGRESS", other))
	}
	if err := runCAS(ctx, tx, res, err, id, "reopen", "status "+from); err != nil {
		return err
	}
	if err := gate.BeginRepair(ctx, tx.Tx, id); err != nil {
		return err
	}
	return recordIntervention(ctx, tx, intervention{
		PipelineID: pipelineID, RunID: id, TaskID: taskID, Action: "REOPEN",
		From: from, To: RunInProgress, Reason: reason,
	})
}

// runCAS turns the result of a run update into nil or the stale error that
// describes the row as it is.
func runCAS(ctx context.Context, tx *wtx, res sql.Result, err error, id int64, action, expected string) error {
	missed, err := noRow(res, err)
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not %s pipeline_run_id=%d in %s", action, id, runsTable)
	}
	if !missed {
		return nil
	}
	var status string
	var owner sql.NullString
	var lease engine.Time
	var busy int
	err = tx.QueryRowContext(ctx, `SELECT r.STATUS, r.OWNER_ID, r.LEASE_EXPIRES_AT,
		(SELECT count(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
		 WHERE t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND a.STATUS IN ($2, $3))
		FROM AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = $1`, id, AttemptClaimed, AttemptRunning).
		Scan(&status, &owner, &lease, &busy)
	if engine.IsNoRows(err) {
		return stale(runsTable, id, action, expected, "missing")
	}
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not read %s", runsTable)
	}
	found := "status " + status
	if owner.Valid {
		found += fmt.Sprintf(" owner='%s'", owner.String)
		if lease.Valid {
			found += " (is supervised by " + owner.String + ", lease until " + lease.Time.Format(time.RFC3339) + ")"
		}
	}
	if busy > 0 {
		found += fmt.Sprintf(" with %d claimed or running attempt(s)", busy)
	}
	return stale(runsTable, id, action, expected, found)
}

// intervention is one AUD_RUN_INTERVENTIONS row. Empty texts and a nil
// count are recorded as NULL.
type intervention struct {
	PipelineID, RunID, TaskID int64
	Action, From, To, Reason  string
	// TargetCount is the row count an operator stated (mark --rows).
	TargetCount *int64
	// PreviousMessage is the task's ERROR_MESSAGE before the change.
	PreviousMessage string
}

// recordIntervention appends an operator intervention, requested by the
// transaction's actor.
func recordIntervention(ctx context.Context, tx *wtx, iv intervention) error {
	var task any
	if iv.TaskID != 0 {
		task = iv.TaskID
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO AUD_RUN_INTERVENTIONS
		(PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, ACTION, FROM_STATUS, TO_STATUS, TARGET_COUNT, PREVIOUS_MESSAGE, REASON,
		 REQUESTED_BY, REQUESTED_BY_KIND)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		iv.PipelineID, iv.RunID, task, iv.Action, nullText(iv.From), nullText(iv.To), iv.TargetCount,
		nullText(iv.PreviousMessage), iv.Reason, actor.From(ctx).Name, string(actor.From(ctx).Kind))
	return exit.Wrap(exit.EngineDB, err, "could not record the %s intervention", iv.Action)
}

// nullText is NULL for an empty text.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// ---------------------------------------------------------------------------
// Task runs.
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Attempts.
// ---------------------------------------------------------------------------

// unsettledTask checks that the task's summary under the run, if it has
// one, has not ended SUCCESS or SKIPPED: a first attempt is not queued over
// a task that was settled (by an operator's mark, say) after the
// supervisor last read it.
func unsettledTask(ctx context.Context, tx *wtx, runID, taskID int64) error {
	var status string
	err := tx.QueryRowContext(ctx, "SELECT STATUS FROM AUD_TASK_RUN_LOG WHERE TASK_ID = $1 AND PIPELINE_RUN_ID = $2",
		taskID, runID).Scan(&status)
	switch {
	case engine.IsNoRows(err):
		return nil
	case err != nil:
		return exit.Wrap(exit.EngineDB, err, "could not read the task run of task_id=%d", taskID)
	case status == TaskSuccess || status == TaskSkipped:
		return exit.Errorf(exit.StaleTransition, "%s: cannot queue task_id=%d under pipeline_run_id=%d: expected no settled task run, found status %s",
			taskRunsTable, taskID, runID, status)
	}
	return nil
}

// queued is an attempt just queued.
type queued struct {
	TaskRunID int64
	AttemptID int64
	Number    int
}

// queueAttempt queues the next attempt of a task under an IN-PROGRESS run,
// creating the task's summary row on its first attempt, and puts the summary
// back IN-PROGRESS with the new attempt count. notBefore is set for a retry
// (the attempt may not be claimed earlier) and nil for a first execution. A
// task run with an active attempt already is stale: the database allows one.
func queueAttempt(ctx context.Context, tx *wtx, runID, taskID int64, notBefore *time.Time, now time.Time) (queued, error) {
	var q queued
	if err := lockActiveRun(ctx, tx, runID, "queue an attempt under"); err != nil {
		return q, err
	}
	var status string
	var count int
	err := tx.QueryRowContext(ctx, `SELECT TASK_RUN_ID, STATUS, ATTEMPT_COUNT FROM AUD_TASK_RUN_LOG
		WHERE TASK_ID = $1 AND PIPELINE_RUN_ID = $2`, taskID, runID).Scan(&q.TaskRunID, &status, &count)
	if engine.IsNoRows(err) {
		// The task's first attempt: its summary starts at attempt 1.
		q.Number = 1
		err = tx.QueryRowContext(ctx, `INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, START_DATE, STATUS, ATTEMPT_COUNT)
			VALUES ($1, $2, $3, $4, 1) RETURNING TASK_RUN_ID`, taskID, runID, tx.TimeArg(now), TaskInProgress).Scan(&q.TaskRunID)
		if err != nil && tx.isUnique(err) {
			return q, exit.Errorf(exit.StaleTransition,
				"%s: cannot queue task_id=%d under pipeline_run_id=%d: expected no task run, found one just created by another process",
				taskRunsTable, taskID, runID)
		}
		if err != nil {
			return q, exit.Wrap(exit.EngineDB, err, "could not create the task run of task_id=%d", taskID)
		}
		return q, insertAttempt(ctx, tx, &q, notBefore, now)
	}
	if err != nil {
		return q, exit.Wrap(exit.EngineDB, err, "could not read the task run of task_id=%d", taskID)
	}
	// Numbering continues both the persisted attempts and the count of a
	// summary older than the attempt history.
	var last int
	if err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(ATTEMPT_NUMBER), 0) FROM AUD_TASK_ATTEMPTS WHERE TASK_RUN_ID = $1",
		q.TaskRunID).Scan(&last); err != nil {
		return q, exit.Wrap(exit.EngineDB, err, "could not number the attempt of task_run_id=%d", q.TaskRunID)
	}
	if status == TaskSuccess || status == TaskFailed || status == TaskCancelled {
		last = max(last, count)
	}
	q.Number = last + 1
	if err := insertAttempt(ctx, tx, &q, notBefore, now); err != nil {
		return q, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE AUD_TASK_RUN_LOG SET STATUS = $2, ATTEMPT_COUNT = $3, END_DATE = NULL
		WHERE TASK_RUN_ID = $1`, q.TaskRunID, TaskInProgress, q.Number)
	return q, exit.Wrap(exit.EngineDB, err, "could not update task_run_id=%d", q.TaskRunID)
}

// insertAttempt inserts attempt q.Number of q.TaskRunID, QUEUED, and sets
// q.AttemptID. A task run with an active attempt already is stale.
func insertAttempt(ctx context.Context, tx *wtx, q *queued, notBefore *time.Time, now time.Time) error {
	var nb any
	if notBefore != nil {
		nb = tx.TimeArg(*notBefore)
	}
	err := tx.QueryRowContext(ctx, `INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, NOT_BEFORE)
		VALUES ($1, $2, $3, $4, $5) RETURNING ATTEMPT_ID`,
		q.TaskRunID, q.Number, AttemptQueued, tx.TimeArg(now), nb).Scan(&q.AttemptID)
	if err != nil && tx.isUnique(err) {
		return exit.Errorf(exit.StaleTransition,
			"%s: cannot queue attempt %d of task_run_id=%d: expected no active attempt, found an active attempt",
			attemptsTable, q.Number, q.TaskRunID)
	}
	return exit.Wrap(exit.EngineDB, err, "could not queue an attempt of task_run_id=%d", q.TaskRunID)
}

// claimAttempt gives a due QUEUED attempt to owner with a fresh lease,
// recording this process as the one that runs it.
func claimAttempt(ctx context.Context, tx *wtx, id int64, owner string, now time.Time) error {
	p := Self()
	res, err := tx.ExecContext(ctx, `UPDATE AUD_TASK_ATTEMPTS
		SET STATUS = $2, OWNER_ID = $3, LEASE_EXPIRES_AT = $4, HEARTBEAT_AT = $5, CLAIMED_AT = $5,
		    HOST = $6, PID = $7, PROCESS_START = $8
		WHERE ATTEMPT_ID = $1 AND STATUS = $9 AND (NOT_BEFORE IS NULL OR NOT_BEFORE <= $10)`,
		id, AttemptClaimed, owner, tx.TimeArg(now.Add(LeaseDuration)), tx.TimeArg(now),
		p.Host, p.PID, p.Start, AttemptQueued, tx.TimeArg(now))
	return attemptCAS(ctx, tx, res, err, id, "claim", "status QUEUED and due", "")
}

// startAttempt records that owner began the work of its CLAIMED attempt.
// Acknowledging a start twice from the same process changes nothing.
func startAttempt(ctx context.Context, tx *wtx, id int64, owner, logPath string, now time.Time) error {
	p := Self()
	res, err := tx.ExecContext(ctx, `UPDATE AUD_TASK_ATTEMPTS SET STATUS = $2, STARTED_AT = COALESCE(STARTED_AT, $3), LOG_PATH = $4
		WHERE ATTEMPT_ID = $1 AND OWNER_ID = $5 AND LEASE_EXPIRES_AT >= $3
		AND (STATUS = $6 OR (STATUS = $2 AND PID = $7 AND PROCESS_START = $8))`,
		id, AttemptRunning, tx.TimeArg(now), logPath, owner, AttemptClaimed, p.PID, p.Start)
	return attemptCAS(ctx, tx, res, err, id, "start", "status CLAIMED with a live lease", owner)
}

// renewAttempt extends owner's live lease on a CLAIMED or RUNNING attempt.
func renewAttempt(ctx context.Context, tx *wtx, id int64, owner string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_TASK_ATTEMPTS SET LEASE_EXPIRES_AT = $3, HEARTBEAT_AT = $4
		WHERE ATTEMPT_ID = $1 AND OWNER_ID = $2 AND STATUS IN ($5, $6) AND LEASE_EXPIRES_AT >= $4`,
		id, owner, tx.TimeArg(now.Add(LeaseDuration)), tx.TimeArg(now), AttemptClaimed, AttemptRunning)
	return attemptCAS(ctx, tx, res, err, id, "renew the lease", "status CLAIMED or RUNNING with a live lease", owner)
}

// outcome is how an attempt ended and what it reported.
type outcome struct {
	Status    string // SUCCESS, FAILED or TIMED_OUT
	Result    handler.Result
	Error     string // one line; "" on success
	Log       string // TASK_LOG: reported values, then the log tail
	ExitCode  exit.Code
	Retryable bool
	// OnBehalf is set when the supervisor records a failure for an attempt
	// whose own recording failed; the attempt's fault points are not
	// passed again.
	OnBehalf bool
	// Cancelled is set when an operator cancelled the attempt while it ran:
	// it was recorded CANCELLED then, and nothing more is written.
	Cancelled bool
}

// finishAttempt records the outcome of owner's attempt, with a live lease,
// and copies it into the task's summary in the same transaction: SUCCESS
// or FAILED from CLAIMED or RUNNING, TIMED_OUT from RUNNING only. The summary
// must still be the attempt's own (IN-PROGRESS at its attempt number);
// otherwise, for example after an operator marked the task, nothing changes.
func finishAttempt(ctx context.Context, tx *wtx, id int64, owner string, o outcome, now time.Time) error {
	from := []string{AttemptClaimed, AttemptRunning}
	switch o.Status {
	case AttemptSuccess, AttemptFailed:
	case AttemptTimedOut:
		from = []string{AttemptRunning, AttemptRunning}
	default:
		return stale(attemptsTable, id, "finish", "an ending status SUCCESS, FAILED or TIMED_OUT", o.Status)
	}
	r := o.Result
	var msg any
	if o.Error != "" {
		msg = o.Error
	}
	var taskRunID int64
	var number int
	err := tx.QueryRowContext(ctx, `UPDATE AUD_TASK_ATTEMPTS
		SET STATUS = $2, ENDED_AT = $3, EXIT_CODE = $4, SOURCE_COUNT = $5, TARGET_COUNT = $6, INSERT_COUNT = $7,
		    UPDATE_COUNT = $8, DELETE_COUNT = $9, ROWS_WRITTEN = $10, ERROR_MESSAGE = $11, TASK_LOG = $12, RETRYABLE = $13
		WHERE ATTEMPT_ID = $1 AND OWNER_ID = $14 AND STATUS IN ($15, $16) AND LEASE_EXPIRES_AT >= $3
		RETURNING TASK_RUN_ID, ATTEMPT_NUMBER`,
		id, o.Status, tx.TimeArg(now), int(o.ExitCode), r.SourceCount, r.TargetCount, r.InsertCount,
		r.UpdateCount, r.DeleteCount, r.RowsWritten, msg, o.Log, o.Retryable, owner, from[0], from[1]).
		Scan(&taskRunID, &number)
	if engine.IsNoRows(err) {
		return attemptCAS(ctx, tx, nil, errNoRow, id, "finish as "+o.Status,
			"status "+strings.Join(uniq(from), " or ")+" with a live lease", owner)
	}
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not record the outcome of attempt_id=%d", id)
	}
	if !o.OnBehalf {
		if err := fault.Point("attempt.after_status"); err != nil {
			return err
		}
		if err := fault.Point("attempt.before_summary"); err != nil {
			return err
		}
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_TASK_RUN_LOG
		SET STATUS = $2, END_DATE = $3, SOURCE_COUNT = $4, TARGET_COUNT = $5, INSERT_COUNT = $6, UPDATE_COUNT = $7,
		    DELETE_COUNT = $8, ROWS_WRITTEN = $9, ERROR_MESSAGE = $10, TASK_LOG = $11
		WHERE TASK_RUN_ID = $1 AND STATUS = $12 AND ATTEMPT_COUNT = $13`,
		taskRunID, summaryOf(o.Status), tx.TimeArg(now), r.SourceCount, r.TargetCount, r.InsertCount,
		r.UpdateCount, r.DeleteCount, r.RowsWritten, msg, o.Log, TaskInProgress, number)
	return summaryCAS(ctx, tx, res, err, taskRunID, number)
}

// loseAttempt fences a CLAIMED or RUNNING attempt of owner whose lease
// expired before cutoff: the attempt becomes LOST and its summary FAILED with
// the message naming the lost owner. Later writes by that owner are stale.
func loseAttempt(ctx context.Context, tx *wtx, id int64, owner string, cutoff, now time.Time, message string) error {
	var taskRunID int64
	var number int
	err := tx.QueryRowContext(ctx, `UPDATE AUD_TASK_ATTEMPTS SET STATUS = $2, ENDED_AT = $3, ERROR_MESSAGE = $4
		WHERE ATTEMPT_ID = $1 AND OWNER_ID = $5 AND STATUS IN ($6, $7) AND LEASE_EXPIRES_AT < $8
		RETURNING TASK_RUN_ID, ATTEMPT_NUMBER`,
		id, AttemptLost, tx.TimeArg(now), message, owner, AttemptClaimed, AttemptRunning, tx.TimeArg(cutoff)).
		Scan(&taskRunID, &number)
	if engine.IsNoRows(err) {
		return attemptCAS(ctx, tx, nil, errNoRow, id, "declare lost",
			"status CLAIMED or RUNNING with a lease expired before "+cutoff.UTC().Format(time.RFC3339), owner)
	}
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not fence attempt_id=%d", id)
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_TASK_RUN_LOG SET STATUS = $2, END_DATE = $3, ERROR_MESSAGE = $4
		WHERE TASK_RUN_ID = $1 AND STATUS = $5 AND ATTEMPT_COUNT = $6`,
		taskRunID, TaskFailed, tx.TimeArg(now), message, TaskInProgress, number)
	return summaryCAS(ctx, tx, res, err, taskRunID, number)
}

// stopAttempt ends an active attempt, whoever owns it, and its summary with
// it: CANCELLED on an operator's cancel, or FAILED when an orchestrator
// finalizes a run whose task process ended without recording an outcome.
// The attempt is not retried.
func stopAttempt(ctx context.Context, tx *wtx, id int64, status, message string, now time.Time) error {
	if status != AttemptCancelled && status != AttemptFailed {
		return stale(attemptsTable, id, "stop", "an ending status CANCELLED or FAILED", status)
	}
	var taskRunID int64
	var number int
	err := tx.QueryRowContext(ctx, `UPDATE AUD_TASK_ATTEMPTS SET STATUS = $2, ENDED_AT = $3, ERROR_MESSAGE = $4, RETRYABLE = FALSE
		WHERE ATTEMPT_ID = $1 AND STATUS IN ($5, $6, $7) RETURNING TASK_RUN_ID, ATTEMPT_NUMBER`,
		id, status, tx.TimeArg(now), message, AttemptQueued, AttemptClaimed, AttemptRunning).
		Scan(&taskRunID, &number)
	if engine.IsNoRows(err) {
		return attemptCAS(ctx, tx, nil, errNoRow, id, "stop", "status QUEUED, CLAIMED or RUNNING", "")
	}
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not stop attempt_id=%d", id)
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_TASK_RUN_LOG SET STATUS = $2, END_DATE = $3, ERROR_MESSAGE = $4
		WHERE TASK_RUN_ID = $1 AND STATUS = $5 AND ATTEMPT_COUNT = $6`,
		taskRunID, summaryOf(status), tx.TimeArg(now), message, TaskInProgress, number)
	return summaryCAS(ctx, tx, res, err, taskRunID, number)
}

// errNoRow stands for an UPDATE … RETURNING that matched no row.
var errNoRow = sql.ErrNoRows

// attemptCAS turns the result of an attempt update into nil or the stale
// error describing the attempt as it is. owner, when set, is the owner the
// write expected.
func attemptCAS(ctx context.Context, tx *wtx, res sql.Result, err error, id int64, action, expected, owner string) error {
	missed := err == errNoRow
	if !missed {
		if missed, err = noRow(res, err); err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not %s attempt_id=%d", action, id)
		}
	}
	if !missed {
		return nil
	}
	if owner != "" {
		expected += fmt.Sprintf(" owner='%s'", owner)
	}
	var status string
	var found sql.NullString
	var lease engine.Time
	err = tx.QueryRowContext(ctx, "SELECT STATUS, OWNER_ID, LEASE_EXPIRES_AT FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = $1", id).
		Scan(&status, &found, &lease)
	if engine.IsNoRows(err) {
		return stale(attemptsTable, id, action, expected, "missing")
	}
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not read %s", attemptsTable)
	}
	text := "status " + status
	if found.Valid {
		text += fmt.Sprintf(" owner='%s'", found.String)
	}
	if lease.Valid {
		text += " lease until " + lease.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	return stale(attemptsTable, id, action, expected, text)
}

// summaryCAS checks that a summary update hit the attempt's own summary.
func summaryCAS(ctx context.Context, tx *wtx, res sql.Result, err error, taskRunID int64, number int) error {
	missed, err := noRow(res, err)
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not update task_run_id=%d in %s", taskRunID, taskRunsTable)
	}
	if !missed {
		return nil
	}
	var status string
	var count int
	tx.QueryRowContext(ctx, "SELECT STATUS, ATTEMPT_COUNT FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = $1", taskRunID).
		Scan(&status, &count)
	return stale(taskRunsTable, taskRunID, "record attempt "+itoa(number),
		fmt.Sprintf("status IN-PROGRESS at attempt %d", number), fmt.Sprintf("status %s at attempt %d", status, count))
}

func uniq(s []string) []string {
	if len(s) == 2 && s[0] == s[1] {
		return s[:1]
	}
	return s
}
