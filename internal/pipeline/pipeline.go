// Package pipeline reads a pipeline's definition from the Engine DB's CFG_
// tables — its tasks, parameters, task dependencies and pipeline
// dependencies — and checks its graph: self-dependencies, unknown or inactive
// upstreams, cycles and impossible run conditions. It also orders the tasks
// in waves, the order that is always safe.
package pipeline

import (
	"context"
	"database/sql"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/suggest"
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

const pipelineColumns = `PIPELINE_ID, PIPELINE_CODE, PIPELINE_NAME, DESCRIPTION, RUN_SCHEDULE, SLA_IN_HOURS,
	REFRESH_TYPE, CAST(PIPELINE_PARAMETERS AS VARCHAR), SCHEDULE_TIMEZONE, CATCHUP, MAX_CATCHUP_RUNS,
	OVERLAP_POLICY, CAST(SCHEDULE_START_DATE AS VARCHAR)`

func scanPipeline(s interface{ Scan(...any) error }) (Pipeline, error) {
	var p Pipeline
	var desc, sched, params, tz, catchup, overlap, start sql.NullString
	var maxRuns sql.NullInt64
	err := s.Scan(&p.ID, &p.Code, &p.Name, &desc, &sched, &p.SLAHours, &p.RefreshType, &params, &tz,
		&catchup, &maxRuns, &overlap, &start)
	p.Description, p.RunSchedule, p.Parameters = desc.String, sched.String, params.String
	p.ScheduleTimezone, p.Catchup, p.OverlapPolicy = tz.String, catchup.String == "Y", overlap.String
	p.MaxCatchupRuns, p.ScheduleStartDate = int(maxRuns.Int64), start.String
	return p, err
}

// List returns every active pipeline, ordered by code.
func List(ctx context.Context, q engine.Querier) ([]Pipeline, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+pipelineColumns+" FROM CFG_PIPELINES WHERE ACTIVE_FLAG = 'Y' ORDER BY PIPELINE_CODE")
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINES")
	}
	defer rows.Close()
	var out []Pipeline
	for rows.Next() {
		p, err := scanPipeline(rows)
		if err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINES")
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// Find returns the active pipeline with the code. An unknown code is a
// metadata error (exit 4) that suggests close matches.
func Find(ctx context.Context, q engine.Querier, code string) (Pipeline, error) {
	p, err := scanPipeline(q.QueryRowContext(ctx,
		"SELECT "+pipelineColumns+" FROM CFG_PIPELINES WHERE PIPELINE_CODE = $1 AND ACTIVE_FLAG = 'Y'", code))
	if engine.IsNoRows(err) {
		all, _ := List(ctx, q)
		codes := make([]string, len(all))
		for i, x := range all {
			codes[i] = x.Code
		}
		return Pipeline{}, exit.Errorf(exit.Metadata, "no active pipeline has the code %q in CFG_PIPELINES%s",
			code, suggest.DidYouMean(code, codes))
	}
	if err != nil {
		return Pipeline{}, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINES")
	}
	return p, nil
}

// Load reads the pipeline with the code and its active tasks, parameters and
// dependencies. It does not validate the graph; call Validate.
func Load(ctx context.Context, q engine.Querier, code string) (*Graph, error) {
	p, err := Find(ctx, q, code)
	if err != nil {
		return nil, err
	}
	g := &Graph{Pipeline: p, byID: map[int64]*Task{}, byCode: map[string]*Task{}}
	if err := g.loadTasks(ctx, q); err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the tasks of %s", code)
	}
	if err := g.loadParams(ctx, q); err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the task parameters of %s", code)
	}
	if err := g.loadDeps(ctx, q); err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the task dependencies of %s", code)
	}
	if err := g.loadPipelineDeps(ctx, q); err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the pipeline dependencies of %s", code)
	}
	return g, nil
}

func (g *Graph) loadTasks(ctx context.Context, q engine.Querier) error {
	rows, err := q.QueryContext(ctx, `SELECT TASK_ID, TASK_CODE, TASK_TYPE, HANDLER, RUN_CONDITION, RUN_CONDITION_COUNT
		FROM CFG_TASKS WHERE PIPELINE_ID = $1 AND ACTIVE_FLAG = 'Y' ORDER BY TASK_CODE`, g.Pipeline.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		t := &Task{Params: map[string]string{}}
		var cond sql.NullString
		var count sql.NullInt64
		if err := rows.Scan(&t.ID, &t.Code, &t.Type, &t.Handler, &cond, &count); err != nil {
			return err
		}
		t.RunCondition, t.RunConditionCount = All, int(count.Int64)
		if cond.Valid && cond.String != "" {
			t.RunCondition = cond.String
		}
		g.Tasks = append(g.Tasks, t)
		g.byID[t.ID] = t
		g.byCode[t.Code] = t
	}
	return rows.Err()
}

