// Package script is the handler of PYTHON tasks: ingestion scripts, Python
// modules under the project's ingestion_scripts/ folder with a run(task)
// function, run unchanged from the reference's contract.
//
// Each attempt runs its script in a child process of its own (python3 on
// PATH, or Orchestration.Python), in a process group of its own: the
// task's time limit, a cancel and a lost lease stop the whole group
// (SIGTERM, then SIGKILL after StopGrace). The child's pid and start time
// are recorded on the attempt, so reconciliation can verify and stop it.
// Every line the script writes to stdout or stderr (where logging writes)
// goes to the attempt's log, in the order written.
//
// The Python side is the etl_craft package embedded here (standard library
// only): etl_craft.scripting gives Offset, ScriptResult and ScriptTask. It
// talks to the engine over two pipes with one JSON message a line. The
// script's warehouse connection, task.warehouse(), is served by the engine:
// each statement runs on the engine's own warehouse connection (holding the
// writer lock of a single-writer warehouse while a transaction is open).
// task.load hands rows to the engine, which stages them with the
// warehouse's bulk load and publishes them once the script has succeeded:
// in the Engine DB transaction that records the attempt SUCCESS where the
// warehouse is in the Engine DB's own PostgreSQL database and the Engine
// DB's role may, before it in the warehouse otherwise.
//
// The script's offset is written to AUD_TASK_OFFSET_TRACKER only in the
// transaction recording the attempt SUCCESS; backfills neither read nor
// write it.
package script

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Options configure the handler.
type Options struct {
	// Python is the interpreter (Orchestration.Python); "" runs python3
	// found on PATH.
	Python string
	// Schema is the warehouse profile's schema: a table name without a
	// schema (task.table, task.load) is in it.
	Schema string
	// Config is what scripts read as task.config: settings without secrets.
	Config map[string]any
}

// New returns the handler of PYTHON tasks, reading and writing offsets in
// the Engine DB db (nil for validate, which runs nothing).
func New(db *engine.DB, opts Options) handler.Handler {
	return &scriptHandler{db: db, opts: opts}
}

type scriptHandler struct {
	db   *engine.DB
	opts Options
}

// Check reviews a PYTHON task's SCRIPT_NAME (a .py file inside
// ingestion_scripts/) and INPUT_PARAMS (a JSON object), for validate.
// Scripts may read any parameter: none is warned about.
func (h *scriptHandler) Check(t *handler.Task) (failures, warnings []string) {
	_, failures = readSpec(t, true)
	return failures, nil
}

// interpreter returns the Python interpreter to run.
func (h *scriptHandler) interpreter() (string, error) {
	p := h.opts.Python
	if p == "" {
		p = "python3"
	}
	path, err := exec.LookPath(p)
	if err != nil {
		return "", exit.Errorf(exit.Configuration, "the Python interpreter %s cannot be found: install python3, or set Orchestration.Python", p)
	}
	return path, nil
}

// Run performs one attempt of a PYTHON task.
func (h *scriptHandler) Run(ctx context.Context, t *handler.Task) (handler.Result, error) {
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sp, failures := readSpec(t, true)
	if len(failures) > 0 {
		return handler.Result{}, exit.Errorf(exit.Configuration, "%s", strings.Join(failures, "; "))
	}
	if h.db == nil {
		return handler.Result{}, exit.Errorf(exit.Handler, "the PYTHON task %s has no Engine DB to work with", t.TaskCode)
	}
	python, err := h.interpreter()
	if err != nil {
		return handler.Result{}, err
	}
	s := &session{h: h, t: t, log: log, txs: map[int]warehouse.Tx{}}
	if err := h.db.QueryRowContext(ctx, "SELECT TASK_ID FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = $1", t.TaskRunID).Scan(&s.taskID); err != nil {
		return handler.Result{}, exit.Wrap(exit.EngineDB, err, "could not read task_run_id=%d", t.TaskRunID)
	}
	var stored *offset
	if !t.Backfill {
		if stored, err = readOffset(ctx, h.db, s.taskID); err != nil {
			return handler.Result{}, err
		}
	}
	if t.Warehouse != nil {
		if err := s.dropStale(ctx); err != nil {
			log.Warn("could not drop the staging tables of earlier attempts", "error", err)
		}
	}
	c, err := startChild(python, filepath.Dir(sp.path), log)
	if err != nil {
		return handler.Result{}, err
	}
	s.c = c
	log.Info("script started", "script", sp.name, "python", python, "pid", c.pid())
	if t.Spawned != nil {
		if err := t.Spawned(c.pid()); err != nil {
			c.stop(StopGrace)
			c.end(log)
			return handler.Result{}, err
		}
	}
	ret, err := h.converse(ctx, s, sp, stored)
	if err == nil && ret == nil {
		// The pipe closed without a result: the process ended.
		waited := c.end(log)
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		} else {
			err = exit.Errorf(exit.Handler, "the script %s %s before returning a result", sp.name, ended(waited))
		}
	} else {
		if ctx.Err() != nil && err == nil {
			err = context.Cause(ctx)
		}
		if err != nil {
			c.stop(StopGrace)
		}
		c.end(log)
	}
	if err == nil && ret.failure != "" {
		err = exit.Errorf(exit.Handler, "%s", ret.failure)
	}
	if err != nil {
		s.dropStages(context.WithoutCancel(ctx))
		return handler.Result{}, err
	}
	return h.finish(ctx, s, ret, stored)
}

