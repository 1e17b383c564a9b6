package inspect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The severities of a validation finding.
const (
	// Fail is a problem that makes a run fail, hang or silently do something else.
	Fail = "FAIL"
	// Warn is something that works but deserves a look.
	Warn = "WARN"
	// Info is worth knowing but wrong with nothing, such as a table a
	// task upstream creates at the first run; it is not counted.
	Info = "INFO"
)

// add records a finding in the validation and counts a failure or a
// warning.
func add(v *report.Validation, status, where, message string) {
	v.Findings = append(v.Findings, report.Finding{Where: where, Status: status, Message: message})
	switch status {
	case Fail:
		v.Failed++
	case Warn:
		v.Warnings++
	}
}

// ValidateRequest says what to validate and with which handlers.
type ValidateRequest struct {
	// PipelineCode limits the check to one active pipeline; "" checks all.
	PipelineCode string
	// Handlers check each task's parameters; a task whose handler is
	// missing is a failure, as its run would be.
	Handlers handler.Registry
	// ProjectDir is the project folder, where handlers find sql_files/.
	ProjectDir string
	// Remote is set in remote mode: every rule the orchestrator cannot
	// express is a failure, one finding per rule naming its task.
	Remote bool
	// GlobalDAG is Orchestration.Global_dag, under which mixed
	// pipeline-dependency types cannot be expressed either.
	GlobalDAG bool
	// CheckPipeline, when set, returns the problems of a pipeline's
	// settings that the project's configuration decides, such as the
	// channels of its SLA breaches.
	CheckPipeline func(p pipeline.Pipeline) []string
	// Warehouse, when set, connects to the warehouse for the handlers that
	// check more with it (handler.WarehouseChecker); it is called only when
	// such a task is checked. A connection that fails is one warning; a
	// warehouse that does not exist yet (warehouse.NotCreatedError), as
	// every new project's DuckDB file, is one [INFO] finding.
	Warehouse func(ctx context.Context) (w warehouse.Warehouse, release func(), err error)
}

// Validate checks active pipelines the way a run would meet them, without
// running anything: each pipeline's graph (an invalid graph is a finding,
// not an error), its pipeline dependencies (inactive upstreams, cycles
// among pipelines), the settings req.CheckPipeline checks, HAS_DATA
// dependencies on tasks that never report rows, every task's parameters through its handler's Check (and, with
// req.Warehouse, its CheckWarehouse, the only use of a warehouse), and in
// remote mode the rules the orchestrator cannot express
// (pipeline.Graph.RemoteUnsupported). An unknown PipelineCode is a metadata
// error (exit 4).
func Validate(ctx context.Context, q engine.Querier, req ValidateRequest) (report.Validation, error) {
	var pipes []pipeline.Pipeline
	if req.PipelineCode != "" {
		p, err := pipeline.Find(ctx, q, req.PipelineCode)
		if err != nil {
			return report.Validation{}, err
		}
		pipes = []pipeline.Pipeline{p}
	} else {
		all, err := pipeline.List(ctx, q)
		if err != nil {
			return report.Validation{}, err
		}
		pipes = all
	}
	upstreams, err := activePipelineEdges(ctx, q)
	if err != nil {
		return report.Validation{}, err
	}
	v := report.Validation{Schema: report.SchemaValidation, Findings: []report.Finding{}}
	wh := &lazyWarehouse{connect: req.Warehouse}
	defer wh.close()
	graphs := graphCache{q: q, loaded: map[string]*pipeline.Graph{}}
	for _, p := range pipes {
		g, err := graphs.load(ctx, p.Code)
		if err != nil {
			return report.Validation{}, err
		}
		v.Pipelines++
		v.Tasks += len(g.Tasks)
		checkPipeline(&v, g, upstreams)
		if req.CheckPipeline != nil {
			for _, m := range req.CheckPipeline(p) {
				add(&v, Fail, p.Code, m)
			}
		}
		if req.Remote {
			for _, r := range g.RemoteUnsupported(req.GlobalDAG) {
				add(&v, Fail, r.Where, r.Reason)
			}
		}
		for _, t := range g.Tasks {
			if err := checkTask(ctx, &v, g, t, req, wh, &graphs); err != nil {
				return report.Validation{}, err
			}
		}
	}
	return v, nil
}