func (g *Graph) loadParams(ctx context.Context, q engine.Querier) error {
	rows, err := q.QueryContext(ctx, `SELECT tp.TASK_ID, tp.PARAMETER_NAME, tp.PARAMETER_VALUE
		FROM CFG_TASK_PARAMETERS tp JOIN CFG_TASKS t ON t.TASK_ID = tp.TASK_ID
		WHERE t.PIPELINE_ID = $1 AND t.ACTIVE_FLAG = 'Y' AND tp.ACTIVE_FLAG = 'Y'`, g.Pipeline.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var name string
		var value sql.NullString
		if err := rows.Scan(&id, &name, &value); err != nil {
			return err
		}
		if t := g.byID[id]; t != nil {
			t.Params[name] = value.String
		}
	}
	return rows.Err()
}

func (g *Graph) loadDeps(ctx context.Context, q engine.Querier) error {
	rows, err := q.QueryContext(ctx, `SELECT d.TASK_DEPENDENCY_ID, d.TASK_ID, d.DEPENDS_ON_PIPELINE_ID, up.PIPELINE_CODE,
			d.DEPENDS_ON_TASK_ID, ut.TASK_CODE, d.DEPENDENCY_TYPE, d.CONSUME_REPAIRS
		FROM CFG_TASK_DEPENDENCY d
		JOIN CFG_TASKS t ON t.TASK_ID = d.TASK_ID AND t.ACTIVE_FLAG = 'Y'
		LEFT JOIN CFG_PIPELINES up ON up.PIPELINE_ID = d.DEPENDS_ON_PIPELINE_ID AND up.ACTIVE_FLAG = 'Y'
		LEFT JOIN CFG_TASKS ut ON ut.TASK_ID = d.DEPENDS_ON_TASK_ID AND ut.ACTIVE_FLAG = 'Y'
			AND ut.PIPELINE_ID = d.DEPENDS_ON_PIPELINE_ID
		WHERE d.PIPELINE_ID = $1 AND d.ACTIVE_FLAG = 'Y'
		ORDER BY d.TASK_DEPENDENCY_ID`, g.Pipeline.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		d := &Dependency{}
		var upPipe, upTask, consume sql.NullString
		var upPipeID sql.NullInt64
		if err := rows.Scan(&d.ID, &d.TaskID, &upPipeID, &upPipe, &d.UpstreamTaskID, &upTask, &d.Type, &consume); err != nil {
			return err
		}
		d.UpstreamPipelineID = upPipeID.Int64
		if !upPipeID.Valid {
			d.UpstreamPipelineID = g.Pipeline.ID
		}
		d.UpstreamPipeline, d.UpstreamTask = upPipe.String, upTask.String
		d.ConsumeRepairs = consume.String != "N"
		d.CrossPipeline = d.UpstreamPipelineID != g.Pipeline.ID
		if t := g.byID[d.TaskID]; t != nil {
			t.Deps = append(t.Deps, d)
		}
	}
	return rows.Err()
}

func (g *Graph) loadPipelineDeps(ctx context.Context, q engine.Querier) error {
	rows, err := q.QueryContext(ctx, `SELECT d.PIPELINE_DEPENDENCY_ID, d.DEPENDS_ON_PIPELINE_ID, up.PIPELINE_CODE,
			d.DEPENDENCY_TYPE, d.CONSUME_REPAIRS
		FROM CFG_PIPELINE_DEPENDENCY d
		LEFT JOIN CFG_PIPELINES up ON up.PIPELINE_ID = d.DEPENDS_ON_PIPELINE_ID AND up.ACTIVE_FLAG = 'Y'
		WHERE d.PIPELINE_ID = $1 AND d.ACTIVE_FLAG = 'Y'
		ORDER BY d.PIPELINE_DEPENDENCY_ID`, g.Pipeline.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		d := &PipelineDependency{}
		var up, consume sql.NullString
		if err := rows.Scan(&d.ID, &d.UpstreamID, &up, &d.Type, &consume); err != nil {
			return err
		}
		d.Upstream, d.ConsumeRepairs = up.String, consume.String != "N"
		g.PipelineDeps = append(g.PipelineDeps, d)
	}
	return rows.Err()
}

