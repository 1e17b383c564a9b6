// Package run executes pipelines: it creates and resumes runs, dispatches
// the tasks whose dependencies are met, runs each attempt in a goroutine of
// this process with its time limit and lease, records every attempt and its
// outcome, retries failures by policy, ends runs, and reconciles the work of
// processes that died.
//
// Every status write is a compare-and-set in transitions.go. A run is held
// by one supervisor at a time through its lease (OWNER_ID and
// LEASE_EXPIRES_AT), and each attempt by its own lease; holders renew them
// every RenewEvery, and Reconcile fences the attempts of holders whose
// process is gone from this host, or that stopped renewing, as LOST.
package run

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Options configure a Supervisor.
type Options struct {
	// DB is the Engine DB.
	DB *engine.DB
	// Handlers run the attempts, by the task's HANDLER.
	Handlers handler.Registry
	// Warehouse gives attempts the warehouse; nil when the project has none.
	Warehouse Warehouses
	// MaxParallel bounds the attempts running at once; zero means 8.
	MaxParallel int
	// Pool, when set, is the worker pool every run of this supervisor
	// shares (the server's, of MaxParallel workers); nil gives each run
	// its own MaxParallel.
	Pool *Pool
	// Reconciled says a reconciler of this process reconciles every
	// pipeline on its own (the server's): runs do not reconcile their
	// pipeline before they start.
	Reconciled bool
	// Defaults are Orchestration's time limit and retries.
	Defaults Defaults
	// LogDir holds the attempt logs (Orchestration.Log_dir).
	LogDir string
	// AttemptLogLevel is the lowest level written to attempt logs.
	AttemptLogLevel slog.Leveler
	// ProjectDir is the folder of craft-connector.yml.
	ProjectDir string
	// Location gives manual runs their RUN_DATE (Orchestration.Timezone);
	// nil means UTC.
	Location *time.Location
	// GatePolicy is Orchestration.Dependency_gates: how unsatisfied
	// dependencies on other pipelines are treated ("" enforces).
	GatePolicy gate.Policy
	// GateWait is Orchestration.Gate_wait_minutes: how long one check of a
	// gate may wait for a running upstream.
	GateWait time.Duration
	// Clock tells the time of gate checks and sleeps between their looks;
	// nil is the wall clock.
	Clock gate.Clock
	// Remote is Orchestration.Mode remote: an orchestrator runs the tasks
	// one at a time, etl-craft judges no dependency, retries nothing and
	// refuses whole-pipeline runs, --force and every operator intervention.
	Remote bool
	// GlobalDAG is Orchestration.Global_dag, which remote mode cannot
	// combine with dependencies of different types on other pipelines.
	GlobalDAG bool
	// Hooks run, in order, after a run ends.
	Hooks []Hook
	// OnBreach, when set, is told of each SLA breach this supervisor
	// records: at most once per run (sla.go). Its error is logged.
	OnBreach func(ctx context.Context, b Breach) error
	// Observer, when set, is told how long runs waited for admission and
	// attempts for a worker.
	Observer Observer
	// CloneSchema is the warehouse schema the after-run clone writes into,
	// "" when cloning is off: every run's connection test checks it exists.
	CloneSchema string
	// Logger receives the supervisor's records; nil discards them.
	Logger *slog.Logger
}

// Warehouses gives attempts the warehouse.
type Warehouses interface {
	// Acquire returns the warehouse for one attempt's writes and the
	// function that gives it back.
	Acquire(ctx context.Context) (warehouse.Warehouse, func(), error)
	// Check tests the connection before a run starts and, when schema is
	// not empty, that the schema exists.
	Check(ctx context.Context, schema string) error
}

// Hook is work done after a run ends, such as cloning the Engine DB. A
// hook's failure is logged and never changes how the run ended.
type Hook struct {
	Name string
	Run  func(ctx context.Context, ended Ended) error
}