// checkPipeline records the graph's problems, those of its schedule
// settings and those of its pipeline dependencies.
func checkPipeline(v *report.Validation, g *pipeline.Graph, upstreams map[string][]string) {
	code := g.Pipeline.Code
	if err := g.Validate(); err != nil {
		add(v, Fail, code, err.Error())
	}
	if g.Pipeline.RunSchedule != "" {
		// Neither the fallback zone (a checked setting) nor the creation
		// time changes whether the settings are valid.
		if _, err := timetable(g.Pipeline, nil, time.Now()); err != nil {
			add(v, Fail, code, err.Error()+"; etl-craft server gives the pipeline no scheduled runs until it is fixed")
		}
	}
	for _, d := range g.PipelineDeps {
		if d.Upstream == "" {
			add(v, Fail, code, fmt.Sprintf("depends on pipeline id %d (CFG_PIPELINE_DEPENDENCY id %d), which is not active: "+
				"once its last run is consumed the dependency is never met again; retire the dependency or reactivate the pipeline",
				d.UpstreamID, d.ID))
		}
	}
	if cycle := pipelineCycle(code, upstreams); cycle != nil {
		add(v, Fail, code, "pipeline dependencies form a cycle ("+strings.Join(cycle, " -> ")+
			"), so none of these pipelines can start; retire one of the dependencies")
	}
}

// checkTask records a task's handler findings, with the warehouse when its
// handler checks more with it and the warehouse answers (given the tasks
// that run before it), and its HAS_DATA dependencies on tasks that never
// report rows.
func checkTask(ctx context.Context, v *report.Validation, g *pipeline.Graph, t *pipeline.Task, req ValidateRequest,
	wh *lazyWarehouse, graphs *graphCache) error {
	where := g.Pipeline.Code + "." + t.Code
	if h, err := req.Handlers.For(t.Handler); err != nil {
		add(v, Fail, where, err.Error())
	} else {
		ht := &handler.Task{
			PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code, TaskCode: t.Code,
			RefreshType: g.Pipeline.RefreshType, Params: t.Params, ProjectDir: req.ProjectDir,
			Log: slog.New(slog.DiscardHandler),
		}
		failures, warnings := h.Check(ht)
		var notes []string
		if wc, ok := h.(handler.WarehouseChecker); ok {
			if w := wh.get(ctx, v); w != nil {
				if ht.Upstream, err = graphs.upstreamOf(ctx, g, t); err != nil {
					return err
				}
				more, warned, noted := wc.CheckWarehouse(ctx, w, ht)
				failures, warnings, notes = append(failures, more...), append(warnings, warned...), noted
			}
		}
		for _, m := range failures {
			add(v, Fail, where, m)
		}
		for _, m := range warnings {
			add(v, Warn, where, m)
		}
		for _, m := range notes {
			add(v, Info, where, m)
		}
	}
	for _, d := range t.Deps {
		if d.Type != pipeline.HasData || d.CrossPipeline {
			continue
		}
		if up := g.TaskByID(d.UpstreamTaskID); up != nil {
			if what := reportsNoRows(up); what != "" {
				add(v, Fail, where, fmt.Sprintf("has a HAS_DATA dependency on %s, %s that reports no rows written, "+
					"so the dependency is never met and %s is always skipped; use SUCCESS", up.Code, what, t.Code))
			}
		}
	}
	return nil
}

// reportsNoRows describes a task that never reports rows written (a
// business-rules or email task, or an SQL task creating an empty table or
// dropping one), or returns "".
func reportsNoRows(t *pipeline.Task) string {
	switch t.Handler {
	case pipeline.HandlerBusinessRules, pipeline.HandlerEmailAlert:
		return "a " + t.Handler + " task"
	case pipeline.HandlerSQL:
		switch action := strings.ToUpper(strings.TrimSpace(t.Params["SQL_ACTION"])); action {
		case "SETUP_TABLE", "DROP_TABLE":
			return "a " + action + " task"
		}
	}
	return ""
}

