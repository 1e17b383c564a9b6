package run

// The transitions of AUD_TASK_ATTEMPTS rows (see transitions.go).

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/handler"
)

// queued is an attempt just queued.
type queued struct {
	TaskRunID int64
	AttemptID int64
	Number    int
}

// queueing says how queueAttempt queues an attempt.
type queueing struct {
	// notBefore is set for a retry (the attempt may not be claimed
	// earlier) and nil for a first execution.
	notBefore *time.Time
	// unsettled refuses a task whose summary under the run ended SUCCESS
	// or SKIPPED: a first attempt is not queued over a task that was
	// settled (by an operator's mark, say) after the supervisor last read
	// it.
	unsettled bool
	// locked says the transaction holds the run's IN-PROGRESS row already
	// (it took the run, see takeRun).
	locked bool
	// start, when set, inserts the attempt RUNNING: queued, claimed
	// (claimAttempt) and started (startAttempt) by this process at once,
	// as the three writes would leave it in one transaction.
	start *starting
}

// starting is who starts an attempt queueAttempt inserts RUNNING.
type starting struct {
	owner string
	// logPath is the attempt log of the attempt's number.
	logPath func(number int) string
}

// queueAttempt queues the next attempt of a task under an IN-PROGRESS run,
// creating the task's summary row on its first attempt, and puts the summary
// back IN-PROGRESS with the new attempt count. A task run with an active
// attempt already is stale: the database allows one.
func queueAttempt(ctx context.Context, tx *wtx, runID, taskID int64, how queueing, now time.Time) (queued, error) {
	var q queued
	if !how.locked {
		if err := lockActiveRun(ctx, tx, runID, "queue an attempt under"); err != nil {
			return q, err
		}
	}
	var status string
	var count int
	err := tx.QueryRowContext(ctx, `SELECT TASK_RUN_ID, STATUS, ATTEMPT_COUNT FROM AUD_TASK_RUN_LOG
		WHERE TASK_ID = $1 AND PIPELINE_RUN_ID = $2`, taskID, runID).Scan(&q.TaskRunID, &status, &count)
	if err == nil && how.unsettled && (status == TaskSuccess || status == TaskSkipped) {
		return q, exit.Errorf(exit.StaleTransition, "%s: cannot queue task_id=%d under pipeline_run_id=%d: expected no settled task run, found status %s",
			taskRunsTable, taskID, runID, status)
	}
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
		return q, insertAttempt(ctx, tx, &q, how, now)
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
	if err := insertAttempt(ctx, tx, &q, how, now); err != nil {
		return q, err
	}
	_, err = tx.ExecContext(ctx, `UPDATE AUD_TASK_RUN_LOG SET STATUS = $2, ATTEMPT_COUNT = $3, END_DATE = NULL
		WHERE TASK_RUN_ID = $1`, q.TaskRunID, TaskInProgress, q.Number)
	return q, exit.Wrap(exit.EngineDB, err, "could not update task_run_id=%d", q.TaskRunID)
}

// insertAttempt inserts attempt q.Number of q.TaskRunID, QUEUED (or RUNNING,
// see queueing.start), and sets q.AttemptID. A task run with an active
// attempt already is stale.
func insertAttempt(ctx context.Context, tx *wtx, q *queued, how queueing, now time.Time) error {
	var nb any
	if how.notBefore != nil {
		nb = tx.TimeArg(*how.notBefore)
	}
	var err error
	if st := how.start; st != nil {
		p := Self()
		err = tx.QueryRowContext(ctx, `INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, NOT_BEFORE,
			OWNER_ID, LEASE_EXPIRES_AT, HEARTBEAT_AT, CLAIMED_AT, HOST, PID, PROCESS_START, STARTED_AT, LOG_PATH)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $4, $4, $8, $9, $10, $4, $11) RETURNING ATTEMPT_ID`,
			q.TaskRunID, q.Number, AttemptRunning, tx.TimeArg(now), nb, st.owner, tx.TimeArg(now.Add(LeaseDuration)),
			p.Host, p.PID, p.Start, st.logPath(q.Number)).Scan(&q.AttemptID)
	} else {
		err = tx.QueryRowContext(ctx, `INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, NOT_BEFORE)
			VALUES ($1, $2, $3, $4, $5) RETURNING ATTEMPT_ID`,
			q.TaskRunID, q.Number, AttemptQueued, tx.TimeArg(now), nb).Scan(&q.AttemptID)
	}
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

// spawnedAttempt records on owner's RUNNING attempt the child process of
// this host that performs it: its pid and start time, which reconciliation
// verifies before it stops the process (and its process group).
func spawnedAttempt(ctx context.Context, tx *wtx, id int64, owner string, pid int) error {
	start, err := processStart(pid)
	if err != nil {
		return exit.Wrap(exit.Handler, err, "could not read the start time of process %d, which runs attempt_id=%d", pid, id)
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_TASK_ATTEMPTS SET PID = $3, PROCESS_START = $4
		WHERE ATTEMPT_ID = $1 AND OWNER_ID = $2 AND STATUS = $5`, id, owner, pid, start, AttemptRunning)
	return attemptCAS(ctx, tx, res, err, id, "record the process of", "status RUNNING", owner)
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
		return stale(attemptsTable, id, "finish", "an ending status "+AttemptSuccess+", "+AttemptFailed+" or "+AttemptTimedOut, o.Status)
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
		fmt.Sprintf("status %s at attempt %d", TaskInProgress, number), fmt.Sprintf("status %s at attempt %d", status, count))
}

func uniq(s []string) []string {
	if len(s) == 2 && s[0] == s[1] {
		return s[:1]
	}
	return s
}
