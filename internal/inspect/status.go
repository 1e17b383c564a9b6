package inspect

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
)

// RunStatus reports the selected run (see ViewRun) of the pipeline and
// each active task under it. Durations of what has not ended run to now.
func RunStatus(ctx context.Context, q engine.Querier, code string, sel RunSelector, now time.Time) (report.Status, error) {
	g, err := pipeline.Load(ctx, q, code)
	if err != nil {
		return report.Status{}, err
	}
	if err := g.Validate(); err != nil {
		return report.Status{}, err
	}
	pv, err := pipelineView(ctx, q, g.Pipeline)
	if err != nil {
		return report.Status{}, err
	}
	run, chosen, err := ViewRun(ctx, q, g.Pipeline, sel)
	if err != nil {
		return report.Status{}, err
	}
	ran, err := runTasks(ctx, q, run.ID)
	if err != nil {
		return report.Status{}, err
	}
	out := report.Status{Schema: report.SchemaStatus, Pipeline: pv, Run: run.Run, DurationSeconds: seconds(run.StartDate, run.EndDate, now),
		Tasks: []report.TaskStatus{}, BlockedByFailures: BlockedByFailures(g, ran), Chosen: chosen}
	for _, t := range g.Tasks {
		ts := report.TaskStatus{TaskID: t.ID, TaskCode: t.Code}
		if tr, ok := ran[t.ID]; ok {
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

// outcomes is a set of ways a task may end, as dependency types read them.
type outcomes uint8

const (
	withRows outcomes = 1 << iota // SUCCESS having written rows
	noRows                        // SUCCESS having written none
	failed
	skipped
	anyOutcome = withRows | noRows | failed | skipped
)

// satisfies reports whether one of the outcomes meets a dependency type.
func (o outcomes) satisfies(depType string) bool {
	switch depType {
	case pipeline.Success:
		return o&(withRows|noRows) != 0
	case pipeline.Failure:
		return o&failed != 0
	case pipeline.Always:
		return o != 0
	case pipeline.HasData:
		return o&withRows != 0
	}
	return false
}

// BlockedByFailures returns, in code order, the tasks of a valid graph that
// have no row under the run and can never run because tasks FAILED: the run
// condition cannot be met once every failure is taken as final, though it
// could be if the failures were retried. Tasks that cannot run whatever
// happens to the failures are not listed: failures do not block them.
func BlockedByFailures(g *pipeline.Graph, ran map[int64]report.TaskRun) []string {
	final := cannotRun(g, ran, true)
	retried := cannotRun(g, ran, false)
	out := []string{}
	for _, t := range g.Tasks {
		if final[t] && !retried[t] {
			out = append(out, t.Code)
		}
	}
	return out
}

// cannotRun returns the tasks without a row whose run condition can no
// longer be met, judging each upstream by how it may still end. A FAILED
// task may end any way unless failuresFinal; a task that cannot run will
// be SKIPPED. Cross-pipeline dependencies are assumed satisfiable.
func cannotRun(g *pipeline.Graph, ran map[int64]report.TaskRun, failuresFinal bool) map[*pipeline.Task]bool {
	blocked := map[*pipeline.Task]bool{}
	may := map[int64]outcomes{}
	for _, wave := range g.Waves() {
		for _, t := range wave {
			tr, hasRow := ran[t.ID]
			if !hasRow {
				possible := 0
				for _, d := range t.Deps {
					if d.CrossPipeline || may[d.UpstreamTaskID].satisfies(d.Type) {
						possible++
					}
				}
				blocked[t] = possible < t.Required()
			}
			may[t.ID] = mayEnd(tr, hasRow, blocked[t], failuresFinal)
		}
	}
	return blocked
}

// mayEnd returns how a task may still end.
func mayEnd(tr report.TaskRun, hasRow, blocked, failuresFinal bool) outcomes {
	switch {
	case !hasRow && blocked:
		return skipped
	case !hasRow:
		return anyOutcome
	}
	switch tr.Status {
	case StatusSuccess:
		wrote := tr.RowsWritten
		if wrote == nil {
			wrote = tr.TargetCount
		}
		if wrote != nil && *wrote > 0 {
			return withRows
		}
		return noRows
	case StatusFailed:
		if failuresFinal {
			return failed
		}
		return anyOutcome
	case StatusSkipped:
		return skipped
	case StatusCancelled:
		return 0
	}
	return anyOutcome
}