// Validate checks the graph before anything runs: a task depending on itself
// (exit 6), a dependency on an unknown or inactive task (exit 8), a cycle
// among the pipeline's tasks (exit 7), and a run condition that can never be
// met or an unknown dependency type (exit 5).
func (g *Graph) Validate() error {
	code := g.Pipeline.Code
	for _, t := range g.Tasks {
		for _, d := range t.Deps {
			if !d.CrossPipeline && d.UpstreamTaskID == t.ID {
				return exit.Errorf(exit.SelfDependency, "%s.%s depends on itself (CFG_TASK_DEPENDENCY id %d): retire that dependency", code, t.Code, d.ID)
			}
			if d.UpstreamTask == "" || d.UpstreamPipeline == "" {
				return exit.Errorf(exit.UnknownTask,
					"%s.%s depends on task id %d (CFG_TASK_DEPENDENCY id %d), which is not an active task of %s: activate it or retire the dependency",
					code, t.Code, d.UpstreamTaskID, d.ID, pipelineName(d, code))
			}
			switch d.Type {
			case Success, Failure, Always, HasData:
			default:
				return exit.Errorf(exit.Graph, "%s.%s has a dependency of unknown type %q (CFG_TASK_DEPENDENCY id %d)", code, t.Code, d.Type, d.ID)
			}
		}
		switch t.RunCondition {
		case All, Any:
		case N:
			if t.RunConditionCount < 1 || t.RunConditionCount > len(t.Deps) {
				return exit.Errorf(exit.Graph,
					"%s.%s has RUN_CONDITION N with RUN_CONDITION_COUNT %d but %d dependencies: it can never run; use a count from 1 to %d",
					code, t.Code, t.RunConditionCount, len(t.Deps), len(t.Deps))
			}
		default:
			return exit.Errorf(exit.Graph, "%s.%s has the unknown RUN_CONDITION %q: use ALL, ANY or N", code, t.Code, t.RunCondition)
		}
	}
	if cycle := g.cycle(); len(cycle) > 0 {
		return exit.Errorf(exit.DependencyCycle, "%s has a dependency cycle: %s", code, strings.Join(cycle, " -> "))
	}
	return nil
}

func pipelineName(d *Dependency, own string) string {
	if !d.CrossPipeline {
		return own
	}
	if d.UpstreamPipeline == "" {
		return "an inactive or unknown pipeline (id " + itoa(int(d.UpstreamPipelineID)) + ")"
	}
	return d.UpstreamPipeline
}

// Upstreams returns the same-pipeline tasks t depends on.
func (g *Graph) Upstreams(t *Task) []*Task {
	var out []*Task
	for _, d := range t.Deps {
		if !d.CrossPipeline {
			if u := g.byID[d.UpstreamTaskID]; u != nil {
				out = append(out, u)
			}
		}
	}
	return out
}

// Downstreams returns the same-pipeline tasks that depend on t.
func (g *Graph) Downstreams(t *Task) []*Task {
	var out []*Task
	for _, x := range g.Tasks {
		for _, u := range g.Upstreams(x) {
			if u == t {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// cycle returns the task codes of one dependency cycle, or nil.
func (g *Graph) cycle() []string {
	const (
		unseen = iota
		active
		done
	)
	state := map[*Task]int{}
	var stack []*Task
	var found []string
	var visit func(t *Task) bool
	visit = func(t *Task) bool {
		state[t] = active
		stack = append(stack, t)
		for _, u := range g.Upstreams(t) {
			switch state[u] {
			case active:
				for i, s := range stack {
					if s == u {
						for _, x := range stack[i:] {
							found = append(found, x.Code)
						}
						found = append(found, u.Code)
						return true
					}
				}
			case unseen:
				if visit(u) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[t] = done
		return false
	}
	for _, t := range g.Tasks {
		if state[t] == unseen && visit(t) {
			return found
		}
	}
	return nil
}

// Waves orders the tasks in levels: wave 1 has no same-pipeline upstream,
// and every task comes after all its upstreams. The graph must be valid.
func (g *Graph) Waves() [][]*Task {
	level := map[*Task]int{}
	var depth func(t *Task) int
	depth = func(t *Task) int {
		if l, ok := level[t]; ok {
			return l
		}
		l := 0
		for _, u := range g.Upstreams(t) {
			l = max(l, depth(u)+1)
		}
		level[t] = l
		return l
	}
	var waves [][]*Task
	for _, t := range g.Tasks {
		l := depth(t)
		for len(waves) <= l {
			waves = append(waves, nil)
		}
		waves[l] = append(waves[l], t)
	}
	return waves
}

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

// Codes returns the task codes in order.
func (g *Graph) Codes() []string {
	out := make([]string, len(g.Tasks))
	for i, t := range g.Tasks {
		out[i] = t.Code
	}
	return out
}

// FindTask returns the active task with the code; an unknown code is a
// metadata error (exit 4) suggesting close matches.
func (g *Graph) FindTask(code string) (*Task, error) {
	if t := g.byCode[code]; t != nil {
		return t, nil
	}
	return nil, exit.Errorf(exit.Metadata, "pipeline %s has no active task with the code %q in CFG_TASKS%s",
		g.Pipeline.Code, code, suggest.DidYouMean(code, g.Codes()))
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
