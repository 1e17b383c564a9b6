package inspect

import (
	"context"
	"database/sql"
	"encoding/json"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
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

// Intervention is one operator change to a run (an AUD_RUN_INTERVENTIONS row).
type Intervention struct {
	InterventionID int64 `json:"intervention_id"`
	PipelineRunID  int64 `json:"pipeline_run_id"`
	// TaskID and TaskCode are nil for a change to the run itself.
	TaskID          *int64  `json:"task_id"`
	TaskCode        *string `json:"task_code"`
	Action          string  `json:"action"`
	FromStatus      *string `json:"from_status"`
	ToStatus        *string `json:"to_status"`
	TargetCount     *int64  `json:"target_count"`
	Reason          string  `json:"reason"`
	RequestedBy     string  `json:"requested_by"`
	RequestedByKind *string `json:"requested_by_kind"`
	RequestedAt     Instant `json:"requested_at"`
}

// History is a pipeline's runs, or one task's runs, newest first, and the
// interventions made on the runs shown. JSON lists either kind as
// "entries".
type History struct {
	Schema       string  `json:"schema"`
	PipelineID   int64   `json:"pipeline_id"`
	PipelineCode string  `json:"pipeline_code"`
	TaskCode     *string `json:"task_code"`
	// Runs is the pipeline view; TaskRuns (with their attempts) the task view.
	Runs     []Run          `json:"-"`
	TaskRuns []TaskRun      `json:"-"`
	Changes  []Intervention `json:"changes"`
}

// MarshalJSON writes the history with its runs or task runs as "entries".
func (h History) MarshalJSON() ([]byte, error) {
	type plain History
	var entries any = h.Runs
	if h.TaskCode != nil {
		entries = h.TaskRuns
	}
	return json.Marshal(struct {
		plain
		Entries any `json:"entries"`
	}{plain(h), entries})
}

// Empty reports whether the history lists no run.
func (h History) Empty() bool { return len(h.Runs) == 0 && len(h.TaskRuns) == 0 }

// RunHistory reads the history the request asks for. --all with a run
// selector, or a limit below 1, is a usage error (exit 2); a selector that
// matches no run of the pipeline is exit 9. A pipeline that has never run
// has an empty history whatever the selection.
func RunHistory(ctx context.Context, q engine.Querier, req HistoryRequest) (History, error) {
	if req.Limit < 1 {
		return History{}, exit.Fieldf(exit.Usage, "{limit} must be 1 or more, got %d", req.Limit)
	}
	if req.All && !req.Selector.IsZero() {
		return History{}, exit.Fieldf(exit.Usage, "{all} lists the recent runs: do not pass {run_id} or {run_key} with it")
	}
	g, err := pipeline.Load(ctx, q, req.PipelineCode)
	if err != nil {
		return History{}, err
	}
	p := g.Pipeline
	h := History{Schema: SchemaHistory, PipelineID: p.ID, PipelineCode: p.Code, Runs: []Run{}, TaskRuns: []TaskRun{},
		Changes: []Intervention{}}
	var task *pipeline.Task
	if req.TaskCode != "" {
		if task, err = g.FindTask(req.TaskCode); err != nil {
			return History{}, err
		}
		h.TaskCode = &task.Code
	}
	var n int
	if err := q.QueryRowContext(ctx, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1", p.ID).Scan(&n); err != nil {
		return History{}, readError(err, "AUD_PIPELINES_RUN_LOG")
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
			return History{}, err
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
		if h.Runs, err = queryRuns(ctx, q, "SELECT "+runColumns+runsFrom+filter+order, args...); err != nil {
			return History{}, err
		}
		for _, r := range h.Runs {
			listed[r.ID] = true
		}
	} else {
		args = append(args, task.ID)
		if h.TaskRuns, err = queryTaskRuns(ctx, q,
			"SELECT "+taskRunColumns+taskRunsFrom+filter+"AND tr.TASK_ID = $3 "+order, args...); err != nil {
			return History{}, err
		}
		if err := loadAttempts(ctx, q, h.TaskRuns); err != nil {
			return History{}, err
		}
		for _, t := range h.TaskRuns {
			listed[t.PipelineRunID] = true
		}
	}
	changes, err := interventions(ctx, q, p.ID)
	if err != nil {
		return History{}, err
	}
	for _, c := range changes {
		if listed[c.PipelineRunID] && (task == nil || c.TaskID == nil || *c.TaskID == task.ID) {
			h.Changes = append(h.Changes, c)
		}
	}
	return h, nil
}

// interventions returns the pipeline's interventions in the order they were made.
func interventions(ctx context.Context, q engine.Querier, pipelineID int64) ([]Intervention, error) {
	rows, err := q.QueryContext(ctx, `SELECT i.INTERVENTION_ID, i.PIPELINE_RUN_ID, i.TASK_ID, t.TASK_CODE, i.ACTION,
			i.FROM_STATUS, i.TO_STATUS, i.TARGET_COUNT, i.REASON, i.REQUESTED_BY, i.REQUESTED_BY_KIND, i.REQUESTED_AT
		FROM AUD_RUN_INTERVENTIONS i LEFT JOIN CFG_TASKS t ON t.TASK_ID = i.TASK_ID
		WHERE i.PIPELINE_ID = $1 ORDER BY i.INTERVENTION_ID`, pipelineID)
	if err != nil {
		return nil, readError(err, "AUD_RUN_INTERVENTIONS")
	}
	defer rows.Close()
	var out []Intervention
	for rows.Next() {
		var c Intervention
		var taskID, target sql.NullInt64
		var taskCode, from, to, kind sql.NullString
		var at engine.Time
		if err := rows.Scan(&c.InterventionID, &c.PipelineRunID, &taskID, &taskCode, &c.Action, &from, &to, &target,
			&c.Reason, &c.RequestedBy, &kind, &at); err != nil {
			return nil, readError(err, "AUD_RUN_INTERVENTIONS")
		}
		c.TaskID, c.TaskCode, c.TargetCount = nullInt(taskID), nullString(taskCode), nullInt(target)
		c.FromStatus, c.ToStatus, c.RequestedByKind = nullString(from), nullString(to), nullString(kind)
		c.RequestedAt = Instant{at.Time}
		out = append(out, c)
	}
	return out, rows.Err()
}
