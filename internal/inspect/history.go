package inspect

import (
	"context"
	"database/sql"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// DefaultHistoryLimit is how many runs history lists without --limit.
const DefaultHistoryLimit = 20

// HistoryRequest says what history to read.
type HistoryRequest struct {
	PipelineCode string
	// TaskCode, when set, asks for that task's runs instead of the pipeline's.
	TaskCode string
	// Selector names one run. Without it, the most recent runs are listed,
	// newest first, up to Limit.
	Selector RunSelector
	// All asks for the most recent runs explicitly; a Selector with it is
	// a usage error.
	All   bool
	Limit int
}

// RunHistory reads the history the request asks for. --all with a run
// selector, or a limit below 1, is a usage error (exit 2); a selector that
// matches no run of the pipeline is exit 9. A pipeline that has never run
// has an empty history whatever the selection.
func RunHistory(ctx context.Context, q engine.Querier, req HistoryRequest) (report.History, error) {
	if req.Limit < 1 {
		return report.History{}, exit.Fieldf(exit.Usage, "{limit} must be 1 or more, got %d", req.Limit)
	}
	if req.All && !req.Selector.IsZero() {
		return report.History{}, exit.Fieldf(exit.Usage, "{all} lists the recent runs: do not pass {run_id} or {run_key} with it")
	}
	g, err := pipeline.Load(ctx, q, req.PipelineCode)
	if err != nil {
		return report.History{}, err
	}
	p := g.Pipeline
	h := report.History{Schema: report.SchemaHistory, PipelineID: p.ID, PipelineCode: p.Code, Runs: []report.Run{}, TaskRuns: []report.TaskRun{},
		Changes: []report.Intervention{}}
	var task *pipeline.Task
	if req.TaskCode != "" {
		if task, err = g.FindTask(req.TaskCode); err != nil {
			return report.History{}, err
		}
		h.TaskCode = &task.Code
	}
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1", p.ID).Scan(&n); err != nil {
		return report.History{}, readError(err, "AUD_PIPELINES_RUN_LOG")
	}
	if n == 0 {
		return h, nil
	}
	// The runs shown: the selected one, or the latest req.Limit.
	filter, args := "WHERE r.PIPELINE_ID = $1 ", []any{p.ID}
	recent := req.Selector.IsZero()
	if recent {
		args = append(args, req.Limit)
	} else {
		run, err := SelectRun(ctx, q, p, req.Selector)
		if err != nil {
			return report.History{}, err
		}
		filter += "AND r.PIPELINE_RUN_ID = $2 "
		args = append(args, run.ID)
	}
	order := "ORDER BY r.PIPELINE_RUN_ID DESC"
	if recent {
		order += " LIMIT $2"
	}
	listed := map[int64]bool{}
	if task == nil {
		rows, err := records.QueryRuns(ctx, q, "SELECT "+records.RunColumns+records.RunsFrom+filter+order, args...)
		if err != nil {
			return report.History{}, err
		}
		for _, r := range runDocs(rows) {
			h.Runs = append(h.Runs, r.Run)
			listed[r.ID] = true
		}
	} else {
		args = append(args, task.ID)
		if h.TaskRuns, err = queryTaskRuns(ctx, q,
			"SELECT "+records.TaskRunColumns+records.TaskRunsFrom+filter+"AND tr.TASK_ID = $3 "+order, args...); err != nil {
			return report.History{}, err
		}
		if err := loadAttempts(ctx, q, h.TaskRuns); err != nil {
			return report.History{}, err
		}
		for _, t := range h.TaskRuns {
			listed[t.PipelineRunID] = true
		}
	}
	changes, err := interventions(ctx, q, p.ID)
	if err != nil {
		return report.History{}, err
	}
	for _, c := range changes {
		if listed[c.PipelineRunID] && (task == nil || c.TaskID == nil || *c.TaskID == task.ID) {
			h.Changes = append(h.Changes, c)
		}
	}
	return h, nil
}

// interventions returns the pipeline's interventions in the order they were made.
func interventions(ctx context.Context, q engine.Querier, pipelineID int64) ([]report.Intervention, error) {
	return queryInterventions(ctx, q, "i.PIPELINE_ID = $1", pipelineID)
}

// RunInterventions returns the interventions made under the run (marks,
// cancels, reruns, gate bypasses), in the order they were made.
func RunInterventions(ctx context.Context, q engine.Querier, runID int64) ([]report.Intervention, error) {
	return queryInterventions(ctx, q, "i.PIPELINE_RUN_ID = $1", runID)
}

// queryInterventions returns the interventions that match the condition
// on AUD_RUN_INTERVENTIONS i, in the order they were made.
func queryInterventions(ctx context.Context, q engine.Querier, cond string, arg any) ([]report.Intervention, error) {
	rows, err := q.QueryContext(ctx, `SELECT i.INTERVENTION_ID, i.PIPELINE_RUN_ID, i.TASK_ID, t.TASK_CODE, i.ACTION,
			i.FROM_STATUS, i.TO_STATUS, i.TARGET_COUNT, i.REASON, i.REQUESTED_BY, i.REQUESTED_BY_KIND, i.REQUESTED_AT
		FROM AUD_RUN_INTERVENTIONS i LEFT JOIN CFG_TASKS t ON t.TASK_ID = i.TASK_ID
		WHERE `+cond+` ORDER BY i.INTERVENTION_ID`, arg)
	if err != nil {
		return nil, readError(err, "AUD_RUN_INTERVENTIONS")
	}
	defer rows.Close()
	var out []report.Intervention
	for rows.Next() {
		var c report.Intervention
		var taskID, target sql.NullInt64
		var taskCode, from, to, kind sql.NullString
		var at engine.Time
		if err := rows.Scan(&c.InterventionID, &c.PipelineRunID, &taskID, &taskCode, &c.Action, &from, &to, &target,
			&c.Reason, &c.RequestedBy, &kind, &at); err != nil {
			return nil, readError(err, "AUD_RUN_INTERVENTIONS")
		}
		c.TaskID, c.TaskCode, c.TargetCount = nullInt(taskID), nullString(taskCode), nullInt(target)
		c.FromStatus, c.ToStatus, c.RequestedByKind = nullString(from), nullString(to), nullString(kind)
		c.RequestedAt = report.Instant{Time: at.Time}
		out = append(out, c)
	}
	return out, rows.Err()
}
