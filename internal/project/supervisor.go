package project

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/run"
)

// Supervisor returns the project's run supervisor, built at the first call:
// the handlers, the warehouse pool, Orchestration's limits and log folder,
// the SLA emails and the after-run hooks.
func (p *Project) Supervisor() *run.Supervisor {
	p.once.Do(func() { p.sup = run.New(p.supervisorOptions()) })
	return p.sup
}

// supervisorOptions are the supervisor's options from the configuration.
func (p *Project) supervisorOptions() run.Options {
	cfg := p.Config
	o := cfg.Orchestration
	opts := run.Options{
		DB:              p.DB,
		GatePolicy:      gate.Policy(o.DependencyGates),
		GateWait:        time.Duration(o.GateWaitMinutes) * time.Minute,
		Remote:          o.Mode == config.ModeRemote,
		GlobalDAG:       o.GlobalDAG,
		Handlers:        p.Handlers,
		MaxParallel:     o.MaxParallelTasks,
		Defaults:        run.Defaults{TaskTimeout: time.Duration(o.TaskTimeoutSeconds) * time.Second},
		LogDir:          o.LogDir,
		ProjectDir:      cfg.ProjectDir,
		Location:        o.Location,
		AttemptLogLevel: p.set.attemptLevel,
		OnBreach:        p.slaAlert(),
		Logger:          p.set.log,
	}
	if p.set.sharedPool {
		opts.Pool, opts.Reconciled = run.NewPool(o.MaxParallelTasks), true
	}
	if p.Metrics != nil {
		opts.Observer = p.Metrics
	}
	if o.Retries != nil {
		opts.Defaults.Retries = *o.Retries
	}
	if p.Warehouse != nil {
		opts.Warehouse = p.Warehouse
		if p.cloning() {
			opts.Hooks = p.afterRunHooks()
			opts.CloneSchema = cfg.Warehouse.Schema
		}
	}
	return opts
}

// cloning reports whether runs end with a clone of the Engine DB.
func (p *Project) cloning() bool {
	return p.Config.Cloning.Effective() && !p.set.noCloneHook
}

// afterRunHooks are the hooks every run ends with: a clone of the Engine DB
// (cloning is on). A clone that cannot run is logged once, here, and runs
// go without it.
func (p *Project) afterRunHooks() []run.Hook {
	opts, err := p.CloneOptions()
	if err != nil {
		p.set.log.Error("cloning is on but cannot run; runs will not be cloned", "error", err)
		return nil
	}
	hook := clone.Hook(p.DB, p.Warehouse, opts)
	return []run.Hook{{Name: "clone", Run: func(ctx context.Context, _ run.Ended) error { return hook(ctx) }}}
}

// CloneOptions are the options of a clone of the Engine DB into the
// project's warehouse, from the Cloning section, logging to the project's
// logger; a configuration that cannot clone is an error (exit 3).
func (p *Project) CloneOptions() (clone.Options, error) {
	opts, err := clone.FromConfig(p.Config, WarehouseOptions(p.Config))
	if err != nil {
		return clone.Options{}, err
	}
	opts.Logger = p.set.log
	if p.Metrics != nil {
		opts.Copied = p.Metrics.Copied
	}
	return opts, nil
}
