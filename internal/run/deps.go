package run

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// upstream is what a dependency judges of its upstream task: the status its
// summary ended with, and what it wrote.
type upstream struct {
	Status      string
	RowsWritten sql.NullInt64
	TargetCount sql.NullInt64
}

// hasData reports whether the upstream wrote rows: ROWS_WRITTEN, or
// TARGET_COUNT for rows recorded before ROWS_WRITTEN existed.
func (u upstream) hasData() bool {
	if u.RowsWritten.Valid {
		return u.RowsWritten.Int64 > 0
	}
	return u.TargetCount.Valid && u.TargetCount.Int64 > 0
}

// satisfies reports whether an upstream that ended so satisfies a dependency
// of the type: SUCCESS needs SUCCESS, FAILURE needs FAILED (a cancelled task
// counts as failed), ALWAYS any ending, HAS_DATA SUCCESS with rows written.
func satisfies(depType string, u upstream) bool {
	switch depType {
	case pipeline.Success:
		return u.Status == TaskSuccess
	case pipeline.Failure:
		return u.Status == TaskFailed || u.Status == TaskCancelled
	case pipeline.Always:
		return u.Status == TaskSuccess || u.Status == TaskFailed || u.Status == TaskCancelled || u.Status == TaskSkipped
	case pipeline.HasData:
		return u.Status == TaskSuccess && u.hasData()
	}
	return false
}

// unmetText says why an ended upstream does not satisfy the dependency.
func unmetText(d *pipeline.Dependency, u upstream) string {
	if d.Type == pipeline.HasData && u.Status == TaskSuccess {
		return fmt.Sprintf("%s ended SUCCESS with no rows written, which does not satisfy a HAS_DATA dependency", d.Label())
	}
	return fmt.Sprintf("%s ended %s, which does not satisfy a %s dependency", d.Label(), u.Status, d.Type)
}

// Gates judges the cross-pipeline dependencies of a task about to start.
type Gates interface {
	// TaskDeps returns how many of the task's cross-pipeline dependencies
	// are satisfied, and for each one that is not, why.
	TaskDeps(ctx context.Context, runID int64, t *pipeline.Task, deps []*pipeline.Dependency) (satisfied int, unmet []string, err error)
}

// latestRunGates judges a cross-pipeline dependency by the upstream task in
// its pipeline's latest finished run that is not a backfill; older runs do
// not count.
type latestRunGates struct{ db *engine.DB }

func (g latestRunGates) TaskDeps(ctx context.Context, _ int64, _ *pipeline.Task, deps []*pipeline.Dependency) (int, []string, error) {
	satisfied := 0
	var unmet []string
	for _, d := range deps {
		var runID int64
		var runStatus string
		var status sql.NullString
		var u upstream
		err := g.db.QueryRowContext(ctx, `SELECT r.PIPELINE_RUN_ID, r.STATUS, t.STATUS, t.ROWS_WRITTEN, t.TARGET_COUNT
			FROM AUD_PIPELINES_RUN_LOG r
			LEFT JOIN AUD_TASK_RUN_LOG t ON t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND t.TASK_ID = $2
			WHERE r.PIPELINE_ID = $1 AND r.BACKFILL = 'N' AND r.STATUS IN ($3, $4, $5, $6)
			ORDER BY r.PIPELINE_RUN_ID DESC LIMIT 1`,
			d.UpstreamPipelineID, d.UpstreamTaskID, RunSuccess, RunFailed, RunSkipped, RunCancelled).
			Scan(&runID, &runStatus, &status, &u.RowsWritten, &u.TargetCount)
		label := fmt.Sprintf("upstream task %s (%s)", d.Label(), d.Type)
		switch {
		case engine.IsNoRows(err):
			unmet = append(unmet, label+" has no finished run")
		case err != nil:
			return 0, nil, exit.Wrap(exit.EngineDB, err, "could not judge the dependency on %s", d.Label())
		case !status.Valid:
			unmet = append(unmet, fmt.Sprintf("%s did not run in its pipeline's last finished run %d (%s)", label, runID, runStatus))
		default:
			u.Status = status.String
			if satisfies(d.Type, u) {
				satisfied++
				continue
			}
			unmet = append(unmet, fmt.Sprintf("%s: last finished run %d: %s", label, runID, unmetText(d, u)))
		}
	}
	return satisfied, unmet, nil
}
