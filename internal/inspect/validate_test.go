package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// paramChecker is a handler whose Check requires SQL_ACTION and warns about
// a parameter named UNUSED; validate never runs a task.
type paramChecker struct{}

func (paramChecker) Run(context.Context, *handler.Task) (handler.Result, error) {
	return handler.Result{}, errors.New("validate must not run tasks")
}

func (paramChecker) Check(t *handler.Task) (failures, warnings []string) {
	if t.Params["SQL_ACTION"] == "" {
		failures = append(failures, "SQL_ACTION is required")
	}
	if _, ok := t.Params["UNUSED"]; ok {
		warnings = append(warnings, "no handler reads the parameter UNUSED")
	}
	return failures, warnings
}

func TestValidateReportsEveryProblem(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := pipelinetest.New(t, db)
		create := map[string]string{"SQL_ACTION": "CREATE_TABLE"}
		b.Pipeline("BAD", pipeline.Full)
		b.Task("BAD", "a", pipeline.HandlerSQL, nil)
		b.Task("BAD", "b", pipeline.HandlerPython, nil)
		b.Task("BAD", "c", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "SETUP_TABLE"})
		b.Task("BAD", "d", pipeline.HandlerSQL, create)
		b.Dep("BAD", "d", "BAD", "c", pipeline.HasData)
		b.Pipeline("CYCLE", pipeline.Full)
		b.Task("CYCLE", "x", pipeline.HandlerSQL, create)
		b.Task("CYCLE", "y", pipeline.HandlerSQL, create)
		b.Dep("CYCLE", "x", "CYCLE", "y", pipeline.Success)
		b.Dep("CYCLE", "y", "CYCLE", "x", pipeline.Success)
		b.Pipeline("GOOD", pipeline.Full)
		b.Task("GOOD", "t", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "UNUSED": "1"})
		old := b.Pipeline("OLD", pipeline.Full)
		b.PipelineDep("GOOD", "OLD", pipeline.Success)
		b.Exec("UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_ID = $1", old)
		b.Pipeline("X_DOWN", pipeline.Full)
		b.Pipeline("X_UP", pipeline.Full)
		b.PipelineDep("X_DOWN", "X_UP", pipeline.Success)
		b.PipelineDep("X_UP", "X_DOWN", pipeline.Success)

		ctx := context.Background()
		req := inspect.ValidateRequest{Handlers: handler.Registry{pipeline.HandlerSQL: paramChecker{}}}
		v, err := inspect.Validate(ctx, db, req)
		if err != nil {
			t.Fatal(err)
		}
		want := []report.Finding{
			{Status: inspect.Fail, Where: "BAD.a", Message: "SQL_ACTION is required"},
			{Status: inspect.Fail, Where: "BAD.b", Message: "no handler for PYTHON tasks"},
			{Status: inspect.Fail, Where: "BAD.d", Message: "has a HAS_DATA dependency on c, a SETUP_TABLE task that reports no rows written"},
			{Status: inspect.Fail, Where: "CYCLE", Message: "CYCLE has a dependency cycle: "},
			{Status: inspect.Fail, Where: "GOOD", Message: "depends on pipeline id " + itoa(old) + " "},
			{Status: inspect.Warn, Where: "GOOD.t", Message: "no handler reads the parameter UNUSED"},
			{Status: inspect.Fail, Where: "X_DOWN", Message: "pipeline dependencies form a cycle (X_DOWN -> X_UP -> X_DOWN)"},
			{Status: inspect.Fail, Where: "X_UP", Message: "pipeline dependencies form a cycle (X_UP -> X_DOWN -> X_UP)"},
		}
		if len(v.Findings) != len(want) {
			t.Fatalf("findings %+v", v.Findings)
		}
		for i, f := range v.Findings {
			if f.Status != want[i].Status || f.Where != want[i].Where || !strings.Contains(f.Message, want[i].Message) {
				t.Errorf("finding %d: %+v, want %+v", i, f, want[i])
			}
		}
		if v.Pipelines != 5 || v.Tasks != 7 || v.Failed != 7 || v.Warnings != 1 || v.Schema != report.SchemaValidation {
			t.Fatalf("counts: %+v", v)
		}

		req.PipelineCode = "GOOD"
		v, err = inspect.Validate(ctx, db, req)
		if err != nil || v.Pipelines != 1 || v.Tasks != 1 || v.Failed != 1 || v.Warnings != 1 {
			t.Fatalf("GOOD alone: %+v %v", v, err)
		}
		req.PipelineCode = "OLD"
		_, err = inspect.Validate(ctx, db, req)
		wantCode(t, err, exit.Metadata, `no active pipeline has the code "OLD"`)
	})
}