// activePipelineEdges maps each active pipeline's code to the codes of the
// active pipelines it depends on, through active dependencies.
func activePipelineEdges(ctx context.Context, q engine.Querier) (map[string][]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT p.PIPELINE_CODE, u.PIPELINE_CODE
		FROM CFG_PIPELINE_DEPENDENCY d
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = d.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y'
		JOIN CFG_PIPELINES u ON u.PIPELINE_ID = d.DEPENDS_ON_PIPELINE_ID AND u.ACTIVE_FLAG = 'Y'
		WHERE d.ACTIVE_FLAG = 'Y'
		ORDER BY p.PIPELINE_CODE, u.PIPELINE_CODE`)
	if err != nil {
		return nil, readError(err, "CFG_PIPELINE_DEPENDENCY")
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var from, to string
		if err := rows.Scan(&from, &to); err != nil {
			return nil, readError(err, "CFG_PIPELINE_DEPENDENCY")
		}
		out[from] = append(out[from], to)
	}
	return out, rows.Err()
}

// pipelineCycle returns a cycle of pipeline dependencies through code,
// starting and ending with it, or nil.
func pipelineCycle(code string, upstreams map[string][]string) []string {
	seen := map[string]bool{}
	var path []string
	var walk func(at string) bool
	walk = func(at string) bool {
		path = append(path, at)
		for _, up := range upstreams[at] {
			if up == code {
				path = append(path, up)
				return true
			}
			if !seen[up] {
				seen[up] = true
				if walk(up) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if walk(code) {
		return path
	}
	return nil
}

// lazyWarehouse connects to the warehouse at its first use, once: a
// connection that fails is one warning, and the checks that need it are
// left out.
type lazyWarehouse struct {
	connect func(ctx context.Context) (warehouse.Warehouse, func(), error)
	tried   bool
	w       warehouse.Warehouse
	release func()
}

// get returns the warehouse, or nil when there is none or it cannot be
// reached (recorded in v the first time).
func (l *lazyWarehouse) get(ctx context.Context, v *report.Validation) warehouse.Warehouse {
	if l.connect == nil || l.tried {
		return l.w
	}
	l.tried = true
	w, release, err := l.connect(ctx)
	var notYet *warehouse.NotCreatedError
	switch {
	case errors.As(err, &notYet):
		add(v, Info, "warehouse", notYet.Error()+", so business rules' target tables, key columns and SQL are checked against it once it exists")
		return nil
	case err != nil:
		add(v, Warn, "warehouse", fmt.Sprintf("could not connect (%v): business rules' target tables, key columns and SQL were not checked against it", err))
		return nil
	}
	l.w, l.release = w, release
	return w
}

func (l *lazyWarehouse) close() {
	if l.release != nil {
		l.release()
	}
}

// graphCache loads each pipeline's graph once, for the pipelines validate
// checks and those their tasks' upstreams are in.
type graphCache struct {
	q      engine.Querier
	loaded map[string]*pipeline.Graph
}

func (c *graphCache) load(ctx context.Context, code string) (*pipeline.Graph, error) {
	if g, ok := c.loaded[code]; ok {
		return g, nil
	}
	g, err := pipeline.Load(ctx, c.q, code)
	if err != nil {
		return nil, err
	}
	c.loaded[code] = g
	return g, nil
}

// upstreamOf returns the tasks that run before t (handler.Upstream), each
// once: first its upstreams through its dependencies, however far, in its
// own pipeline and, through dependencies on other pipelines' tasks, in
// theirs, nearest first; then every task of each pipeline those pipelines
// depend on, and of those they depend on. Dependencies on pipelines or
// tasks that are not active lead nowhere.
func (c *graphCache) upstreamOf(ctx context.Context, g *pipeline.Graph, t *pipeline.Task) ([]handler.Upstream, error) {
	type at struct {
		g *pipeline.Graph
		t *pipeline.Task
	}
	var out []handler.Upstream
	seen := map[*pipeline.Task]bool{t: true}
	queue := []at{{g, t}}
	add := func(g *pipeline.Graph, u *pipeline.Task) {
		if u != nil && !seen[u] {
			seen[u] = true
			out = append(out, handler.Upstream{PipelineCode: g.Pipeline.Code, TaskCode: u.Code, Handler: u.Handler, Params: u.Params})
			queue = append(queue, at{g, u})
		}
	}
	// The pipelines met, whose pipeline dependencies are followed once the
	// tasks' own dependencies are.
	graphs, met := []*pipeline.Graph{g}, map[string]bool{g.Pipeline.Code: true}
	meet := func(g *pipeline.Graph) {
		if !met[g.Pipeline.Code] {
			met[g.Pipeline.Code] = true
			graphs = append(graphs, g)
		}
	}
	for next := 0; len(queue) > 0 || next < len(graphs); {
		if len(queue) == 0 {
			for _, d := range graphs[next].PipelineDeps {
				if d.Upstream == "" {
					continue
				}
				up, err := c.load(ctx, d.Upstream)
				if err != nil {
					return nil, err
				}
				meet(up)
				for _, u := range up.Tasks {
					add(up, u)
				}
			}
			next++
			continue
		}
		cur := queue[0]
		queue = queue[1:]
		for _, d := range cur.t.Deps {
			switch {
			case !d.CrossPipeline:
				add(cur.g, cur.g.TaskByID(d.UpstreamTaskID))
			case d.UpstreamPipeline != "":
				up, err := c.load(ctx, d.UpstreamPipeline)
				if err != nil {
					return nil, err
				}
				meet(up)
				add(up, up.TaskByID(d.UpstreamTaskID))
			}
		}
	}
	return out, nil
}
