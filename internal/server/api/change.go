package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/run"
)

// The request bodies.
type (
	triggerBody struct {
		RunDate string `json:"run_date,omitempty" format:"date" doc:"The date a new run runs as of (YYYY-MM-DD); today in Orchestration.Timezone when left out."`
		Reason  string `json:"reason,omitempty" maxLength:"4000" doc:"Why; recorded with the request."`
	}
	backfillBody struct {
		First  string `json:"first" format:"date" doc:"The first date (YYYY-MM-DD)."`
		Last   string `json:"last" format:"date" doc:"The last date, inclusive (YYYY-MM-DD)."`
		Reason string `json:"reason" minLength:"1" maxLength:"4000" pattern:"\\S" doc:"Why; recorded with the request. Must not be blank."`
	}
	reasonBody struct {
		Reason string `json:"reason" minLength:"1" maxLength:"4000" pattern:"\\S" doc:"Why; recorded with the change. Must not be blank."`
	}
	markBody struct {
		Status string `json:"status" enum:"SUCCESS,FAILED,SKIPPED" doc:"The task's new status."`
		Reason string `json:"reason" minLength:"1" maxLength:"4000" pattern:"\\S" doc:"Why; recorded with the change. Must not be blank."`
		Rows   *int64 `json:"rows,omitempty" minimum:"0" doc:"With SUCCESS: the task's row count, which HAS_DATA dependencies read."`
		Stale  bool   `json:"stale,omitempty" doc:"Reconcile the task first: mark a task whose process is gone once its lease expired."`
	}
	rerunBody struct {
		Reason         string `json:"reason" minLength:"1" maxLength:"4000" pattern:"\\S" doc:"Why; recorded with the change. Must not be blank."`
		WithDownstream bool   `json:"with_downstream,omitempty" doc:"Run every task downstream of it again too, in dependency order."`
	}
)

// The inputs of the state-changing endpoints: their path and body.
type (
	triggerInput struct {
		Code string `path:"code" doc:"The pipeline's PIPELINE_CODE."`
		Body *triggerBody
	}
	backfillInput struct {
		Code string `path:"code" doc:"The pipeline's PIPELINE_CODE."`
		Body backfillBody
	}
	pauseInput struct {
		Code string `path:"code" doc:"The pipeline's PIPELINE_CODE."`
		Body reasonBody
	}
	cancelInput struct {
		ID   int64 `path:"id" minimum:"1" doc:"The run's PIPELINE_RUN_ID."`
		Body reasonBody
	}
	markInput struct {
		ID   int64  `path:"id" minimum:"1" doc:"The run's PIPELINE_RUN_ID."`
		Task string `path:"task" doc:"The task's TASK_CODE in the run's pipeline."`
		Body markBody
	}
	rerunInput struct {
		ID   int64  `path:"id" minimum:"1" doc:"The run's PIPELINE_RUN_ID."`
		Task string `path:"task" doc:"The task's TASK_CODE in the run's pipeline."`
		Body rerunBody
	}
)

