package inspect

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// RunStatus reports the selected run (see ViewRun) of the pipeline and
// each active task under it. Durations of what has not ended run to now;
// the pipeline's next tick is the first after now (zone as in ListPipelines).
func RunStatus(ctx context.Context, q engine.Querier, code string, sel RunSelector, zone *time.Location, now time.Time) (report.Status, error) {
	g, err := pipeline.Load(ctx, q, code)
	if err != nil {
		return report.Status{}, err
	}
	if err := g.Validate(); err != nil {
		return report.Status{}, err
	}
	pv, err := pipelineView(ctx, q, g.Pipeline, zone, now)
	if err != nil {
		return report.Status{}, err
	}
	run, chosen, err := ViewRun(ctx, q, g.Pipeline, sel)
	if err != nil {
		return report.Status{}, err
	}
	ran, err := records.TaskRunsOf(ctx, q, run.ID)
	if err != nil {
		return report.Status{}, err
	}
	out := report.Status{Schema: report.SchemaStatus, Pipeline: pv, Run: run.Run, DurationSeconds: seconds(run.StartDate, run.EndDate, now),
		Tasks: []report.TaskStatus{}, BlockedByFailures: BlockedByFailures(g, ran), Chosen: chosen}
	for _, t := range g.Tasks {
		ts := report.TaskStatus{TaskID: t.ID, TaskCode: t.Code}
		if row, ok := ran[t.ID]; ok {
			tr := taskRunDoc(row)
			status := tr.Status
			ts.Status, ts.Attempts, ts.RowsWritten = &status, tr.AttemptCount, tr.RowsWritten
			ts.DurationSeconds = seconds(tr.StartDate, tr.EndDate, now)
			if tr.ErrorMessage != nil {
				line := firstLine(*tr.ErrorMessage)
				ts.Error = &line
			}
		}
		out.Tasks = append(out.Tasks, ts)
	}
	return out, nil
}

// BlockedByFailures returns, in code order, the tasks of a valid graph that
// have no row under the run and can never run because tasks FAILED: the run
// condition cannot be met once every failure is taken as final, though it
// could be if the failures were retried. Tasks that cannot run whatever
// happens to the failures are not listed: failures do not block them.
func BlockedByFailures(g *pipeline.Graph, ran map[int64]records.TaskRun) []string {
	final := cannotRun(g, ran, readiness.FailuresFinal)
	retried := cannotRun(g, ran, readiness.FailuresPending)
	out := []string{}
	for _, t := range g.Tasks {
		if final[t] && !retried[t] {
			out = append(out, t.Code)
		}
	}
	return out
}

// cannotRun returns the tasks without a row that the readiness rule says can
// never run, failures counting as given. A task without a row that cannot
// run will be SKIPPED, and its dependents judge it so. Dependencies on other
// pipelines are assumed satisfiable.
func cannotRun(g *pipeline.Graph, ran map[int64]records.TaskRun, failures readiness.Failures) map[*pipeline.Task]bool {
	blocked := map[*pipeline.Task]bool{}
	byID := map[int64]*pipeline.Task{}
	for _, wave := range g.Waves() {
		for _, t := range wave {
			byID[t.ID] = t
			if _, hasRow := ran[t.ID]; hasRow {
				continue
			}
			v := readiness.Decide(readiness.Question{Task: t, Failures: failures,
				Upstream: func(d *pipeline.Dependency) readiness.Upstream {
					if blocked[byID[d.UpstreamTaskID]] {
						return readiness.Upstream{Status: records.TaskSkipped}
					}
					tr, ok := ran[d.UpstreamTaskID]
					return readiness.Of(tr, ok)
				}})
			blocked[t] = v.Decision == readiness.Never
		}
	}
	return blocked
}
