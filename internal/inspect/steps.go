package inspect

import (
	"context"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Step is an active task and its state under the selected run.
type Step struct {
	Schema        string `json:"schema"`
	PipelineID    int64  `json:"pipeline_id"`
	PipelineRunID int64  `json:"pipeline_run_id"`
	TaskID        int64  `json:"task_id"`
	TaskCode      string `json:"task_code"`
	// TaskRunID is nil while the task has no row under the run.
	TaskRunID *int64 `json:"task_run_id"`
	TaskType  string `json:"task_type"`
	Handler   string `json:"handler"`
	// RunCondition is ALL, ANY or N; RunConditionCount is N's count.
	RunCondition      string            `json:"run_condition"`
	RunConditionCount *int              `json:"run_condition_count"`
	Parameters        map[string]string `json:"parameters"`
	// Status is nil while the task has no row under the run.
	Status *string `json:"status"`
	// Condition is the run condition as text shows it: ALL, ANY or N=<count>.
	Condition string `json:"-"`
}

// Steps are a pipeline's active tasks, in code order, under one run.
type Steps struct {
	Schema        string `json:"schema"`
	PipelineID    int64  `json:"pipeline_id"`
	PipelineCode  string `json:"pipeline_code"`
	PipelineRunID int64  `json:"pipeline_run_id"`
	Steps         []Step `json:"steps"`
	// Chosen says how the run was chosen (see ViewRun).
	Chosen Choice `json:"-"`
}

// PipelineSteps lists the active tasks of the pipeline with their status
// under the selected run (see ViewRun), handler, type, run condition and
// active parameters.
func PipelineSteps(ctx context.Context, q engine.Querier, code string, sel RunSelector) (Steps, error) {
	g, err := pipeline.Load(ctx, q, code)
	if err != nil {
		return Steps{}, err
	}
	run, chosen, err := ViewRun(ctx, q, g.Pipeline, sel)
	if err != nil {
		return Steps{}, err
	}
	ran, err := records.TaskRunsOf(ctx, q, run.ID)
	if err != nil {
		return Steps{}, err
	}
	out := Steps{Schema: SchemaSteps, PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code,
		PipelineRunID: run.ID, Steps: []Step{}, Chosen: chosen}
	for _, t := range g.Tasks {
		s := Step{Schema: SchemaStep, PipelineID: g.Pipeline.ID, PipelineRunID: run.ID, TaskID: t.ID,
			TaskCode: t.Code, TaskType: t.Type, Handler: t.Handler, RunCondition: t.RunCondition,
			Parameters: t.Params, Condition: t.ConditionLabel()}
		if t.RunCondition == pipeline.N {
			n := t.RunConditionCount
			s.RunConditionCount = &n
		}
		if tr, ok := ran[t.ID]; ok {
			id, status := tr.TaskRunID, string(tr.Status)
			s.TaskRunID, s.Status = &id, &status
		}
		out.Steps = append(out.Steps, s)
	}
	return out, nil
}
