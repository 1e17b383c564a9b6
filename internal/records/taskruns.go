package records

import (
	"context"
	"database/sql"
)

// TaskRun is one AUD_TASK_RUN_LOG row, a task's summary under a run, with
// its task's code, its run's pipeline and its active attempt.
type TaskRun struct {
	PipelineID    int64
	PipelineRunID int64
	TaskID        int64
	TaskCode      string
	TaskRunID     int64
	Status        TaskRunStatus
	Start, End    Time
	AttemptCount  int
	SourceCount   sql.NullInt64
	TargetCount   sql.NullInt64
	InsertCount   sql.NullInt64
	UpdateCount   sql.NullInt64
	DeleteCount   sql.NullInt64
	RowsWritten   sql.NullInt64
	ErrorMessage  sql.NullString
	// Active is the task run's QUEUED, CLAIMED or RUNNING attempt, nil when
	// none is.
	Active *ActiveAttempt
}

// ActiveAttempt is what a task run's active attempt says of it.
type ActiveAttempt struct {
	AttemptID int64
	Number    int
	Status    AttemptStatus
	Owner     string
	NotBefore Time
}

// HasData reports whether the task run wrote rows, as a HAS_DATA dependency
// asks: ROWS_WRITTEN, or TARGET_COUNT for rows recorded before ROWS_WRITTEN
// existed.
func (t TaskRun) HasData() bool { return HasData(t.RowsWritten, t.TargetCount) }

// HasData reports whether a task wrote rows, by the rule HAS_DATA
// dependencies read: its ROWS_WRITTEN, or its TARGET_COUNT when ROWS_WRITTEN
// is NULL (rows recorded before it existed).
func HasData(rowsWritten, targetCount sql.NullInt64) bool {
	if rowsWritten.Valid {
		return rowsWritten.Int64 > 0
	}
	return targetCount.Valid && targetCount.Int64 > 0
}

// TaskRunColumns are the columns ScanTaskRun reads, from TaskRunsFrom: the
// task run log as tr, joined to the run log as r, CFG_TASKS as t and the
// active attempt as a.
const TaskRunColumns = `r.PIPELINE_ID, tr.PIPELINE_RUN_ID, tr.TASK_ID, t.TASK_CODE, tr.TASK_RUN_ID, tr.STATUS,
	tr.START_DATE, tr.END_DATE, tr.ATTEMPT_COUNT, tr.SOURCE_COUNT, tr.TARGET_COUNT, tr.INSERT_COUNT,
	tr.UPDATE_COUNT, tr.DELETE_COUNT, tr.ROWS_WRITTEN, tr.ERROR_MESSAGE,
	a.ATTEMPT_ID, a.ATTEMPT_NUMBER, a.STATUS, a.OWNER_ID, a.NOT_BEFORE`

// TaskRunsFrom is the FROM clause of TaskRunColumns.
var TaskRunsFrom = ` FROM AUD_TASK_RUN_LOG tr
	JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
	JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
	LEFT JOIN AUD_TASK_ATTEMPTS a ON a.TASK_RUN_ID = tr.TASK_RUN_ID AND a.STATUS IN (` + SQLActiveAttempts + `) `

// ScanTaskRun reads one row of TaskRunColumns.
func ScanTaskRun(s Scanner) (TaskRun, error) {
	var t TaskRun
	var attemptID, number sql.NullInt64
	var status, owner sql.NullString
	var notBefore Time
	err := s.Scan(&t.PipelineID, &t.PipelineRunID, &t.TaskID, &t.TaskCode, &t.TaskRunID, &t.Status,
		&t.Start, &t.End, &t.AttemptCount, &t.SourceCount, &t.TargetCount, &t.InsertCount,
		&t.UpdateCount, &t.DeleteCount, &t.RowsWritten, &t.ErrorMessage,
		&attemptID, &number, &status, &owner, &notBefore)
	if attemptID.Valid {
		t.Active = &ActiveAttempt{AttemptID: attemptID.Int64, Number: int(number.Int64), Status: AttemptStatus(status.String),
			Owner: owner.String, NotBefore: notBefore}
	}
	return t, err
}

// QueryTaskRuns returns the task runs a query of TaskRunColumns finds, in
// its order.
func QueryTaskRuns(ctx context.Context, q Querier, stmt string, args ...any) ([]TaskRun, error) {
	return query(ctx, q, "AUD_TASK_RUN_LOG", ScanTaskRun, stmt, args...)
}

// TaskRunsOf returns the task runs recorded under a pipeline run, by task id.
func TaskRunsOf(ctx context.Context, q Querier, runID int64) (map[int64]TaskRun, error) {
	list, err := QueryTaskRuns(ctx, q, "SELECT "+TaskRunColumns+TaskRunsFrom+"WHERE tr.PIPELINE_RUN_ID = $1", runID)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]TaskRun, len(list))
	for _, t := range list {
		out[t.TaskID] = t
	}
	return out, nil
}

// Attempt is one AUD_TASK_ATTEMPTS row.
type Attempt struct {
	AttemptID       int64
	TaskRunID       int64
	AttemptNumber   int
	Status          AttemptStatus
	OwnerID         sql.NullString
	QueuedAt        Time
	StartedAt       Time
	EndedAt         Time
	NotBefore       Time
	Host            sql.NullString
	PID             sql.NullInt64
	RowsWritten     sql.NullInt64
	ErrorMessage    sql.NullString
	LogPath         sql.NullString
	RequestedBy     sql.NullString
	RequestedByKind sql.NullString
}

// AttemptColumns are the columns ScanAttempt reads, from AUD_TASK_ATTEMPTS.
const AttemptColumns = `ATTEMPT_ID, TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, OWNER_ID, QUEUED_AT,
	STARTED_AT, ENDED_AT, NOT_BEFORE, HOST, PID, ROWS_WRITTEN, ERROR_MESSAGE, LOG_PATH,
	REQUESTED_BY, REQUESTED_BY_KIND`

// ScanAttempt reads one row of AttemptColumns.
func ScanAttempt(s Scanner) (Attempt, error) {
	var a Attempt
	err := s.Scan(&a.AttemptID, &a.TaskRunID, &a.AttemptNumber, &a.Status, &a.OwnerID, &a.QueuedAt, &a.StartedAt,
		&a.EndedAt, &a.NotBefore, &a.Host, &a.PID, &a.RowsWritten, &a.ErrorMessage, &a.LogPath, &a.RequestedBy,
		&a.RequestedByKind)
	return a, err
}

// AttemptsOf returns a task run's attempts in attempt order.
func AttemptsOf(ctx context.Context, q Querier, taskRunID int64) ([]Attempt, error) {
	return query(ctx, q, "AUD_TASK_ATTEMPTS", ScanAttempt, "SELECT "+AttemptColumns+
		" FROM AUD_TASK_ATTEMPTS WHERE TASK_RUN_ID = $1 ORDER BY ATTEMPT_NUMBER", taskRunID)
}
