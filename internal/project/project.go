// Package project opens the whole program a craft-connector.yml describes:
// the Engine DB, the warehouse's writer pool, the task handlers, and the run
// supervisor with its after-run hooks. The command line and the server both
// start here, so each of them runs the program assembled once, the same way.
//
// Opening prints nothing and never exits: problems are returned as errors
// with their exit codes, and records go to the logger the caller passes.
package project

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/email"
	"github.com/etl-craft/etl-craft/internal/handler/rules"
	"github.com/etl-craft/etl-craft/internal/handler/script"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/metrics"
	"github.com/etl-craft/etl-craft/internal/notify"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// Project is the program of one configuration, open.
type Project struct {
	// Config is the configuration the project was opened from.
	Config *config.Config
	// DB is the open Engine DB.
	DB *engine.DB
	// Warehouse is the writer pool of the configured warehouse: its
	// connection is made at the first use. Nil when the configuration has
	// no Warehouse section or the project was opened WithoutWarehouse.
	Warehouse *pool.Pool
	// Handlers are the task handlers of this build, by HANDLER value.
	Handlers handler.Registry
	// Metrics measure the program for a server's /metrics; nil unless it
	// was opened WithMetrics.
	Metrics *metrics.Metrics

	set settings
	// mail is the sender of Orchestration.Email, built at its first use.
	mail func() (*mail.Sender, error)
	// channels delivers to the channels of Notifications.
	channels *notify.Notifier
	// console is the address of the console a server of this project
	// serves, "" while none does (see ServeConsole).
	console atomic.Pointer[string]

	once sync.Once
	sup  *run.Supervisor
}

// settings are what the Options chose.
type settings struct {
	log          *slog.Logger
	attemptLevel slog.Leveler
	noWarehouse  bool
	noCloneHook  bool
	reading      bool
	sharedPool   bool
	// metrics is the build's version when WithMetrics.
	metrics *string
}

// Option changes how Open opens the project.
type Option func(*settings)

// WithLogger sends the records of opening, of the supervisor and of the
// after-run clone to log; without it they are discarded.
func WithLogger(log *slog.Logger) Option { return func(s *settings) { s.log = log } }

// WithAttemptLogLevel sets the lowest level written to attempt logs; INFO
// without it.
func WithAttemptLogLevel(level slog.Leveler) Option {
	return func(s *settings) { s.attemptLevel = level }
}

// WithoutWarehouse opens the Engine DB and the handlers only, for commands
// that never touch the warehouse: Warehouse stays nil.
func WithoutWarehouse() Option { return func(s *settings) { s.noWarehouse = true } }

// WithoutCloneHook gives runs no after-run clone even when Cloning is on
// (quickstart shows its clone as a step of its own).
func WithoutCloneHook() Option { return func(s *settings) { s.noCloneHook = true } }

// ForServer gives the supervisor one worker pool of Max_parallel_tasks
// workers that every run it supervises shares (run.Pool), as the server
// runs many at once, and leaves reconciliation to the server's reconciler.
func ForServer() Option { return func(s *settings) { s.sharedPool = true } }

// WithMetrics measures the program for a server's /metrics: the Engine
// DB's operations, the supervisor's waits and worker pool, the clones, and
// the runs and attempts the Engine DB records (Project.Metrics), labelled
// with the build's version.
func WithMetrics(version string) Option { return func(s *settings) { s.metrics = &version } }

// ForReading opens the Engine DB of a read-only command, WithoutWarehouse: a
// SQLite Engine DB that does not exist is not created (exit 3), and the
// Engine DB must hold etl-craft's tables (exit 3 when not).
func ForReading() Option {
	return func(s *settings) { s.reading, s.noWarehouse = true, true }
}

// ForChecking opens the Engine DB as ForReading does, but keeps the
// warehouse's writer pool, which connects only at its first use: validate
// checks business rules against the warehouse when it can reach it.
func ForChecking() Option {
	return func(s *settings) { s.reading = true }
}

