// Package docsite is the catalog site of `generate-docs` and `publish-docs`:
// what the Engine DB says about the project (pipelines and their task graphs,
// tasks with their SQL and parameters, business rules, scripts, runs,
// interventions, consumption and pauses) and the lineage of its tables,
// written as a static site of html/template pages with every asset embedded,
// so that it works from file:// and from any web server with nothing fetched
// from the internet; and the small web server that publishes it.
//
// The site reads a Lineage: the column edges between tables and which tasks
// were traced. TableLevel builds one from what the Engine DB holds (each SQL
// task's target and the tables its SELECT reads); a column-level tracer fills
// the same model.
package docsite

import (
	"time"
)

// Marker is the file that marks a folder as a catalog generate-docs wrote:
// only a new folder, an empty one or one holding it is written.
const Marker = ".etl-craft-catalog"

// Catalog is everything the site shows, read from the Engine DB.
type Catalog struct {
	// GeneratedAt is when the catalog was read.
	GeneratedAt time.Time
	Pipelines   []*Pipeline
	// Runs are the recent runs of every pipeline, newest first.
	Runs []*Run
}

// Pipeline is an active pipeline with its tasks, dependencies, runs and
// pauses.
type Pipeline struct {
	ID          int64
	Code        string
	Name        string
	Description string
	Schedule    string
	RefreshType string
	SLAHours    string
	// DependsOn are the codes of the pipelines it depends on.
	DependsOn []string
	Tasks     []*Task
	// Runs are its recent runs, newest first; Stats cover all of its runs.
	Runs  []*Run
	Stats RunStats
	// Paused is its open pause, nil when it runs; Pauses are every pause,
	// newest first.
	Paused        *Pause
	Pauses        []*Pause
	Interventions []*Intervention
	Consumption   []*Consumption
}

// Task is an active task of a pipeline.
type Task struct {
	ID       int64
	Pipeline string // the pipeline's code
	Code     string
	Type     string
	Handler  string
	// Condition is the run condition as steps prints it (ALL, ANY, N=2).
	Condition string
	// Params are the active parameters by name.
	Params map[string]string
	// Upstreams are the dependencies as labels: a task code, or PIPE.task.
	Upstreams []string
	// SQL is the task's SELECT as written (SOURCE_SQL or the file
	// SOURCE_SQL_FILE names), "" when it has none or it cannot be read;
	// SQLError says why it cannot.
	SQL      string
	SQLError string
	Rules    []*Rule
	// Runs are its recent task runs, newest first; Stats cover them all.
	Runs  []*TaskRun
	Stats RunStats
}

// Name is the task as the site and the lineage name it: PIPE.task.
func (t *Task) Name() string { return t.Pipeline + "." + t.Code }

// Rule is an active business rule of a task.
type Rule struct {
	ID          int64
	Name        string
	Type        string
	KeyColumn   string
	TargetTable string
	Sequence    int64
	SQL         string
}

// Run is one pipeline run.
type Run struct {
	ID        int64
	Pipeline  string
	Key       string
	Trigger   string
	RunDate   string
	Status    string
	Start     time.Time
	End       time.Time // zero while it has not ended
	SLAStatus string
}

// Duration is how long the run took, 0 while it has not ended.
func (r *Run) Duration() time.Duration { return span(r.Start, r.End) }

// TaskRun is one run of a task.
type TaskRun struct {
	ID, PipelineRunID int64
	Status            string
	Start, End        time.Time
	RowsWritten       int64
	Attempts          int
	Error             string
}

// Duration is how long the task run took, 0 while it has not ended.
func (r *TaskRun) Duration() time.Duration { return span(r.Start, r.End) }

// span is end - start, 0 when either is unknown.
func span(start, end time.Time) time.Duration {
	if start.IsZero() || end.IsZero() {
		return 0
	}
	return end.Sub(start)
}

// RunStats sums up ended runs: how many, how many succeeded, and their
// average and longest durations.
type RunStats struct {
	Runs, Succeeded, Failed int
	Average, Longest        time.Duration
}

// SuccessRate is the share of ended runs that succeeded, in percent; -1
// when none has ended.
func (s RunStats) SuccessRate() float64 {
	if s.Runs == 0 {
		return -1
	}
	return 100 * float64(s.Succeeded) / float64(s.Runs)
}

// Pause is one pause of a pipeline.
type Pause struct {
	By, Reason           string
	At                   time.Time
	ResumedAt            time.Time // zero while open
	ResumedBy, ResumeWhy string
}

// Intervention is one operator change to a run.
type Intervention struct {
	RunID            int64
	Task             string // the task's code, "" for the whole run
	Action           string
	From, To, Reason string
	By               string
	At               time.Time
}

// Consumption is one upstream run a dependency consumed.
type Consumption struct {
	RunID         int64
	Task          string // the consuming task's code, "" for a pipeline dependency
	Upstream      string // the upstream pipeline's code
	ConsumedRunID int64
	Revision      int
	At            time.Time
}
