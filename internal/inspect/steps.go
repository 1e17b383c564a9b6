package inspect

import (
	"context"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// PipelineSteps lists the active tasks of the pipeline with their status
// under the selected run (see ViewRun), handler, type, run condition and
// active parameters.
func PipelineSteps(ctx context.Context, q engine.Querier, code string, sel RunSelector) (report.Steps, error) {
	g, err := pipeline.Load(ctx, q, code)
	if err != nil {
		return report.Steps{}, err
	}
	run, chosen, err := ViewRun(ctx, q, g.Pipeline, sel)
	if err != nil {
		return report.Steps{}, err
	}
	ran, err := records.TaskRunsOf(ctx, q, run.ID)
	if err != nil {
		return report.Steps{}, err
	}
	out := report.Steps{Schema: report.SchemaSteps, PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code,
		PipelineRunID: run.ID, Steps: []report.Step{}, Chosen: chosen}
	for _, t := range g.Tasks {
		s := report.Step{Schema: report.SchemaStep, PipelineID: g.Pipeline.ID, PipelineRunID: run.ID, TaskID: t.ID,
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
