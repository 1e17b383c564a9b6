package inspect

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// MaxRunsPage is the most runs one page of PipelineRuns holds.
const MaxRunsPage = 100

// PipelineView returns the active pipeline's definition with its pause state
// and next tick (zone as in ListPipelines). An unknown code is a metadata
// error (exit 4) suggesting close matches.
func PipelineView(ctx context.Context, q engine.Querier, code string, zone *time.Location, now time.Time) (report.PipelineView, error) {
	p, err := pipeline.Find(ctx, q, code)
	if err != nil {
		return report.PipelineView{}, err
	}
	return pipelineView(ctx, q, p, zone, now)
}

// RunByID returns the run with the exact PIPELINE_RUN_ID, of whatever
// pipeline; an id no run has is exit 24: a run id never falls back to another
// run.
func RunByID(ctx context.Context, q engine.Querier, id int64) (Run, error) {
	rows, err := records.QueryRuns(ctx, q, "SELECT "+records.RunColumns+records.RunsFrom+"WHERE r.PIPELINE_RUN_ID = $1", id)
	if err != nil {
		return Run{}, err
	}
	if len(rows) == 0 {
		return Run{}, exit.Errorf(exit.ResourceNotFound, "no run has PIPELINE_RUN_ID %d", id)
	}
	return runDoc(rows[0]), nil
}

// PipelineRuns returns up to limit (1 to MaxRunsPage) runs of the active
// pipeline, newest first, with a PIPELINE_RUN_ID below before when before is
// positive. A limit out of range is a usage error (exit 2) naming {limit};
// an unknown code is exit 4.
func PipelineRuns(ctx context.Context, q engine.Querier, code string, limit int, before int64) (report.Runs, error) {
	if limit < 1 || limit > MaxRunsPage {
		return report.Runs{}, exit.Fieldf(exit.Usage, "{limit} must be from 1 to %d, got %d", MaxRunsPage, limit)
	}
	p, err := pipeline.Find(ctx, q, code)
	if err != nil {
		return report.Runs{}, err
	}
	filter, args := "WHERE r.PIPELINE_ID = $1 ", []any{p.ID, limit + 1}
	if before > 0 {
		filter += "AND r.PIPELINE_RUN_ID < $3 "
		args = append(args, before)
	}
	rows, err := records.QueryRuns(ctx, q, "SELECT "+records.RunColumns+records.RunsFrom+filter+"ORDER BY r.PIPELINE_RUN_ID DESC LIMIT $2", args...)
	if err != nil {
		return report.Runs{}, err
	}
	out := report.Runs{Schema: report.SchemaRuns, PipelineID: p.ID, PipelineCode: p.Code, Runs: []report.Run{}}
	if len(rows) > limit {
		rows = rows[:limit]
		next := rows[limit-1].ID
		out.NextBefore = &next
	}
	for _, r := range runDocs(rows) {
		out.Runs = append(out.Runs, r.Run)
	}
	return out, nil
}

// AttemptByID returns the attempt with the exact ATTEMPT_ID; an id no
// attempt has is exit 24.
func AttemptByID(ctx context.Context, q engine.Querier, id int64) (report.Attempt, error) {
	a, err := records.ScanAttempt(q.QueryRowContext(ctx, "SELECT "+records.AttemptColumns+" FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = $1", id))
	if engine.IsNoRows(err) {
		return report.Attempt{}, exit.Errorf(exit.ResourceNotFound, "no attempt has ATTEMPT_ID %d", id)
	}
	if err != nil {
		return report.Attempt{}, readError(err, "AUD_TASK_ATTEMPTS")
	}
	return attemptDoc(a), nil
}

// AttemptLog returns up to max bytes of the attempt's log file from the byte
// offset (0 or more). An attempt without a log, or whose log file is gone,
// is exit 24; a negative offset is a usage error naming {offset}.
func AttemptLog(ctx context.Context, q engine.Querier, id, offset, max int64) (report.AttemptLog, error) {
	if offset < 0 {
		return report.AttemptLog{}, exit.Fieldf(exit.Usage, "{offset} must be a byte offset of 0 or more, got %d", offset)
	}
	f, a, err := OpenAttemptLog(ctx, q, id)
	if err != nil {
		return report.AttemptLog{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return report.AttemptLog{}, unreadableLog(id, err)
	}
	out := report.AttemptLog{Schema: report.SchemaAttemptLog, AttemptID: id, LogPath: *a.LogPath, Offset: offset, Size: st.Size(), NextOffset: offset}
	if offset >= st.Size() {
		return out, nil
	}
	buf := make([]byte, min(max, st.Size()-offset))
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return report.AttemptLog{}, unreadableLog(id, err)
	}
	out.Text, out.NextOffset, out.Truncated = string(buf[:n]), offset+int64(n), offset+int64(n) < st.Size()
	return out, nil
}

// OpenAttemptLog opens the attempt's log file and returns it with the
// attempt; the caller closes it. An attempt without a log, or whose log
// file is gone, is exit 24.
func OpenAttemptLog(ctx context.Context, q engine.Querier, id int64) (*os.File, report.Attempt, error) {
	a, err := AttemptByID(ctx, q, id)
	if err != nil {
		return nil, a, err
	}
	if a.LogPath == nil {
		return nil, a, exit.Errorf(exit.ResourceNotFound, "attempt %d has no log (it never started)", id)
	}
	f, err := os.Open(*a.LogPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, a, exit.Errorf(exit.ResourceNotFound, "the log of attempt %d (%s) is gone", id, *a.LogPath)
	}
	if err != nil {
		return nil, a, unreadableLog(id, err)
	}
	return f, a, nil
}

// unreadableLog is the error of a log file that cannot be read (exit 24).
func unreadableLog(id int64, err error) error {
	return exit.Wrap(exit.ResourceNotFound, err, "cannot read the log of attempt %d: ", id)
}

// Operation is the document of what an operator command changed
// (etl-craft/operation/1): its message, the pipeline afterwards and, when it
// changed a run, the run and the task as they are now (zone as in
// ListPipelines).
func Operation(ctx context.Context, q engine.Querier, zone *time.Location, now time.Time, pipelineID int64, code string, runID int64,
	taskCode, message string) (report.Operation, error) {
	doc := report.Operation{Schema: report.SchemaOperation, Status: exit.Success.String(), Message: message, PipelineID: pipelineID, PipelineCode: code}
	list, err := ListPipelines(ctx, q, zone, now)
	if err != nil {
		return report.Operation{}, err
	}
	for i := range list.Pipelines {
		if list.Pipelines[i].PipelineID == pipelineID {
			doc.Pipeline = &list.Pipelines[i]
		}
	}
	if runID != 0 {
		st, err := RunStatus(ctx, q, code, RunSelector{ID: runID}, zone, now)
		if err != nil {
			return report.Operation{}, err
		}
		doc.Run = &st.Run
		for i, t := range st.Tasks {
			if t.TaskCode == taskCode {
				doc.Task = &st.Tasks[i]
			}
		}
	}
	return doc, nil
}
