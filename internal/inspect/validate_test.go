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
