package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/report"
)

// The path parameters.
type (
	codePath struct {
		Code string `path:"code" doc:"The pipeline's PIPELINE_CODE."`
	}
	runPath struct {
		ID int64 `path:"id" minimum:"1" doc:"The run's PIPELINE_RUN_ID."`
	}
	taskPath struct {
		ID   int64  `path:"id" minimum:"1" doc:"The run's PIPELINE_RUN_ID."`
		Task string `path:"task" doc:"The task's TASK_CODE in the run's pipeline."`
	}
	attemptPath struct {
		ID int64 `path:"id" minimum:"1" doc:"The attempt's ATTEMPT_ID."`
	}
)

// runsQuery asks for a page of a pipeline's runs.
type runsQuery struct {
	Code   string `path:"code" doc:"The pipeline's PIPELINE_CODE."`
	Limit  int    `query:"limit" default:"20" minimum:"1" maximum:"100" doc:"How many runs, newest first."`
	Before int64  `query:"before" minimum:"1" doc:"Only runs with a PIPELINE_RUN_ID below this one (the next_before of the page before)."`
}

// logQuery asks for an attempt's log from a byte offset.
type logQuery struct {
	ID     int64 `path:"id" minimum:"1" doc:"The attempt's ATTEMPT_ID."`
	Offset int64 `query:"offset" minimum:"0" doc:"The byte offset to read from (the next_offset of the read before)."`
}

func (s *server) readRoutes() {
	zone := s.p.Config.Orchestration.Location
	endpoint(s, apitoken.Viewer, huma.Operation{OperationID: "health", Method: http.MethodGet, Path: "/health",
		Summary: "Check the Engine DB and the token", Description: "Answers when the token authenticates and the Engine DB holds etl-craft's tables."},
		func(ctx context.Context, _ *struct{}) (*body[report.Health], error) {
			if err := inspect.Ready(ctx, s.p.DB); err != nil {
				return nil, err
			}
			t := tokenOf(ctx)
			return reply(report.Health{Schema: report.SchemaHealth, Status: "ok", EngineDB: string(s.p.DB.Kind()), Actor: t.Name, Role: string(t.Role)}), nil
		})
	endpoint(s, apitoken.Viewer, huma.Operation{OperationID: "list-pipelines", Method: http.MethodGet, Path: "/pipelines",
		Summary: "List the active pipelines", Description: "Every active pipeline with its pause state and next schedule tick, as `list --format json`."},
		func(ctx context.Context, _ *struct{}) (*body[report.PipelineList], error) {
			doc, err := inspect.ListPipelines(ctx, s.p.DB, zone, time.Now())
			return reply(doc), err
		})
	endpoint(s, apitoken.Viewer, huma.Operation{OperationID: "get-pipeline", Method: http.MethodGet, Path: "/pipelines/{code}",
		Summary: "Show an active pipeline", Description: "Its definition, pause state and next schedule tick."},
		func(ctx context.Context, in *codePath) (*body[report.PipelineView], error) {
			doc, err := inspect.PipelineView(ctx, s.p.DB, in.Code, zone, time.Now())
			return reply(doc), err
		})
	endpoint(s, apitoken.Viewer, huma.Operation{OperationID: "list-runs", Method: http.MethodGet, Path: "/pipelines/{code}/runs",
		Summary: "List a pipeline's runs", Description: "Newest first, a page at a time: pass the page's next_before as before for the next."},
		func(ctx context.Context, in *runsQuery) (*body[report.Runs], error) {
			doc, err := inspect.PipelineRuns(ctx, s.p.DB, in.Code, in.Limit, in.Before)
			return reply(doc), err
		})
	endpoint(s, apitoken.Viewer, huma.Operation{OperationID: "get-run", Method: http.MethodGet, Path: "/runs/{id}",
		Summary: "Show a run", Description: "The run with exactly this id; an id no run has is 404, never another run."},
		func(ctx context.Context, in *runPath) (*body[report.Run], error) {
			r, err := inspect.RunByID(ctx, s.p.DB, in.ID)
			return reply(r.Run), err
		})
	endpoint(s, apitoken.Viewer, huma.Operation{OperationID: "get-run-tasks", Method: http.MethodGet, Path: "/runs/{id}/tasks",
		Summary: "Show a run's tasks", Description: "The run and every active task of its pipeline under it, as `status --run-id --format json`."},
		func(ctx context.Context, in *runPath) (*body[report.Status], error) {
			r, err := inspect.RunByID(ctx, s.p.DB, in.ID)
			if err != nil {
				return nil, err
			}
			doc, err := inspect.RunStatus(ctx, s.p.DB, r.PipelineCode, inspect.RunSelector{ID: r.ID}, zone, time.Now())
			return reply(doc), err
		})
	endpoint(s, apitoken.Viewer, huma.Operation{OperationID: "explain-task", Method: http.MethodGet, Path: "/runs/{id}/tasks/{task}/explain",
		Summary: "Explain a task's state", Description: "Why the task is in its state under the run and what happens next, as `explain --format json`."},
		func(ctx context.Context, in *taskPath) (*body[report.Explain], error) {
			r, err := inspect.RunByID(ctx, s.p.DB, in.ID)
			if err != nil {
				return nil, err
			}
			doc, err := inspect.Explain(ctx, s.p.DB, r.PipelineCode, in.Task, inspect.RunSelector{ID: r.ID}, time.Now())
			return reply(doc), err
		})
	endpoint(s, apitoken.Viewer, huma.Operation{OperationID: "get-attempt", Method: http.MethodGet, Path: "/attempts/{id}",
		Summary: "Show an attempt"},
		func(ctx context.Context, in *attemptPath) (*body[report.Attempt], error) {
			doc, err := inspect.AttemptByID(ctx, s.p.DB, in.ID)
			return reply(doc), err
		})
	endpoint(s, apitoken.Viewer, huma.Operation{OperationID: "get-attempt-log", Method: http.MethodGet, Path: "/attempts/{id}/log",
		Summary: "Read an attempt's log", Description: "Up to 1 MiB of the attempt's log file from the byte offset; read on from next_offset."},
		func(ctx context.Context, in *logQuery) (*body[report.AttemptLog], error) {
			doc, err := inspect.AttemptLog(ctx, s.p.DB, in.ID, in.Offset, MaxLogBytes)
			return reply(doc), err
		})
}