// changing returns the context of a change: the request's, with its actor,
// not cancelled when the client goes away, so that a change once begun is
// recorded whole.
func changing(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// operation is the document of what an operator change did, with the request
// fields its message names written as the API names them.
func (s *server) operation(ctx context.Context, pipelineID int64, code string, runID int64, taskCode, message string) (*body[report.Operation], error) {
	doc, err := inspect.Operation(ctx, s.p.DB, s.p.Config.Orchestration.Location, time.Now(), pipelineID, code, runID, taskCode,
		exit.RenderFields(message, fieldName))
	return reply(doc), err
}

func (s *server) changeRoutes() {
	sup := s.p.Supervisor
	endpoint(s, apitoken.Operator, huma.Operation{OperationID: "trigger-run", Method: http.MethodPost, Path: "/pipelines/{code}/runs",
		DefaultStatus: http.StatusAccepted, Summary: "Trigger a run",
		Description: "Initializes the pipeline's run, or resumes the one in progress, as `run --init-only` does, and leaves it " +
			"IN-PROGRESS for the overseer (etl-craft server) to execute. The answer names the exact run; follow it with GET /runs/{id}."},
		func(ctx context.Context, in *triggerInput) (*body[report.Outcome], error) {
			var b triggerBody
			if in.Body != nil {
				b = *in.Body
			}
			req := run.Request{PipelineCode: in.Code, RunDate: b.RunDate, Reason: b.Reason}
			if err := req.CheckRunDate(); err != nil {
				return nil, err
			}
			ctx = changing(ctx)
			if err := s.record(ctx, "trigger", map[string]any{"pipeline_code": in.Code, "run_date": b.RunDate, "reason": b.Reason}, in.Code, "", 0); err != nil {
				return nil, err
			}
			out, err := sup().InitRun(ctx, req)
			if err != nil {
				return nil, err
			}
			return reply(out.Document(fieldName)), nil
		})
	endpoint(s, apitoken.Operator, huma.Operation{OperationID: "backfill", Method: http.MethodPost, Path: "/pipelines/{code}/backfills",
		Summary: "Backfill a range of dates",
		Description: "Runs the whole pipeline once per date from first to last, oldest first, as `run --backfill` does, and " +
			"answers when it is done: check the document's status."},
		func(ctx context.Context, in *backfillInput) (*body[report.Backfill], error) {
			if _, err := run.BackfillDates(in.Body.First, in.Body.Last); err != nil {
				return nil, err
			}
			ctx = changing(ctx)
			if err := s.record(ctx, "backfill", map[string]any{"pipeline_code": in.Code, "first": in.Body.First, "last": in.Body.Last, "reason": in.Body.Reason},
				in.Code, "", 0); err != nil {
				return nil, err
			}
			out, err := sup().Backfill(ctx, run.BackfillRequest{PipelineCode: in.Code, From: in.Body.First, To: in.Body.Last, Reason: in.Body.Reason})
			if err != nil {
				return nil, err
			}
			return reply(out.Document(fieldName)), nil
		})
	for _, verb := range []struct {
		name, summary string
		change        func(ctx context.Context, db *engine.DB, pipelineID int64, reason string) (gate.Change, error)
	}{
		{"pause", "Pause a pipeline: start nothing of it until it is resumed", gate.Pause},
		{"resume", "Resume a paused pipeline", gate.Resume},
	} {
		endpoint(s, apitoken.Operator, huma.Operation{OperationID: verb.name + "-pipeline", Method: http.MethodPost,
			Path: "/pipelines/{code}/" + verb.name, Summary: verb.summary, Description: "As `" + verb.name + " --format json`."},
			func(ctx context.Context, in *pauseInput) (*body[report.Operation], error) {
				if s.p.Config.Orchestration.Mode == config.ModeRemote {
					return nil, gate.RefusedRemotely(verb.name)
				}
				ctx = changing(ctx)
				if err := s.record(ctx, verb.name, map[string]any{"pipeline_code": in.Code, "reason": in.Body.Reason}, in.Code, "", 0); err != nil {
					return nil, err
				}
				p, err := pipeline.Find(ctx, s.p.DB, in.Code)
				if err != nil {
					return nil, err
				}
				c, err := verb.change(ctx, s.p.DB, p.ID, in.Body.Reason)
				if err != nil {
					return nil, err
				}
				return s.operation(ctx, p.ID, p.Code, 0, "", c.Message)
			})
	}
	endpoint(s, apitoken.Operator, huma.Operation{OperationID: "cancel-run", Method: http.MethodPost, Path: "/runs/{id}/cancel",
		Summary: "Cancel a run", Description: "Ends the run CANCELLED with its running tasks, as `cancel --run-id --format json`."},
		func(ctx context.Context, in *cancelInput) (*body[report.Operation], error) {
			r, err := inspect.RunByID(ctx, s.p.DB, in.ID)
			if err != nil {
				return nil, err
			}
			ctx = changing(ctx)
			if err := s.record(ctx, "cancel", map[string]any{"run_id": in.ID, "reason": in.Body.Reason}, r.PipelineCode, "", r.ID); err != nil {
				return nil, err
			}
			c, err := sup().Cancel(ctx, run.CancelRequest{PipelineCode: r.PipelineCode, RunID: r.ID, Reason: in.Body.Reason})
			if err != nil {
				return nil, err
			}
			return s.operation(ctx, c.PipelineID, c.PipelineCode, c.RunID, c.TaskCode, c.Message)
		})
	endpoint(s, apitoken.Operator, huma.Operation{OperationID: "mark-task", Method: http.MethodPost, Path: "/runs/{id}/tasks/{task}/mark",
		Summary: "Set a task's status by hand", Description: "As `mark --run-id --task_code --format json`."},
		func(ctx context.Context, in *markInput) (*body[report.Operation], error) {
			r, err := inspect.RunByID(ctx, s.p.DB, in.ID)
			if err != nil {
				return nil, err
			}
			ctx = changing(ctx)
			if err := s.record(ctx, "mark", map[string]any{"run_id": in.ID, "task_code": in.Task, "status": in.Body.Status, "reason": in.Body.Reason,
				"rows": in.Body.Rows, "stale": in.Body.Stale}, r.PipelineCode, in.Task, r.ID); err != nil {
				return nil, err
			}
			c, err := sup().Mark(ctx, run.MarkRequest{PipelineCode: r.PipelineCode, TaskCode: in.Task, RunID: r.ID, Status: in.Body.Status,
				Reason: in.Body.Reason, Rows: in.Body.Rows, Stale: in.Body.Stale})
			if err != nil {
				return nil, err
			}
			return s.operation(ctx, c.PipelineID, c.PipelineCode, c.RunID, c.TaskCode, c.Message)
		})
	endpoint(s, apitoken.Operator, huma.Operation{OperationID: "rerun-task", Method: http.MethodPost, Path: "/runs/{id}/tasks/{task}/rerun",
		Summary: "Run a task again", Description: "A new attempt of the task under the run, as `run --rerun --format json`; answers when it ended: check the document's status."},
		func(ctx context.Context, in *rerunInput) (*body[report.Outcome], error) {
			r, err := inspect.RunByID(ctx, s.p.DB, in.ID)
			if err != nil {
				return nil, err
			}
			ctx = changing(ctx)
			if err := s.record(ctx, "rerun", map[string]any{"run_id": in.ID, "task_code": in.Task, "reason": in.Body.Reason, "with_downstream": in.Body.WithDownstream},
				r.PipelineCode, in.Task, r.ID); err != nil {
				return nil, err
			}
			out, err := sup().Rerun(ctx, run.Request{PipelineCode: r.PipelineCode, TaskCode: in.Task, RunID: r.ID, Reason: in.Body.Reason}, in.Body.WithDownstream)
			if err != nil {
				return nil, err
			}
			return reply(out.Document(fieldName)), nil
		})
}
