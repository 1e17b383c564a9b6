package inspect

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// TaskRun is one task's summary under a run (an AUD_TASK_RUN_LOG row) and,
// where a document lists them, its attempts in order.
type TaskRun struct {
	Schema        string    `json:"schema"`
	PipelineID    int64     `json:"pipeline_id"`
	PipelineRunID int64     `json:"pipeline_run_id"`
	TaskID        int64     `json:"task_id"`
	TaskCode      string    `json:"task_code"`
	TaskRunID     int64     `json:"task_run_id"`
	Status        string    `json:"status"`
	StartDate     *Instant  `json:"start_date"`
	EndDate       *Instant  `json:"end_date"`
	AttemptCount  int       `json:"attempt_count"`
	SourceCount   *int64    `json:"source_count"`
	TargetCount   *int64    `json:"target_count"`
	InsertCount   *int64    `json:"insert_count"`
	UpdateCount   *int64    `json:"update_count"`
	DeleteCount   *int64    `json:"delete_count"`
	RowsWritten   *int64    `json:"rows_written"`
	ErrorMessage  *string   `json:"error_message"`
	Attempts      []Attempt `json:"attempts"`
}

// duration returns how long the task has run: to its end, or to now while
// it has none. It is nil for a task without a start.
func (t TaskRun) duration(now time.Time) *float64 {
	return seconds(t.StartDate, t.EndDate, now)
}

// seconds returns the seconds from start to end (or to now without an end),
// rounded to the millisecond; nil without a start.
func seconds(start, end *Instant, now time.Time) *float64 {
	if start == nil {
		return nil
	}
	until := now
	if end != nil {
		until = end.Time
	}
	s := float64(until.Sub(start.Time).Milliseconds()) / 1000
	return &s
}

// Attempt is one AUD_TASK_ATTEMPTS row.
type Attempt struct {
	Schema          string   `json:"schema"`
	AttemptID       int64    `json:"attempt_id"`
	TaskRunID       int64    `json:"task_run_id"`
	AttemptNumber   int      `json:"attempt_number"`
	Status          string   `json:"status"`
	OwnerID         *string  `json:"owner_id"`
	QueuedAt        *Instant `json:"queued_at"`
	StartedAt       *Instant `json:"started_at"`
	EndedAt         *Instant `json:"ended_at"`
	NotBefore       *Instant `json:"not_before"`
	Host            *string  `json:"host"`
	PID             *int64   `json:"pid"`
	RowsWritten     *int64   `json:"rows_written"`
	ErrorMessage    *string  `json:"error_message"`
	LogPath         *string  `json:"log_path"`
	RequestedBy     *string  `json:"requested_by"`
	RequestedByKind *string  `json:"requested_by_kind"`
}

// taskRunDoc is the document of a task run row, without its attempts.
func taskRunDoc(t records.TaskRun) TaskRun {
	return TaskRun{Schema: SchemaTaskRun, PipelineID: t.PipelineID, PipelineRunID: t.PipelineRunID, TaskID: t.TaskID,
		TaskCode: t.TaskCode, TaskRunID: t.TaskRunID, Status: string(t.Status), StartDate: instant(t.Start),
		EndDate: instant(t.End), AttemptCount: t.AttemptCount, SourceCount: nullInt(t.SourceCount),
		TargetCount: nullInt(t.TargetCount), InsertCount: nullInt(t.InsertCount), UpdateCount: nullInt(t.UpdateCount),
		DeleteCount: nullInt(t.DeleteCount), RowsWritten: nullInt(t.RowsWritten), ErrorMessage: nullString(t.ErrorMessage),
		Attempts: []Attempt{}}
}

// queryTaskRuns returns the documents of the task runs a query of
// records.TaskRunColumns finds, without their attempts.
func queryTaskRuns(ctx context.Context, q engine.Querier, query string, args ...any) ([]TaskRun, error) {
	rows, err := records.QueryTaskRuns(ctx, q, query, args...)
	out := make([]TaskRun, len(rows))
	for i, t := range rows {
		out[i] = taskRunDoc(t)
	}
	return out, err
}

// loadAttempts fills in the attempts of each task run, in attempt order.
func loadAttempts(ctx context.Context, q engine.Querier, runs []TaskRun) error {
	for i := range runs {
		attempts, err := records.AttemptsOf(ctx, q, runs[i].TaskRunID)
		if err != nil {
			return err
		}
		for _, a := range attempts {
			runs[i].Attempts = append(runs[i].Attempts, attemptDoc(a))
		}
	}
	return nil
}

// attemptDoc is the document of an attempt row.
func attemptDoc(a records.Attempt) Attempt {
	return Attempt{Schema: SchemaAttempt, AttemptID: a.AttemptID, TaskRunID: a.TaskRunID, AttemptNumber: a.AttemptNumber,
		Status: string(a.Status), OwnerID: nullString(a.OwnerID), QueuedAt: instant(a.QueuedAt),
		StartedAt: instant(a.StartedAt), EndedAt: instant(a.EndedAt), NotBefore: instant(a.NotBefore),
		Host: nullString(a.Host), PID: nullInt(a.PID), RowsWritten: nullInt(a.RowsWritten),
		ErrorMessage: nullString(a.ErrorMessage), LogPath: nullString(a.LogPath), RequestedBy: nullString(a.RequestedBy),
		RequestedByKind: nullString(a.RequestedByKind)}
}