// Open opens the project of cfg: it connects to the Engine DB and builds
// the handlers and, unless WithoutWarehouse, the warehouse's writer pool,
// which connects at its first use. The caller closes the project.
func Open(ctx context.Context, cfg *config.Config, opts ...Option) (*Project, error) {
	var set settings
	for _, o := range opts {
		o(&set)
	}
	if set.log == nil {
		set.log = slog.New(slog.DiscardHandler)
	}
	eopts := EngineOptions(cfg)
	var m *metrics.Metrics
	if set.metrics != nil {
		m = metrics.New(metrics.Options{Version: *set.metrics, Public: cfg.Orchestration.MetricsPublic, Logger: set.log})
		eopts.Observer = m
	}
	if set.reading {
		if err := existing(eopts); err != nil {
			return nil, err
		}
	}
	db, err := engine.Open(ctx, eopts)
	if err != nil {
		return nil, err
	}
	set.log.Debug("connected to the Engine DB", "kind", db.Kind().Label(), "schema", db.Schema())
	if set.sharedPool {
		// The server's runs read and write at once: bound their
		// connections, which would otherwise grow with the runs.
		db.SQL().SetMaxOpenConns(serverConns(cfg.Orchestration.MaxParallelTasks))
	}
	if set.reading {
		if err := inspect.Ready(ctx, db); err != nil {
			db.Close()
			return nil, err
		}
	}
	p := &Project{Config: cfg, DB: db, Metrics: m, mail: mailSender(cfg), channels: notify.New(cfg.Notifications, cfg.Secret), set: set}
	p.Handlers = p.handlers()
	if wopts := WarehouseOptions(cfg); wopts != nil && !set.noWarehouse {
		wopts.Existing = set.reading
		p.Warehouse = pool.New(db, *wopts)
		// Every run's connection test checks the schema a clone writes into.
		p.Warehouse.CheckTarget = func(ctx context.Context, w warehouse.Warehouse, schema string) error {
			return clone.CheckTarget(ctx, db, wopts.Kind, w, schema)
		}
	}
	if m != nil {
		m.Watch(db, p.Supervisor().Pool())
	}
	return p, nil
}

// serverConns is how many Engine DB connections a server with the worker
// pool opens at most: the workers' attempts, the runs' reads, and the
// overseer lock and event listener, which hold one each for good.
func serverConns(workers int) int { return 4*workers + 16 }

// existing refuses a SQLite Engine DB file that does not exist.
func existing(o engine.Options) error {
	if o.Path == "" { // not a file
		return nil
	}
	if _, err := os.Stat(o.Path); errors.Is(err, fs.ErrNotExist) {
		return exit.Errorf(exit.Configuration,
			"the SQLite Engine DB %s does not exist: run `etl-craft setup` (or `etl-craft init-db`) to create it", o.Path)
	}
	return nil
}

// handlers are the task handlers of this build, by HANDLER value, each
// built with what it needs: run performs attempts with them and validate
// checks parameters with them.
func (p *Project) handlers() handler.Registry {
	cfg, db := p.Config, p.DB
	return handler.Registry{pipeline.HandlerSQL: sqltask.New(db),
		pipeline.HandlerBusinessRules: rules.New(db, cfg.Orchestration.MaxParallelTasks),
		pipeline.HandlerEmailAlert: email.New(db, email.Options{Mail: p.mail, Channels: p.channels, RunPage: p.RunPage,
			EnforceSLA: cfg.Orchestration.EnforceSLA}),
		pipeline.HandlerPython: script.New(db, scriptOptions(cfg))}
}

// ServeConsole tells the project that its server serves the console at
// address (host:port, where it listens): alerts then link to their run's
// page there, unless Notifications.Console_url names the address readers
// reach it at. A server listening on every address is named by this
// machine's host name.
func (p *Project) ServeConsole(address string) {
	if host, port, err := net.SplitHostPort(address); err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			if name, err := os.Hostname(); err == nil {
				address = net.JoinHostPort(name, port)
			}
		}
	}
	base := "http://" + address
	p.console.Store(&base)
}

// ConsoleURL is the console's address alerts link to:
// Notifications.Console_url, else the address of the console this
// project's server serves (ServeConsole), else "".
func (p *Project) ConsoleURL() string {
	if u := p.Config.Notifications.ConsoleURL; u != "" {
		return u
	}
	if base := p.console.Load(); base != nil {
		return *base
	}
	return ""
}

// RunPage is the console's page of a run, "" when no console is known.
func (p *Project) RunPage(runID int64) string { return alert.RunPage(p.ConsoleURL(), runID) }

// scriptOptions are the PYTHON handler's settings: the interpreter, the
// warehouse profile's schema, and the settings scripts read as task.config
// (never a secret).
func scriptOptions(cfg *config.Config) script.Options {
	o := script.Options{Python: cfg.Orchestration.Python, Config: map[string]any{
		"project_dir": cfg.ProjectDir, "timezone": cfg.Orchestration.Timezone}}
	if w := cfg.Warehouse; w != nil {
		o.Schema = w.Schema
		o.Config["warehouse"] = map[string]any{"dialect": w.Dialect, "schema": w.Schema, "catalog": w.Catalog}
	}
	return o
}

// mailSender returns the function that builds, at its first call, the
// sender of Orchestration.Email; missing settings are a configuration error
// then, so that only sending mail needs them.
func mailSender(cfg *config.Config) func() (*mail.Sender, error) {
	return sync.OnceValues(func() (*mail.Sender, error) {
		e := cfg.Orchestration.Email
		if e == nil {
			return nil, exit.Errorf(exit.Configuration, "sending email needs Orchestration.Email in %s: an SMTP relay or sendmail", cfg.Path)
		}
		return mail.New(e, secretOf(cfg, e.SecretVar))
	})
}

// Close closes the warehouse, when it is open, and the Engine DB.
func (p *Project) Close() error {
	var err error
	if p.Warehouse != nil {
		err = p.Warehouse.Close()
	}
	return errors.Join(err, p.DB.Close())
}
