package inspect

import (
	"context"
	"database/sql"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
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

// taskRunColumns are the columns scanTaskRun reads, from AUD_TASK_RUN_LOG tr
// joined to AUD_PIPELINES_RUN_LOG r and CFG_TASKS t.
const taskRunColumns = `r.PIPELINE_ID, tr.PIPELINE_RUN_ID, tr.TASK_ID, t.TASK_CODE, tr.TASK_RUN_ID, tr.STATUS,
	tr.START_DATE, tr.END_DATE, tr.ATTEMPT_COUNT, tr.SOURCE_COUNT, tr.TARGET_COUNT, tr.INSERT_COUNT,
	tr.UPDATE_COUNT, tr.DELETE_COUNT, tr.ROWS_WRITTEN, tr.ERROR_MESSAGE`

// taskRunsFrom is the FROM clause of taskRunColumns.
const taskRunsFrom = ` FROM AUD_TASK_RUN_LOG tr
	JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
	JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID `

// queryTaskRuns returns the task runs a query of taskRunColumns finds,
// without their attempts.
func queryTaskRuns(ctx context.Context, q engine.Querier, query string, args ...any) ([]report.TaskRun, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, readError(err, "AUD_TASK_RUN_LOG")
	}
	defer rows.Close()
	out := []report.TaskRun{}
	for rows.Next() {
		t := report.TaskRun{Schema: report.SchemaTaskRun, Attempts: []report.Attempt{}}
		var start, end engine.Time
		var src, tgt, ins, upd, del, written sql.NullInt64
		var msg sql.NullString
		if err := rows.Scan(&t.PipelineID, &t.PipelineRunID, &t.TaskID, &t.TaskCode, &t.TaskRunID, &t.Status,
			&start, &end, &t.AttemptCount, &src, &tgt, &ins, &upd, &del, &written, &msg); err != nil {
			return nil, readError(err, "AUD_TASK_RUN_LOG")
		}
		t.StartDate, t.EndDate = instant(start), instant(end)
		t.SourceCount, t.TargetCount, t.InsertCount = nullInt(src), nullInt(tgt), nullInt(ins)
		t.UpdateCount, t.DeleteCount, t.RowsWritten = nullInt(upd), nullInt(del), nullInt(written)
		t.ErrorMessage = nullString(msg)
		out = append(out, t)
	}
	return out, rows.Err()
}

// runTasks returns the task runs recorded under a pipeline run, by task id.
func runTasks(ctx context.Context, q engine.Querier, runID int64) (map[int64]report.TaskRun, error) {
	list, err := queryTaskRuns(ctx, q, "SELECT "+taskRunColumns+taskRunsFrom+"WHERE tr.PIPELINE_RUN_ID = $1", runID)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]report.TaskRun, len(list))
	for _, t := range list {
		out[t.TaskID] = t
	}
	return out, nil
}

// loadAttempts fills in the attempts of each task run, in attempt order.
func loadAttempts(ctx context.Context, q engine.Querier, runs []report.TaskRun) error {
	for i := range runs {
		rows, err := q.QueryContext(ctx, `SELECT ATTEMPT_ID, TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, OWNER_ID, QUEUED_AT,
				STARTED_AT, ENDED_AT, NOT_BEFORE, HOST, PID, ROWS_WRITTEN, ERROR_MESSAGE, LOG_PATH,
				REQUESTED_BY, REQUESTED_BY_KIND
			FROM AUD_TASK_ATTEMPTS WHERE TASK_RUN_ID = $1 ORDER BY ATTEMPT_NUMBER`, runs[i].TaskRunID)
		if err != nil {
			return readError(err, "AUD_TASK_ATTEMPTS")
		}
		err = scanAttempts(rows, &runs[i])
		rows.Close()
		if err != nil {
			return readError(err, "AUD_TASK_ATTEMPTS")
		}
	}
	return nil
}

func scanAttempts(rows *sql.Rows, t *report.TaskRun) error {
	for rows.Next() {
		a := report.Attempt{Schema: report.SchemaAttempt}
		var owner, host, msg, logPath, by, byKind sql.NullString
		var queued, started, ended, notBefore engine.Time
		var pid, written sql.NullInt64
		if err := rows.Scan(&a.AttemptID, &a.TaskRunID, &a.AttemptNumber, &a.Status, &owner, &queued, &started,
			&ended, &notBefore, &host, &pid, &written, &msg, &logPath, &by, &byKind); err != nil {
			return err
		}
		a.OwnerID, a.Host, a.ErrorMessage, a.LogPath = nullString(owner), nullString(host), nullString(msg), nullString(logPath)
		a.RequestedBy, a.RequestedByKind = nullString(by), nullString(byKind)
		a.QueuedAt, a.StartedAt, a.EndedAt, a.NotBefore = instant(queued), instant(started), instant(ended), instant(notBefore)
		a.PID, a.RowsWritten = nullInt(pid), nullInt(written)
		t.Attempts = append(t.Attempts, a)
	}
	return rows.Err()
}
