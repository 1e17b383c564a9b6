// Package pipeline reads a pipeline's definition from the Engine DB's CFG_
// tables — its tasks, parameters, task dependencies and pipeline
// dependencies — and checks its graph: self-dependencies, unknown or inactive
// upstreams, cycles and impossible run conditions. It also orders the tasks
// in waves, the order that is always safe.
package pipeline

import (
	"database/sql"
	"encoding/json"
	"sort"
	"strconv"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Dependency types.
const (
	Success = "SUCCESS"
	Failure = "FAILURE"
	Always  = "ALWAYS"
	HasData = "HAS_DATA"
)

// Run conditions.
const (
	All = "ALL"
	Any = "ANY"
	N   = "N"
)

// Handlers.
const (
	HandlerSQL           = "SQL"
	HandlerPython        = "PYTHON"
	HandlerBusinessRules = "BUSINESS_RULES"
	HandlerEmailAlert    = "EMAIL_ALERT"
)

// Refresh types.
const (
	Full        = "FULL"
	Incremental = "INCREMENTAL"
)

// Pipeline is one active CFG_PIPELINES row.
type Pipeline struct {
	ID          int64
	Code        string
	Name        string
	Description string
	RunSchedule string // "" when not scheduled
	SLAHours    sql.NullFloat64
	RefreshType string
	// Parameters is PIPELINE_PARAMETERS as JSON text, "" when NULL.
	Parameters string
	// Schedule settings.
	ScheduleTimezone  string
	Catchup           bool
	MaxCatchupRuns    int
	OverlapPolicy     string
	ScheduleStartDate string
	// CreatedBy is the actor who created the row (CREATED_BY).
	CreatedBy string
}

// Task is one active task with its parameters and dependencies.
type Task struct {
	ID      int64
	Code    string
	Type    string // INGESTION or ETL
	Handler string
	// RunCondition is ALL, ANY or N (NULL reads as ALL).
	RunCondition string
	// RunConditionCount is the N of an N condition.
	RunConditionCount int
	// Params are the active parameters by name.
	Params map[string]string
	// Deps are the task's active dependencies, same- and cross-pipeline.
	Deps []*Dependency
}

// Required returns how many of the task's dependencies must be satisfied.
func (t *Task) Required() int {
	switch t.RunCondition {
	case Any:
		if len(t.Deps) == 0 {
			return 0
		}
		return 1
	case N:
		return t.RunConditionCount
	}
	return len(t.Deps)
}

// ConditionLabel returns the run condition as steps prints it: ALL, ANY or
// N=<count>.
func (t *Task) ConditionLabel() string {
	if t.RunCondition == N {
		return "N=" + itoa(t.RunConditionCount)
	}
	return t.RunCondition
}

// Dependency is one active CFG_TASK_DEPENDENCY row.
type Dependency struct {
	ID                 int64
	TaskID             int64
	UpstreamPipelineID int64
	UpstreamPipeline   string // code; "" when the pipeline is not active
	UpstreamTaskID     int64
	UpstreamTask       string // code; "" when the task is not active
	Type               string
	ConsumeRepairs     bool
	// CrossPipeline is set when the upstream task is in another pipeline.
	CrossPipeline bool
	// Named is the CFG_TASKS row DEPENDS_ON_TASK_ID names, whatever its
	// pipeline and state, to say what it is when it is not an active task
	// of the pipeline the dependency names.
	Named NamedTask
}

// NamedTask is a CFG_TASKS row and its pipeline, active or not.
type NamedTask struct {
	Task       string // TASK_CODE; "" when no row has the id
	TaskActive bool
	PipelineID int64
	Pipeline   string // PIPELINE_CODE
	// PipelineActive is set when the pipeline is active.
	PipelineActive bool
}

// Label names the upstream: the task code, or PIPELINE.TASK across pipelines.
func (d *Dependency) Label() string {
	if d.CrossPipeline {
		return d.UpstreamPipeline + "." + d.UpstreamTask
	}
	return d.UpstreamTask
}

// PipelineDependency is one active CFG_PIPELINE_DEPENDENCY row.
type PipelineDependency struct {
	ID             int64
	UpstreamID     int64
	Upstream       string // code; "" when the upstream pipeline is not active
	Type           string
	ConsumeRepairs bool
}

// Graph is a pipeline with its active tasks (sorted by code) and its
// pipeline dependencies.
type Graph struct {
	Pipeline     Pipeline
	Tasks        []*Task
	PipelineDeps []*PipelineDependency
	byID         map[int64]*Task
	byCode       map[string]*Task
}

// Task returns the active task with the code, or nil.
func (g *Graph) Task(code string) *Task { return g.byCode[code] }

// TaskByID returns the active task with the id, or nil.
func (g *Graph) TaskByID(id int64) *Task { return g.byID[id] }

// ParametersJSON decodes PIPELINE_PARAMETERS, nil when NULL.
func (p Pipeline) ParametersJSON() (map[string]any, error) {
	if p.Parameters == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(p.Parameters), &m); err != nil {
		return nil, exit.Wrap(exit.Metadata, err, "CFG_PIPELINES.PIPELINE_PARAMETERS of %s is not a JSON object", p.Code)
	}
	return m, nil
}

// SortedParamNames returns a task's parameter names in order.
func (t *Task) SortedParamNames() []string {
	out := make([]string, 0, len(t.Params))
	for k := range t.Params {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