func TestValidateRemoteNamesWhatTheOrchestratorCannotExpress(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := pipelinetest.New(t, db)
		create := map[string]string{"SQL_ACTION": "CREATE_TABLE"}
		b.Pipeline("UP", pipeline.Full)
		b.Pipeline("UP2", pipeline.Full)
		b.Pipeline("P", pipeline.Full)
		for _, task := range []string{"a", "b", "n", "rows", "mixed", "fine"} {
			b.Task("P", task, pipeline.HandlerSQL, create)
		}
		b.Dep("P", "n", "P", "a", pipeline.Success)
		b.Dep("P", "n", "P", "b", pipeline.Success)
		b.Condition("P", "n", pipeline.N, 1)
		b.Dep("P", "rows", "P", "a", pipeline.HasData)
		b.Dep("P", "mixed", "P", "a", pipeline.Success)
		b.Dep("P", "mixed", "P", "b", pipeline.Always)
		b.Dep("P", "fine", "P", "a", pipeline.Failure)
		b.PipelineDep("P", "UP", pipeline.Success)
		b.PipelineDep("P", "UP2", pipeline.Failure)

		ctx := context.Background()
		req := inspect.ValidateRequest{PipelineCode: "P", Handlers: handler.Registry{pipeline.HandlerSQL: paramChecker{}}}
		v, err := inspect.Validate(ctx, db, req)
		if err != nil || v.Failed != 0 {
			t.Fatalf("local mode: %+v %v", v, err)
		}
		req.Remote = true
		want := []report.Finding{
			{Status: inspect.Fail, Where: "P.mixed", Message: "its dependencies have different types (a: SUCCESS, b: ALWAYS)"},
			{Status: inspect.Fail, Where: "P.n", Message: "RUN_CONDITION = 'N' (RUN_CONDITION_COUNT = 1)"},
			{Status: inspect.Fail, Where: "P.rows", Message: "depends on a with DEPENDENCY_TYPE = 'HAS_DATA'"},
		}
		check := func(want []report.Finding) {
			t.Helper()
			v, err := inspect.Validate(ctx, db, req)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Findings) != len(want) || v.Failed != len(want) {
				t.Fatalf("findings %+v", v.Findings)
			}
			// The reference's words come first, as teams' wrappers read them.
			for i, f := range v.Findings {
				if f.Status != want[i].Status || f.Where != want[i].Where || !strings.HasPrefix(f.Message, want[i].Message) ||
					!strings.Contains(f.Message, "Orchestration.Mode: local") {
					t.Errorf("finding %d: %+v, want %+v", i, f, want[i])
				}
			}
		}
		check(want)
		// With Global_dag, mixed pipeline-dependency types cannot be expressed either.
		req.GlobalDAG = true
		check(append(want, report.Finding{Status: inspect.Fail, Where: "P",
			Message: "its dependencies on other pipelines have different types (UP: SUCCESS, UP2: FAILURE) and Global_dag is on"}))
	})
}

// upstreamRecorder is a handler that checks with the warehouse and notes,
// for each task, the tasks validate says run before it.
type upstreamRecorder struct{ paramChecker }

func (upstreamRecorder) CheckWarehouse(_ context.Context, _ warehouse.Warehouse, t *handler.Task) (failures, warnings, notes []string) {
	var names []string
	for _, u := range t.Upstream {
		names = append(names, u.Name()+"="+u.Params["TARGET_OBJECT"])
	}
	return nil, nil, []string{strings.Join(names, " ")}
}

// The tasks that run before a task, for the checks of what they create:
// its upstreams in its own pipeline however far, another pipeline's task it
// depends on and that task's upstreams, nearest first; then every task of a
// pipeline its pipeline depends on, however far; each once. A pipeline
// that is not active leads nowhere.
func TestValidateGivesAHandlerTheTasksThatRunBeforeEach(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := pipelinetest.New(t, db)
		task := func(pipe, code string) {
			b.Task(pipe, code, pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "s." + code})
		}
		b.Pipeline("FAR", pipeline.Full)
		task("FAR", "far")
		b.Pipeline("UP", pipeline.Full)
		task("UP", "u1")
		task("UP", "u2")
		b.Dep("UP", "u2", "UP", "u1", pipeline.Success)
		b.PipelineDep("UP", "FAR", pipeline.Success)
		b.Pipeline("SIDE", pipeline.Full)
		task("SIDE", "s0")
		task("SIDE", "s1")
		b.Dep("SIDE", "s1", "SIDE", "s0", pipeline.Success)
		old := b.Pipeline("OLD", pipeline.Full)
		task("OLD", "gone")
		b.Pipeline("P", pipeline.Full)
		task("P", "a")
		task("P", "b")
		task("P", "c")
		task("P", "after")
		b.Dep("P", "b", "P", "a", pipeline.Success)
		b.Dep("P", "c", "P", "b", pipeline.Failure)
		b.Dep("P", "c", "SIDE", "s1", pipeline.Success)
		b.Dep("P", "after", "P", "c", pipeline.Success)
		b.PipelineDep("P", "UP", pipeline.Success)
		b.PipelineDep("P", "OLD", pipeline.Success)
		b.Exec("UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_ID = $1", old)

		w, err := warehouse.Open(context.Background(), warehouse.Options{Kind: warehouse.DuckDB}) // in memory
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		req := inspect.ValidateRequest{PipelineCode: "P", Handlers: handler.Registry{pipeline.HandlerSQL: upstreamRecorder{}},
			Warehouse: func(context.Context) (warehouse.Warehouse, func(), error) { return w, func() {}, nil }}
		v, err := inspect.Validate(context.Background(), db, req)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range v.Findings {
			switch {
			case f.Where == "P" && strings.Contains(f.Message, "which is not active"): // the dependency on OLD
			case f.Status != inspect.Info:
				t.Fatalf("findings %+v", v.Findings)
			}
			got[f.Where] = f.Message
		}
		if v.Failed != 1 || v.Warnings != 0 {
			t.Errorf("counts %+v: notes are not counted", v)
		}
		ups := "UP.u1=s.u1 UP.u2=s.u2 FAR.far=s.far"
		for where, want := range map[string]string{
			"P.a":     ups,
			"P.b":     "P.a=s.a " + ups,
			"P.c":     "P.b=s.b SIDE.s1=s.s1 P.a=s.a SIDE.s0=s.s0 " + ups,
			"P.after": "P.c=s.c P.b=s.b SIDE.s1=s.s1 P.a=s.a SIDE.s0=s.s0 " + ups,
		} {
			if got[where] != want {
				t.Errorf("%s runs after\n%s\nwant\n%s", where, got[where], want)
			}
		}
	})
}
