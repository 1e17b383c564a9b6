package gate

import (
	"context"
	"database/sql"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Backfill runs are invisible to every query here: they never satisfy a
// dependency, never fail one, and are never waited for.

// upstreamQueries are the reads of one kind of dependency. Each takes the
// upstream's id ($1: the pipeline, or the task) and selects its columns in
// the same order for both kinds.
type upstreamQueries struct {
	// latest selects the latest finished output: pipeline run id, task run
	// id (NULL for a pipeline), status, revision, and 1 when rows were written.
	latest string
	// running selects the output still running: pipeline run id, task run
	// id and start.
	running string
	// lengths selects start and end of the latest 100 real runs that ended
	// SUCCESS or FAILED: no stand-in runs.
	lengths string
	// consumed selects the dependency's ($1) latest consumption: pipeline
	// run, task run and revision.
	consumed string
}

var pipelineQueries = upstreamQueries{
	latest: `SELECT r.PIPELINE_RUN_ID, CAST(NULL AS BIGINT), r.STATUS, r.OUTPUT_REVISION,
			CASE WHEN EXISTS (SELECT 1 FROM AUD_TASK_RUN_LOG t WHERE t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID
				AND COALESCE(t.ROWS_WRITTEN, t.TARGET_COUNT) > 0) THEN 1 ELSE 0 END
		FROM AUD_PIPELINES_RUN_LOG r
		WHERE r.PIPELINE_ID = $1 AND r.BACKFILL = 'N' AND r.STATUS IN (` + records.SQLEndedRuns + `)
		ORDER BY r.PIPELINE_RUN_ID DESC LIMIT 1`,
	running: `SELECT r.PIPELINE_RUN_ID, CAST(NULL AS BIGINT), r.START_DATE
		FROM AUD_PIPELINES_RUN_LOG r
		WHERE r.PIPELINE_ID = $1 AND r.BACKFILL = 'N' AND r.STATUS = ` + records.SQL(records.RunInProgress) + `
		ORDER BY r.PIPELINE_RUN_ID DESC LIMIT 1`,
	lengths: `SELECT r.START_DATE, r.END_DATE
		FROM AUD_PIPELINES_RUN_LOG r
		WHERE r.PIPELINE_ID = $1 AND r.BACKFILL = 'N' AND r.TRIGGER_KIND <> ` + records.SQL(records.TriggerStandIn) + `
			AND r.STATUS IN (` + records.SQL(records.RunSuccess, records.RunFailed) + `) AND r.END_DATE IS NOT NULL
		ORDER BY r.PIPELINE_RUN_ID DESC LIMIT 100`,
	consumed: `SELECT CONSUMED_PIPELINE_RUN_ID, CONSUMED_TASK_RUN_ID, CONSUMED_REVISION
		FROM AUD_DEPENDENCY_CONSUMPTION WHERE PIPELINE_DEPENDENCY_ID = $1
		ORDER BY CONSUMPTION_ID DESC LIMIT 1`,
}

var taskQueries = upstreamQueries{
	latest: `SELECT t.PIPELINE_RUN_ID, t.TASK_RUN_ID, t.STATUS, r.OUTPUT_REVISION,
			CASE WHEN COALESCE(t.ROWS_WRITTEN, t.TARGET_COUNT) > 0 THEN 1 ELSE 0 END
		FROM AUD_TASK_RUN_LOG t JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
		WHERE t.TASK_ID = $1 AND r.BACKFILL = 'N' AND t.STATUS IN (` + records.SQLEndedTasks + `)
		ORDER BY t.TASK_RUN_ID DESC LIMIT 1`,
	running: `SELECT t.PIPELINE_RUN_ID, t.TASK_RUN_ID, t.START_DATE
		FROM AUD_TASK_RUN_LOG t JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
		WHERE t.TASK_ID = $1 AND r.BACKFILL = 'N' AND t.STATUS = ` + records.SQL(records.TaskInProgress) + ` AND r.STATUS = ` + records.SQL(records.RunInProgress) + `
		ORDER BY t.TASK_RUN_ID DESC LIMIT 1`,
	lengths: `SELECT t.START_DATE, t.END_DATE
		FROM AUD_TASK_RUN_LOG t JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
		WHERE t.TASK_ID = $1 AND r.BACKFILL = 'N' AND r.TRIGGER_KIND <> ` + records.SQL(records.TriggerStandIn) + `
			AND t.STATUS IN (` + records.SQL(records.TaskSuccess, records.TaskFailed) + `) AND t.END_DATE IS NOT NULL
		ORDER BY t.TASK_RUN_ID DESC LIMIT 100`,
	consumed: `SELECT CONSUMED_PIPELINE_RUN_ID, CONSUMED_TASK_RUN_ID, CONSUMED_REVISION
		FROM AUD_DEPENDENCY_CONSUMPTION WHERE TASK_DEPENDENCY_ID = $1
		ORDER BY CONSUMPTION_ID DESC LIMIT 1`,
}

// queries returns the reads of the dependency's kind and the upstream id
// they take.
func (d Dependency) queries() (upstreamQueries, int64) {
	if d.OnTask {
		return taskQueries, d.UpstreamTaskID
	}
	return pipelineQueries, d.UpstreamPipelineID
}

// readError wraps a failed read of the dependency's upstream.
func readError(d Dependency, err error) error {
	return exit.Wrap(exit.EngineDB, err, "could not read the %s", d.Label())
}

// LatestOutput returns the upstream's latest finished output that is not
// part of a backfill, or nil when it has none.
func LatestOutput(ctx context.Context, q engine.Querier, d Dependency) (*Output, error) {
	qs, id := d.queries()
	var o Output
	var task sql.NullInt64
	var data int
	err := q.QueryRowContext(ctx, qs.latest, id).Scan(&o.PipelineRunID, &task, &o.Status, &o.Revision, &data)
	if engine.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, readError(d, err)
	}
	o.TaskRunID, o.HasData = task.Int64, data == 1
	return &o, nil
}

