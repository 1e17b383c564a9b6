// Package action is what a person or a tool may change through
// `etl-craft server`: trigger, backfill, pause, resume, cancel, mark and
// rerun, and the API tokens. The HTTP API and the web console are two faces
// of these operations, so each exists once, here, and both call it: a
// refusal reads the same in both, and both record it the same way.
//
// Each action checks its request, records it in AUD_ACTIONS as "<front
// end> <verb>" (such as "api trigger" or "console pause"), with the context's
// actor and the request's fields as arguments (masked), before it acts: a
// request that cannot be recorded is not carried out (audit.Record). Then it
// calls the domain package that owns the change (run, gate, apitoken), in a
// context that the client going away does not cancel, so that a change once
// begun is recorded whole.
package action

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/run"
)

// The front ends, as the first word of the commands they record.
const (
	API     = "api"
	Console = "console"
)

// Actions are the actions of one open project, asked for through one front
// end.
type Actions struct {
	Project *project.Project
	// Via is the front end: API or Console.
	Via string
}

// record writes the request's immutable AUD_ACTIONS row, as the context's
// actor, before the request acts: the command is "<Via> <verb>", the
// arguments the request's fields (masked). A request that cannot be
// recorded does not act (audit.Record), and its error says so.
func (a Actions) record(ctx context.Context, verb string, args map[string]any, pipelineCode, taskCode string, runID int64) error {
	req := audit.Request{Command: a.Via + " " + verb, Arguments: args, PipelineCode: pipelineCode, TaskCode: taskCode,
		PipelineRunID: runID, StartedAt: time.Now()}
	_, err := audit.Record(ctx, a.Project.DB, req)
	return err
}