// Ended is a run that has just ended.
type Ended struct {
	PipelineID   int64
	PipelineCode string
	RunID        int64
	Status       string
}

// Supervisor runs pipelines and tasks against one Engine DB.
type Supervisor struct {
	opts Options
	log  *slog.Logger
	// renewEvery is how often leases are renewed: RenewEvery.
	renewEvery time.Duration
	// cancelPoll is how often a running attempt looks whether it was
	// cancelled: CancelPoll.
	cancelPoll time.Duration
}

// New returns a supervisor.
func New(opts Options) *Supervisor {
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = 8
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.AttemptLogLevel == nil {
		opts.AttemptLogLevel = slog.LevelInfo
	}
	s := &Supervisor{opts: opts, log: opts.Logger, renewEvery: RenewEvery, cancelPoll: CancelPoll}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Pool is the worker pool the supervisor's runs share; nil when each run
// has its own limit.
func (s *Supervisor) Pool() *Pool { return s.opts.Pool }

// Request says what to run.
type Request struct {
	PipelineCode string
	// TaskCode selects one task (RunTask).
	TaskCode string
	// RunID or RunKey select the run; without either, a whole-pipeline run
	// resumes the pipeline's run in progress or starts one, and a task run
	// binds to the one run that has not ended.
	RunID  int64
	RunKey string
	// RunDate (YYYY-MM-DD) is the date a new run runs as of; today in
	// Orchestration.Timezone when empty. A run that exists must have this
	// date: a run's date never changes.
	RunDate string
	// Force runs tasks again whatever their status; a task forced onto an
	// ended run reopens it.
	Force bool
	// IgnoreDependencies runs one task under the run in progress without
	// checking its dependencies; Reason says why, for the intervention.
	IgnoreDependencies bool
	// Reason is the operator's reason for an intervention.
	Reason string
	// Settled, when set, is called once a whole-pipeline run no longer
	// waits to get going: its first attempt got a worker and starts, or
	// its pipeline gate or a task's gate waits for an upstream. The server
	// admits its next runs then.
	Settled func()
}

// Outcome is how a command's run ended.
type Outcome struct {
	PipelineCode string
	// TaskCode is set for a single-task run, whose Status is the task's.
	TaskCode string
	RunID    int64
	// Status is the run's (or task's) status; PAUSED when nothing started
	// because the pipeline is paused, WAITING when a task's dependencies
	// are not met yet.
	Status string
	// Detail says more in one line; it names request fields as {field} (see
	// exit.RequestFields).
	Detail string
	// Code is the exit status: 0, 1, 22 or 23.
	Code exit.Code
	// SLA is the ended run's SLA status, MET or BREACHED; "" for a task,
	// a run not ended, or a pipeline without an SLA. A breach is also
	// named at the end of Detail.
	SLA string
}

// Outcome statuses that are not stored statuses.
const (
	// Paused: nothing started because the pipeline is paused.
	Paused = "PAUSED"
	// Waiting: a single task's dependencies are not met yet; nothing was
	// recorded.
	Waiting = "WAITING"
)

// String is the line the command prints:
// <PIPE>: pipeline_run_id=<id> <STATUS>[ — detail] for a run, and
// <TASK>: <STATUS>[ — detail] for a task.
func (o Outcome) String() string {
	var s string
	switch {
	case o.TaskCode != "":
		s = o.TaskCode + ": " + o.Status
	case o.RunID == 0:
		s = o.PipelineCode + ": " + o.Status
	default:
		s = o.PipelineCode + ": pipeline_run_id=" + strconv.FormatInt(o.RunID, 10) + " " + o.Status
	}
	if o.Detail != "" {
		s += " — " + o.Detail
	}
	return s
}

// load reads and validates the pipeline's graph and every task's policy,
// before anything is recorded.
func (s *Supervisor) load(ctx context.Context, code string) (*pipeline.Graph, map[int64]Policy, error) {
	g, err := pipeline.Load(ctx, s.opts.DB, code)
	if err != nil {
		return nil, nil, err
	}
	if err := g.Validate(); err != nil {
		return nil, nil, err
	}
	policies := make(map[int64]Policy, len(g.Tasks))
	for _, t := range g.Tasks {
		if policies[t.ID], err = s.policyOf(g, t); err != nil {
			return nil, nil, err
		}
	}
	return g, policies, nil
}

// policyOf is the task's policy (PolicyOf); in remote mode retries are the
// orchestrator's, so it has none.
func (s *Supervisor) policyOf(g *pipeline.Graph, t *pipeline.Task) (Policy, error) {
	p, err := PolicyOf(g, t, s.opts.Defaults)
	if s.opts.Remote {
		p.Retries = 0
	}
	return p, err
}

// beforeRun makes the checks of every run command before it binds to a
// run: a paused pipeline starts nothing (paused is set and out says who
// paused it and why; remote mode has no pauses), the pipeline's expired
// leases are reconciled, and the warehouse is tested when the tasks need it.
func (s *Supervisor) beforeRun(ctx context.Context, g *pipeline.Graph, tasks []*pipeline.Task, out *Outcome) (paused bool, err error) {
	if paused, err := s.paused(ctx, g, out); paused || err != nil {
		return paused, err
	}
	if !s.opts.Reconciled {
		if _, err := s.Reconcile(ctx, Scope{PipelineCode: g.Pipeline.Code}); err != nil {
			return false, err
		}
	}
	return false, s.preflight(ctx, tasks)
}

// paused reports whether the pipeline is paused, in local mode (remote mode
// has no pauses), and then writes into out who paused it and why: a run
// command of a paused pipeline starts nothing and exits 0.
func (s *Supervisor) paused(ctx context.Context, g *pipeline.Graph, out *Outcome) (bool, error) {
	if s.opts.Remote {
		return false, nil
	}
	p, err := records.PausedBy(ctx, s.opts.DB, g.Pipeline.ID)
	if err != nil || p == nil {
		return false, err
	}
	out.Status = Paused
	out.Detail = fmt.Sprintf("%s; nothing was started: etl-craft resume {pipeline} %s lets it run again", p, g.Pipeline.Code)
	return true, nil
}

// preflight tests the warehouse connection when a task needs the warehouse.
// A failure is a connection-test error (exit 11), or a configuration error
// (exit 3) when the test found one, before anything is recorded.
func (s *Supervisor) preflight(ctx context.Context, tasks []*pipeline.Task) error {
	needs := s.opts.CloneSchema != ""
	for _, t := range tasks {
		if t.Handler == pipeline.HandlerSQL || t.Handler == pipeline.HandlerBusinessRules {
			needs = true
		}
	}
	if !needs {
		return nil
	}
	if s.opts.Warehouse == nil {
		return exit.Errorf(exit.Configuration,
			"warehouse: the pipeline has SQL or BUSINESS_RULES tasks but craft-connector.yml has no Warehouse section: add one")
	}
	if err := s.opts.Warehouse.Check(ctx, s.opts.CloneSchema); err != nil {
		if exit.Is(err, exit.Configuration) {
			return err // a mistake of the configuration, such as cloning into the Engine DB's own schema
		}
		return exit.Wrap(exit.ConnectionTest, err, "warehouse")
	}
	return nil
}

// runHooks calls the after-run hooks in order, logging failures.
func (s *Supervisor) runHooks(ctx context.Context, e Ended) {
	for _, h := range s.opts.Hooks {
		if err := h.Run(ctx, e); err != nil {
			s.log.Error("an after-run hook failed; the run's status is unchanged",
				"hook", h.Name, "pipeline", e.PipelineCode, "pipeline_run_id", e.RunID, "error", err)
		}
	}
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func itoa(n int) string { return strconv.Itoa(n) }
