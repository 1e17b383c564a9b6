package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/etl-craft/etl-craft/internal/action"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
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

// operation is the document of what an operator change did (or its error),
// with the request fields its message names written as the API names them.
func (s *server) operation(ctx context.Context, c run.Change, err error) (*body[report.Operation], error) {
	if err != nil {
		return nil, err
	}
	// The change is made: its document is read whatever the client does.
	ctx = context.WithoutCancel(ctx)
	doc, err := inspect.Operation(ctx, s.p.DB, s.p.Config.Orchestration.Location, time.Now(), c.PipelineID, c.PipelineCode, c.RunID, c.TaskCode,
		exit.RenderFields(c.Message, fieldName))
	return reply(doc), err
}

func (s *server) changeRoutes() {
	act := s.actions()
	endpoint(s, apitoken.Operator, huma.Operation{OperationID: "trigger-run", Method: http.MethodPost, Path: "/pipelines/{code}/runs",
		DefaultStatus: http.StatusAccepted, Summary: "Trigger a run",
		Description: "Initializes the pipeline's run, or resumes the one in progress, as `run --init-only` does, and leaves it " +
			"IN-PROGRESS for the overseer (etl-craft server) to execute. The answer names the exact run; follow it with GET /runs/{id}."},
		func(ctx context.Context, in *triggerInput) (*body[report.Outcome], error) {
			var b triggerBody
			if in.Body != nil {
				b = *in.Body
			}
			out, err := act.Trigger(ctx, in.Code, b.RunDate, b.Reason)
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
			out, err := act.Backfill(ctx, in.Code, in.Body.First, in.Body.Last, in.Body.Reason)
			if err != nil {
				return nil, err
			}
			return reply(out.Document(fieldName)), nil
		})
	for _, verb := range []struct {
		name, summary string
		change        func(ctx context.Context, code, reason string) (run.Change, error)
	}{
		{"pause", "Pause a pipeline: start nothing of it until it is resumed", act.Pause},
		{"resume", "Resume a paused pipeline", act.Resume},
	} {
		endpoint(s, apitoken.Operator, huma.Operation{OperationID: verb.name + "-pipeline", Method: http.MethodPost,
			Path: "/pipelines/{code}/" + verb.name, Summary: verb.summary, Description: "As `" + verb.name + " --format json`."},
			func(ctx context.Context, in *pauseInput) (*body[report.Operation], error) {
				c, err := verb.change(ctx, in.Code, in.Body.Reason)
				return s.operation(ctx, c, err)
			})
	}
	endpoint(s, apitoken.Operator, huma.Operation{OperationID: "cancel-run", Method: http.MethodPost, Path: "/runs/{id}/cancel",
		Summary: "Cancel a run", Description: "Ends the run CANCELLED with its running tasks, as `cancel --run-id --format json`."},
		func(ctx context.Context, in *cancelInput) (*body[report.Operation], error) {
			c, err := act.Cancel(ctx, in.ID, in.Body.Reason)
			return s.operation(ctx, c, err)
		})
	endpoint(s, apitoken.Operator, huma.Operation{OperationID: "mark-task", Method: http.MethodPost, Path: "/runs/{id}/tasks/{task}/mark",
		Summary: "Set a task's status by hand", Description: "As `mark --run-id --task_code --format json`."},
		func(ctx context.Context, in *markInput) (*body[report.Operation], error) {
			c, err := act.Mark(ctx, action.Mark{RunID: in.ID, Task: in.Task, Status: in.Body.Status, Reason: in.Body.Reason,
				Rows: in.Body.Rows, Stale: in.Body.Stale})
			return s.operation(ctx, c, err)
		})
	endpoint(s, apitoken.Operator, huma.Operation{OperationID: "rerun-task", Method: http.MethodPost, Path: "/runs/{id}/tasks/{task}/rerun",
		Summary: "Run a task again", Description: "A new attempt of the task under the run, as `run --rerun --format json`; answers when it ended: check the document's status."},
		func(ctx context.Context, in *rerunInput) (*body[report.Outcome], error) {
			out, err := act.Rerun(ctx, in.ID, in.Task, in.Body.Reason, in.Body.WithDownstream)
			if err != nil {
				return nil, err
			}
			return reply(out.Document(fieldName)), nil
		})
}