// changing returns the context of a change: ctx with its actor, not
// cancelled when the client goes away.
func changing(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// Trigger initializes the pipeline's run as of runDate (today in
// Orchestration.Timezone when empty), or resumes the one in progress, as
// `run --init-only` does, and leaves it IN-PROGRESS for the overseer to
// execute.
func (a Actions) Trigger(ctx context.Context, code, runDate, reason string) (run.Outcome, error) {
	req := run.Request{PipelineCode: code, RunDate: runDate, Reason: reason}
	if err := req.CheckRunDate(); err != nil {
		return run.Outcome{}, err
	}
	ctx = changing(ctx)
	if err := a.record(ctx, "trigger", map[string]any{"pipeline_code": code, "run_date": runDate, "reason": reason}, code, "", 0); err != nil {
		return run.Outcome{}, err
	}
	return a.Project.Supervisor().InitRun(ctx, req)
}

// Backfill runs the whole pipeline once per date from first to last
// (YYYY-MM-DD, inclusive), oldest first, as `run --backfill` does, and
// returns once it is done.
func (a Actions) Backfill(ctx context.Context, code, first, last, reason string) (run.BackfillOutcome, error) {
	if _, err := run.BackfillDates(first, last); err != nil {
		return run.BackfillOutcome{}, err
	}
	ctx = changing(ctx)
	if err := a.record(ctx, "backfill", map[string]any{"pipeline_code": code, "first": first, "last": last, "reason": reason}, code, "", 0); err != nil {
		return run.BackfillOutcome{}, err
	}
	return a.Project.Supervisor().Backfill(ctx, run.BackfillRequest{PipelineCode: code, From: first, To: last, Reason: reason})
}

// Pause pauses the pipeline for the reason: the server starts nothing of it
// until it is resumed.
func (a Actions) Pause(ctx context.Context, code, reason string) (run.Change, error) {
	return a.pauseOrResume(ctx, "pause", gate.Pause, code, reason)
}

// Resume resumes the paused pipeline, for the reason.
func (a Actions) Resume(ctx context.Context, code, reason string) (run.Change, error) {
	return a.pauseOrResume(ctx, "resume", gate.Resume, code, reason)
}

// pauseOrResume records and makes a pause or a resume (verb), refused in
// remote mode, where the orchestrator pauses.
func (a Actions) pauseOrResume(ctx context.Context, verb string,
	change func(ctx context.Context, db *engine.DB, pipelineID int64, reason string) (gate.Change, error), code, reason string) (run.Change, error) {
	if a.Project.Config.Orchestration.Mode == config.ModeRemote {
		return run.Change{}, gate.RefusedRemotely(verb)
	}
	ctx = changing(ctx)
	if err := a.record(ctx, verb, map[string]any{"pipeline_code": code, "reason": reason}, code, "", 0); err != nil {
		return run.Change{}, err
	}
	p, err := pipeline.Find(ctx, a.Project.DB, code)
	if err != nil {
		return run.Change{}, err
	}
	c, err := change(ctx, a.Project.DB, p.ID, reason)
	if err != nil {
		return run.Change{}, err
	}
	return run.Change{PipelineID: p.ID, PipelineCode: p.Code, Message: c.Message}, nil
}

// Cancel ends the run with the exact id CANCELLED, with its running tasks.
func (a Actions) Cancel(ctx context.Context, runID int64, reason string) (run.Change, error) {
	r, err := inspect.RunByID(ctx, a.Project.DB, runID)
	if err != nil {
		return run.Change{}, err
	}
	ctx = changing(ctx)
	if err := a.record(ctx, "cancel", map[string]any{"run_id": runID, "reason": reason}, r.PipelineCode, "", r.ID); err != nil {
		return run.Change{}, err
	}
	return a.Project.Supervisor().Cancel(ctx, run.CancelRequest{PipelineCode: r.PipelineCode, RunID: r.ID, Reason: reason})
}

// Mark is a task's new status set by hand, under the run with the exact
// RunID.
type Mark struct {
	RunID int64
	Task  string
	// Status is SUCCESS, FAILED or SKIPPED.
	Status string
	Reason string
	// Rows, with SUCCESS, is the task's row count.
	Rows *int64
	// Stale reconciles the task first (see run.MarkRequest).
	Stale bool
}

// Mark sets a task's status by hand, as `mark` does.
func (a Actions) Mark(ctx context.Context, m Mark) (run.Change, error) {
	r, err := inspect.RunByID(ctx, a.Project.DB, m.RunID)
	if err != nil {
		return run.Change{}, err
	}
	ctx = changing(ctx)
	if err := a.record(ctx, "mark", map[string]any{"run_id": m.RunID, "task_code": m.Task, "status": m.Status, "reason": m.Reason,
		"rows": m.Rows, "stale": m.Stale}, r.PipelineCode, m.Task, r.ID); err != nil {
		return run.Change{}, err
	}
	return a.Project.Supervisor().Mark(ctx, run.MarkRequest{PipelineCode: r.PipelineCode, TaskCode: m.Task, RunID: r.ID,
		Status: m.Status, Reason: m.Reason, Rows: m.Rows, Stale: m.Stale})
}

// Rerun runs the task again under the run with the exact id, and with
// withDownstream every task downstream of it too, in dependency order, as
// `run --rerun` does; it returns once they ended.
func (a Actions) Rerun(ctx context.Context, runID int64, task, reason string, withDownstream bool) (run.Outcome, error) {
	r, err := inspect.RunByID(ctx, a.Project.DB, runID)
	if err != nil {
		return run.Outcome{}, err
	}
	ctx = changing(ctx)
	if err := a.record(ctx, "rerun", map[string]any{"run_id": runID, "task_code": task, "reason": reason, "with_downstream": withDownstream},
		r.PipelineCode, task, r.ID); err != nil {
		return run.Outcome{}, err
	}
	return a.Project.Supervisor().Rerun(ctx, run.Request{PipelineCode: r.PipelineCode, TaskCode: task, RunID: r.ID, Reason: reason}, withDownstream)
}

// CreateToken creates an API token; its value is in the answer only.
func (a Actions) CreateToken(ctx context.Context, req apitoken.Request) (apitoken.Created, error) {
	if err := req.Validate(); err != nil {
		return apitoken.Created{}, err
	}
	ctx = changing(ctx)
	if err := a.record(ctx, "token create", map[string]any{"name": req.Name, "role": req.Role, "expires": req.Expires}, "", "", 0); err != nil {
		return apitoken.Created{}, err
	}
	return apitoken.Create(ctx, a.Project.DB, req)
}

// RevokeToken revokes the API token with the id: it stops authenticating at
// once, and the console's sessions signed in with it end.
func (a Actions) RevokeToken(ctx context.Context, id int64) (apitoken.Token, error) {
	ctx = changing(ctx)
	if err := a.record(ctx, "token revoke", map[string]any{"token_id": id}, "", "", 0); err != nil {
		return apitoken.Token{}, err
	}
	return apitoken.Revoke(ctx, a.Project.DB, id)
}

// HTTPStatus is the HTTP status both front ends answer an error of the
// project's with, by its exit code: 503 while the Engine DB is unavailable
// or misconfigured, 400 for a usage error, 404 for missing metadata or an
// identity no row has (and a run selection with no candidate), 500 for an
// unexpected error, 409 for any other refusal.
func HTTPStatus(db *engine.DB, err error) int {
	if db.IsUnavailable(err) {
		return http.StatusServiceUnavailable
	}
	var sel *records.SelectionError
	switch code := exit.CodeOf(err); {
	case code == exit.Usage:
		return http.StatusBadRequest
	case code == exit.Metadata, code == exit.ResourceNotFound:
		return http.StatusNotFound
	case code == exit.RunState && errors.As(err, &sel) && len(sel.Candidates) == 0:
		return http.StatusNotFound
	case code == exit.Configuration, code == exit.EngineDB, code == exit.Migration, code == exit.LockTimeout:
		return http.StatusServiceUnavailable
	case code == exit.Unexpected:
		return http.StatusInternalServerError
	}
	return http.StatusConflict
}
