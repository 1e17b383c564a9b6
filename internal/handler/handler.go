// Package handler defines what a task handler is: the code that performs one
// attempt of a task (the SQL actions, later business rules, scripts and
// email alerts), what it is given, what it reports, and which of its errors
// may be retried.
package handler

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Task is one attempt of a task, as its handler sees it.
type Task struct {
	PipelineID    int64
	PipelineRunID int64
	TaskRunID     int64
	AttemptID     int64
	AttemptNumber int
	PipelineCode  string
	TaskCode      string
	// RefreshType is the pipeline's FULL or INCREMENTAL.
	RefreshType string
	// RunDate is the run's logical date (midnight UTC of that date).
	RunDate  time.Time
	Backfill bool
	// Force is set when the operator forced the task to run again (run
	// --force): it works on all of its target, not only this run's rows.
	Force bool
	// Rerun is set when the operator reran the task under its run (run
	// --rerun): it does again what an earlier attempt of the task run did.
	Rerun bool
	// Params are the task's active CFG_TASK_PARAMETERS by name.
	Params map[string]string
	// ProjectDir is the folder of craft-connector.yml (sql_files/ is in it).
	ProjectDir string
	// Log is the attempt's logger; what it writes goes to the attempt's log.
	Log *slog.Logger
	// Warehouse opens the warehouse for the attempt's writes. release must be
	// called when the attempt no longer writes: on a single-writer warehouse
	// (a DuckDB file) the warehouse is held by one writer at a time.
	Warehouse func(ctx context.Context) (w warehouse.Warehouse, release func(), err error)
	// Upstream, given by validate only, are the tasks that run before this
	// one (Upstream), for the checks of what they create before its first
	// run.
	Upstream []Upstream
	// Spawned, when set, records on the attempt the child process pid that
	// performs it (its pid and start time), so that reconciliation verifies
	// and stops that process rather than the supervisor. The handler calls
	// it again with the supervisor's own pid before the child ends.
	Spawned func(pid int) error
}

// ParamTargetObject is the task parameter that names the table a task
// writes, schema.table: what an SQL task writes, and what any other task
// declares it writes, for the catalog and the checks of validate.
const ParamTargetObject = "TARGET_OBJECT"

// Upstream is a task that runs before another: upstream of it in its own
// pipeline, through its dependencies however far, or in a pipeline it
// depends on (through a dependency on one of its tasks or on the whole
// pipeline, however far).
type Upstream struct {
	PipelineCode string
	TaskCode     string
	Handler      string
	// Params are its active parameters by name.
	Params map[string]string
}

// Name is PIPELINE.task.
func (u Upstream) Name() string { return u.PipelineCode + "." + u.TaskCode }

// Count is a row count a handler reports; nil fields stay NULL.
type Count = *int64

// Result is what an attempt did.
type Result struct {
	SourceCount Count
	TargetCount Count
	InsertCount Count
	UpdateCount Count
	DeleteCount Count
	// RowsWritten is inserts + updates + deletes; HAS_DATA dependencies read it.
	RowsWritten Count
	// Reported are extra NAME = value lines listed first in TASK_LOG.
	Reported []Reported
	// OnSuccess, when set, runs inside the Engine DB transaction that
	// records the attempt SUCCESS (a script's offset): an error fails the
	// attempt instead, and nothing it wrote commits.
	OnSuccess func(ctx context.Context, tx *engine.Tx) error
}

// Reported is one value a handler reports for the task log.
type Reported struct {
	Name  string
	Value string
}

// Handler performs attempts of the tasks of one HANDLER kind.
type Handler interface {
	// Run performs one attempt. The context ends when the attempt is
	// cancelled, times out or loses its lease; the handler must stop then.
	Run(ctx context.Context, t *Task) (Result, error)
	// Check reviews a task's parameters without connecting anywhere, for
	// `validate`: problems that stop the task (failures) and doubtful ones
	// (warnings).
	Check(t *Task) (failures, warnings []string)
}

// WarehouseChecker is a Handler whose review can go further with a
// connection to the warehouse: `validate` calls CheckWarehouse, after Check,
// when it can connect, with the task's Upstream set. It reads and changes
// nothing. Besides failures and warnings it returns notes: what is worth
// knowing but wrong with nothing, such as a table that does not exist yet
// because a task upstream creates it.
type WarehouseChecker interface {
	CheckWarehouse(ctx context.Context, w warehouse.Warehouse, t *Task) (failures, warnings, notes []string)
}

// Registry maps a HANDLER value (SQL, PYTHON, BUSINESS_RULES, EMAIL_ALERT) to
// its handler.
type Registry map[string]Handler

// For returns the handler of a HANDLER value; a missing one is a handler
// error (exit 15), recorded as the task's failure.
func (r Registry) For(name string) (Handler, error) {
	if h, ok := r[name]; ok {
		return h, nil
	}
	return nil, exit.Errorf(exit.Handler, "no handler for %s tasks is available in this version of etl-craft", name)
}

// Retryable reports whether an attempt that failed with err may be retried:
// configuration, metadata, usage and SQL guard errors never change by
// retrying; a cancelled context is the operator's decision.
func Retryable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	switch exit.CodeOf(err) {
	case exit.Configuration, exit.Metadata, exit.Usage, exit.SQLGuard:
		return false
	}
	return true
}

// Int returns a count of n.
func Int(n int64) Count { return &n }
