package run

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
	"github.com/etl-craft/etl-craft/internal/records"
)

// taskRunRow is a task's summary under a run with its active attempt.
type taskRunRow struct {
	taskRunID     int64
	up            upstream
	count         int
	message       string
	attemptStatus string // "" when no attempt is active
	owner         string
	queued        queued
	notBefore     time.Time
}

// loadTaskRuns reads every task run of a run, by task id.
func loadTaskRuns(ctx context.Context, q engine.Querier, runID int64) (map[int64]taskRunRow, error) {
	rows, err := records.TaskRunsOf(ctx, q, runID)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the task runs of pipeline_run_id=%d", runID)
	}
	out := make(map[int64]taskRunRow, len(rows))
	for id, t := range rows {
		r := taskRunRow{taskRunID: t.TaskRunID, count: t.AttemptCount, message: t.ErrorMessage.String,
			up: upstream{Status: string(t.Status), HasData: t.HasData()}, queued: queued{TaskRunID: t.TaskRunID}}
		if a := t.Active; a != nil {
			r.attemptStatus, r.owner, r.notBefore = string(a.Status), a.Owner, a.NotBefore.Time
			r.queued.AttemptID, r.queued.Number = a.AttemptID, a.Number
		}
		out[id] = r
	}
	return out, nil
}

// upstream is what a dependency judges of its upstream task: the status its
// summary ended with, and whether it wrote rows.
type upstream struct {
	Status  string
	HasData bool
}

// judged returns the upstream as the readiness rule reads it.
func (u upstream) judged() readiness.Upstream {
	return readiness.Upstream{Status: records.TaskRunStatus(u.Status), HasData: u.HasData}
}

// rowsUpstream returns how the upstream of a dependency stands among a run's
// task runs: not started when it has none.
func rowsUpstream(rows map[int64]taskRunRow) func(d *pipeline.Dependency) readiness.Upstream {
	return func(d *pipeline.Dependency) readiness.Upstream {
		row, ok := rows[d.UpstreamTaskID]
		if !ok {
			return readiness.Upstream{}
		}
		return row.up.judged()
	}
}