// LastConsumed returns what the dependency consumed last, or nil when it has
// consumed nothing.
func LastConsumed(ctx context.Context, q engine.Querier, d Dependency) (*Consumed, error) {
	qs, _ := d.queries()
	var c Consumed
	var task sql.NullInt64
	err := q.QueryRowContext(ctx, qs.consumed, d.ID).Scan(&c.PipelineRunID, &task, &c.Revision)
	if engine.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read AUD_DEPENDENCY_CONSUMPTION for the %s", d.Label())
	}
	c.TaskRunID = task.Int64
	return &c, nil
}

// running is an upstream output that has not finished: the pipeline's
// IN-PROGRESS run, or the task's IN-PROGRESS row under it.
type running struct {
	Output
	Start time.Time
}

// runningOutput returns the upstream's output still in progress outside
// backfills, or nil. A later QUEUED or SKIPPED run does not hide it.
func runningOutput(ctx context.Context, q engine.Querier, d Dependency) (*running, error) {
	qs, id := d.queries()
	var r running
	var task sql.NullInt64
	var start engine.Time
	err := q.QueryRowContext(ctx, qs.running, id).Scan(&r.PipelineRunID, &task, &start)
	if engine.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, readError(d, err)
	}
	r.TaskRunID, r.Status, r.Start = task.Int64, string(records.RunInProgress), start.Time
	return &r, nil
}

// averageLength returns the upstream's average real run length: its latest
// runs (or task rows) that ended SUCCESS or FAILED, outside backfills and
// stand-in runs, that took some time. It is DefaultRunLength when there are
// none.
func averageLength(ctx context.Context, q engine.Querier, d Dependency) (time.Duration, error) {
	qs, id := d.queries()
	rows, err := q.QueryContext(ctx, qs.lengths, id)
	if err != nil {
		return 0, readError(d, err)
	}
	defer rows.Close()
	var total time.Duration
	n := 0
	for rows.Next() {
		var start, end engine.Time
		if err := rows.Scan(&start, &end); err != nil {
			return 0, readError(d, err)
		}
		if l := end.Time.Sub(start.Time); start.Valid && end.Valid && l > 0 {
			total += l
			n++
		}
	}
	if err := rows.Err(); err != nil {
		return 0, readError(d, err)
	}
	if n == 0 {
		return DefaultRunLength, nil
	}
	return total / time.Duration(n), nil
}
