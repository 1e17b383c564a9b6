package inspect

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// seconds returns the seconds from start to end (or to now without an end),
// rounded to the millisecond; nil without a start.
func seconds(start, end *report.Instant, now time.Time) *float64 {
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

// taskRunDoc is the document of a task run row, without its attempts.
func taskRunDoc(t records.TaskRun) report.TaskRun {
	return report.TaskRun{Schema: report.SchemaTaskRun, PipelineID: t.PipelineID, PipelineRunID: t.PipelineRunID, TaskID: t.TaskID,
		TaskCode: t.TaskCode, TaskRunID: t.TaskRunID, Status: string(t.Status), StartDate: instant(t.Start),
		EndDate: instant(t.End), AttemptCount: t.AttemptCount, SourceCount: nullInt(t.SourceCount),
		TargetCount: nullInt(t.TargetCount), InsertCount: nullInt(t.InsertCount), UpdateCount: nullInt(t.UpdateCount),
		DeleteCount: nullInt(t.DeleteCount), RowsWritten: nullInt(t.RowsWritten), ErrorMessage: nullString(t.ErrorMessage),
		Attempts: []report.Attempt{}}
}

// queryTaskRuns returns the documents of the task runs a query of
// records.TaskRunColumns finds, without their attempts.
func queryTaskRuns(ctx context.Context, q engine.Querier, query string, args ...any) ([]report.TaskRun, error) {
	rows, err := records.QueryTaskRuns(ctx, q, query, args...)
	out := make([]report.TaskRun, len(rows))
	for i, t := range rows {
		out[i] = taskRunDoc(t)
	}
	return out, err
}

// loadAttempts fills in the attempts of each task run, in attempt order.
func loadAttempts(ctx context.Context, q engine.Querier, runs []report.TaskRun) error {
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
func attemptDoc(a records.Attempt) report.Attempt {
	return report.Attempt{Schema: report.SchemaAttempt, AttemptID: a.AttemptID, TaskRunID: a.TaskRunID, AttemptNumber: a.AttemptNumber,
		Status: string(a.Status), OwnerID: nullString(a.OwnerID), QueuedAt: instant(a.QueuedAt),
		StartedAt: instant(a.StartedAt), EndedAt: instant(a.EndedAt), NotBefore: instant(a.NotBefore),
		Host: nullString(a.Host), PID: nullInt(a.PID), RowsWritten: nullInt(a.RowsWritten),
		ErrorMessage: nullString(a.ErrorMessage), LogPath: nullString(a.LogPath), RequestedBy: nullString(a.RequestedBy),
		RequestedByKind: nullString(a.RequestedByKind)}
}