// converse sends the script its context and serves its requests while it
// runs; when ctx ends first the process group is stopped.
func (h *scriptHandler) converse(ctx context.Context, s *session, sp spec, stored *offset) (*returned, error) {
	if err := s.sendContext(sp, stored, h.opts); err != nil {
		return nil, nil // the process is gone; its end says why
	}
	type served struct {
		ret *returned
		err error
	}
	done := make(chan served, 1)
	go func() {
		r, err := s.serve(ctx)
		done <- served{r, err}
	}()
	select {
	case r := <-done:
		return r.ret, r.err
	case <-ctx.Done():
		s.log.Warn("stopping the script's process group", "pgid", s.c.pid(), "reason", context.Cause(ctx).Error())
		s.c.stop(StopGrace)
		<-done
		return nil, context.Cause(ctx)
	}
}

// sendContext sends the task's context, the script's first message.
func (s *session) sendContext(sp spec, stored *offset, opts Options) error {
	t := s.t
	params := map[string]string{}
	for k, v := range t.Params {
		params[k] = v
	}
	cfg := opts.Config
	if cfg == nil {
		cfg = map[string]any{}
	}
	ctx := map[string]any{
		"script": sp.path, "script_name": sp.name, "pipeline_id": t.PipelineID, "pipeline_run_id": t.PipelineRunID,
		"task_run_id": t.TaskRunID, "attempt_number": t.AttemptNumber, "pipeline_code": t.PipelineCode, "task_code": t.TaskCode,
		"refresh_type": t.RefreshType, "force": t.Force, "backfill": t.Backfill, "input_params": sp.input,
		"task_params": params, "config": cfg, "offset": stored,
	}
	if !t.RunDate.IsZero() {
		ctx["run_date"] = t.RunDate.Format(time.DateOnly)
	}
	return s.answerFirst(map[string]any{"task": ctx})
}

// finish publishes the script's loads and returns the attempt's result,
// whose offset is written with the attempt's SUCCESS, and so are the loads
// where the warehouse is the Engine DB's database (see publish).
func (h *scriptHandler) finish(ctx context.Context, s *session, ret *returned, stored *offset) (handler.Result, error) {
	t := s.t
	if ret.offset != nil {
		if t.Backfill {
			s.log.Info("a backfill keeps the task's offset: the script's offset is not stored", "offset", ret.offset.Value)
			ret.offset = nil
		} else {
			if err := ret.offset.check(); err != nil {
				return handler.Result{}, err
			}
			if err := sameType(stored, *ret.offset, t.TaskCode); err != nil {
				return handler.Result{}, err
			}
		}
	}
	loaded, publish, err := s.publish(ctx)
	if err != nil {
		return handler.Result{}, err
	}
	r := handler.Result{SourceCount: handler.Int(ret.rowCount), TargetCount: handler.Int(ret.rowCount),
		InsertCount: handler.Int(ret.rowCount), RowsWritten: handler.Int(ret.rowCount)}
	if len(s.loads) > 0 {
		// The engine counted what it loaded.
		r.InsertCount, r.RowsWritten = handler.Int(loaded), handler.Int(loaded)
		r.Reported = append(r.Reported, handler.Reported{Name: "LOADED_ROWS", Value: fmt.Sprint(loaded)})
	}
	names := make([]string, 0, len(ret.variables))
	for k := range ret.variables {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		r.Reported = append(r.Reported, handler.Reported{Name: k, Value: ret.variables[k]})
	}
	o := ret.offset
	if o != nil {
		r.Reported = append(r.Reported, handler.Reported{Name: "OFFSET", Value: o.String()})
	}
	if o != nil || publish != nil {
		taskID, code := s.taskID, t.TaskCode
		r.OnSuccess = func(ctx context.Context, tx *engine.Tx) error {
			if publish != nil {
				if err := publish(ctx, tx); err != nil {
					return err
				}
			}
			if o == nil {
				return nil
			}
			return writeOffset(ctx, tx, taskID, code, *o)
		}
	}
	return r, nil
}
