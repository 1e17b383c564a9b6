package cli

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/run"
)

func (a *app) runCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a pipeline, or one of its tasks",
		Long: "run --pipeline_code P runs the pipeline: it resumes the pipeline's run in progress, or starts\n" +
			"a new one, starts every task whose dependencies are met (at most Max_parallel_tasks at once),\n" +
			"and ends the run when nothing more can start. It prints\n" +
			"  P: pipeline_run_id=<id> <STATUS>[ — detail]\n" +
			"and exits 0 for SUCCESS or SKIPPED, 1 for FAILED, 22 when the run was left unfinished.\n\n" +
			"run --pipeline_code P --task_code T runs one task under the selected run (--run-id, --run-key,\n" +
			"or the pipeline's one run not yet ended). A task already SUCCESS or SKIPPED is not run again\n" +
			"(exit 0), a task running elsewhere is left alone (exit 22), and a task whose dependencies are\n" +
			"not met yet records nothing (exit 23). --force runs it anyway, reopening an ended run.\n\n" +
			"SIGINT, SIGTERM and SIGHUP stop the running tasks, record them FAILED and leave the run\n" +
			"IN-PROGRESS for the next run to resume.",
		Args: cobra.NoArgs,
	}
	pipe := addPipelineFlag(cmd, true, "the pipeline to run (required)")
	var taskCode string
	var force bool
	cmd.Flags().StringVar(&taskCode, "task_code", "", "run only this task")
	cmd.Flags().BoolVar(&force, "force", false, "run tasks whatever their status and dependencies (local mode only)")
	runSel := addRunFlags(cmd)
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := pipe.check(); err != nil {
			return err
		}
		sel, err := runSel.selector()
		if err != nil {
			return err
		}
		s, err := a.openSession(cmd)
		if err != nil {
			return err
		}
		defer s.db.Close()
		a.record(s.ctx, s.db, cmd, pipe.code, taskCode)
		if s.cfg.Orchestration.Mode == config.ModeRemote && (taskCode == "" || force) {
			return exit.Errorf(exit.RunRefused,
				"Orchestration.Mode is remote: the orchestrator runs one task at a time with --task_code and never --force; only local mode runs a whole pipeline")
		}
		sup, closeSup := a.supervisor(s.cfg, s.db)
		defer closeSup()
		req := run.Request{PipelineCode: pipe.code, TaskCode: taskCode, RunID: sel.ID, RunKey: sel.Key, Force: force}
		var out run.Outcome
		if taskCode == "" {
			out, err = sup.RunPipeline(s.ctx, req)
		} else {
			out, err = sup.RunTask(s.ctx, req)
		}
		if err != nil {
			return err
		}
		a.status = out.Code
		if format.json() {
			return a.printJSON(outcomeDocument(out))
		}
		a.printf("%s\n", out)
		return nil
	}
	return cmd
}

// supervisor builds the run supervisor of the configuration: the SQL
// handler, the shared warehouse, Orchestration's limits and log folder, and
// the after-run hooks. The returned function closes the warehouse.
func (a *app) supervisor(cfg *config.Config, db *engine.DB) (*run.Supervisor, func()) {
	o := cfg.Orchestration
	opts := run.Options{
		DB:       db,
		Handlers: handler.Registry{pipeline.HandlerSQL: sqltask.New()},
		EngineState: func(t *handler.Task) handler.EngineState {
			return handler.NewEngineState(db, t.PipelineID, t.PipelineRunID)
		},
		MaxParallel: o.MaxParallelTasks,
		Defaults:    run.Defaults{TaskTimeout: time.Duration(o.TaskTimeoutSeconds) * time.Second},
		LogDir:      o.LogDir,
		ProjectDir:  cfg.ProjectDir,
		Location:    o.Location,
		Logger:      a.logger(),
	}
	if o.Retries != nil {
		opts.Defaults.Retries = *o.Retries
	}
	if strings.EqualFold(a.logLevel, "DEBUG") {
		opts.AttemptLogLevel = slog.LevelDebug
	}
	closeAll := func() {}
	if wopts := warehouseOptions(cfg); wopts != nil {
		shared := run.NewSharedWarehouse(db, *wopts)
		opts.Warehouse = shared
		closeAll = func() { shared.Close() }
		opts.Hooks = a.afterRunHooks(cfg, db, shared)
	}
	return run.New(opts), closeAll
}

// afterRunHooks are the hooks every run ends with: a clone of the Engine DB
// when Cloning is on.
func (a *app) afterRunHooks(cfg *config.Config, db *engine.DB, shared *run.SharedWarehouse) []run.Hook {
	if !cfg.Cloning.Effective() {
		return nil
	}
	opts, err := clone.FromConfig(cfg, warehouseOptions(cfg))
	if err != nil {
		a.logger().Error("cloning is on but cannot run; runs will not be cloned", "error", err)
		return nil
	}
	opts.Logger = a.logger()
	hook := clone.Hook(db, shared, opts)
	return []run.Hook{{Name: "clone", Run: func(ctx context.Context, _ run.Ended) error { return hook(ctx) }}}
}

// outcomeDocument is the JSON form of a run's outcome: etl-craft/run/1, or
// etl-craft/task-run/1 for a single task.
func outcomeDocument(o run.Outcome) map[string]any {
	doc := map[string]any{
		"schema":          "etl-craft/run/1",
		"pipeline_code":   o.PipelineCode,
		"pipeline_run_id": nullable(o.RunID),
		"status":          o.Status,
		"detail":          o.Detail,
		"exit_code":       int(o.Code),
	}
	if o.TaskCode != "" {
		doc["schema"], doc["task_code"] = "etl-craft/task-run/1", o.TaskCode
	}
	return doc
}

// nullable returns nil for a zero id.
func nullable(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}
