package pipeline_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestLoadReadsTasksParametersAndDependencies(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		b := pipelinetest.New(t, db)
		b.Pipeline("UP", pipeline.Full)
		b.Task("UP", "publish", pipeline.HandlerSQL, nil)
		b.Pipeline("P", pipeline.Incremental)
		b.Task("P", "extract", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "s.t"})
		b.Task("P", "transform", pipeline.HandlerSQL, nil)
		b.Task("P", "alert", pipeline.HandlerEmailAlert, nil)
		b.Dep("P", "transform", "P", "extract", pipeline.Success)
		b.Dep("P", "transform", "UP", "publish", pipeline.HasData)
		b.Dep("P", "alert", "P", "transform", pipeline.Failure)
		b.Condition("P", "transform", pipeline.N, 1)
		b.PipelineDep("P", "UP", pipeline.Success)

		g, err := pipeline.Load(ctx, db, "P")
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(g.Codes(), ","); got != "alert,extract,transform" {
			t.Fatalf("tasks %s", got)
		}
		ex := g.Task("extract")
		if ex.Params["TARGET_OBJECT"] != "s.t" || ex.RunCondition != pipeline.All {
			t.Fatalf("extract %+v", ex)
		}
		tr := g.Task("transform")
		if len(tr.Deps) != 2 || tr.Deps[1].Label() != "UP.publish" || !tr.Deps[1].CrossPipeline || tr.Required() != 1 || tr.ConditionLabel() != "N=1" {
			t.Fatalf("transform deps %+v", tr.Deps)
		}
		if len(g.PipelineDeps) != 1 || g.PipelineDeps[0].Upstream != "UP" || !g.PipelineDeps[0].ConsumeRepairs {
			t.Fatalf("pipeline deps %+v", g.PipelineDeps)
		}
		var waves []string
		for _, w := range g.Waves() {
			var codes []string
			for _, t := range w {
				codes = append(codes, t.Code)
			}
			waves = append(waves, strings.Join(codes, ","))
		}
		if strings.Join(waves, " | ") != "extract | transform | alert" {
			t.Fatalf("waves %v", waves)
		}
		_, err = pipeline.Load(ctx, db, "p_typo")
		if !exit.Is(err, exit.Metadata) {
			t.Fatalf("unknown code: %v", err)
		}
		if _, err := g.FindTask("transfrom"); !exit.Is(err, exit.Metadata) || !strings.Contains(err.Error(), "did you mean transform?") {
			t.Fatalf("unknown task: %v", err)
		}
	})
}

func TestValidateRefusesBrokenGraphs(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		b := pipelinetest.New(t, db)
		b.Pipeline("P", pipeline.Full)
		b.Task("P", "a", pipeline.HandlerSQL, nil)
		b.Task("P", "b", pipeline.HandlerSQL, nil)
		b.Task("P", "c", pipeline.HandlerSQL, nil)
		b.Dep("P", "b", "P", "a", pipeline.Success)
		b.Dep("P", "c", "P", "b", pipeline.Success)
		load := func() error {
			g, err := pipeline.Load(ctx, db, "P")
			if err != nil {
				return err
			}
			return g.Validate()
		}
		if err := load(); err != nil {
			t.Fatal(err)
		}
		cyc := b.Dep("P", "a", "P", "c", pipeline.Success)
		if err := load(); !exit.Is(err, exit.DependencyCycle) || !strings.Contains(err.Error(), "a -> b -> c -> a") &&
			!strings.Contains(err.Error(), "-> a") {
			t.Fatalf("cycle: %v", err)
		}
		b.Exec("UPDATE CFG_TASK_DEPENDENCY SET ACTIVE_FLAG = 'N' WHERE TASK_DEPENDENCY_ID = $1", cyc)
		b.Condition("P", "c", pipeline.N, 2)
		if err := load(); !exit.Is(err, exit.Graph) || !strings.Contains(err.Error(), "RUN_CONDITION_COUNT 2 but 1 dependencies") {
			t.Fatalf("impossible N: %v", err)
		}
		b.Condition("P", "c", pipeline.All, 0)
		b.Exec("UPDATE CFG_TASKS SET ACTIVE_FLAG = 'N' WHERE TASK_ID = $1", b.TaskID("P", "a"))
		if err := load(); !exit.Is(err, exit.UnknownTask) || !strings.Contains(err.Error(), "P.b depends on task id") ||
			!strings.Contains(err.Error(), "which is P.a, a retired task of the pipeline P: activate it or retire the dependency") {
			t.Fatalf("inactive upstream: %v", err)
		}
	})
}

// TestADependencyOnATaskNotActiveNamesIt: a dependency whose task is not an
// active task of the pipeline it names says which task and pipeline the id
// is, active or not.
func TestADependencyOnATaskNotActiveNamesIt(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		b := pipelinetest.New(t, db)
		old := b.Pipeline("OLDP", pipeline.Full)
		extract := b.Task("OLDP", "extract", pipeline.HandlerSQL, nil)
		b.Pipeline("XDEP", pipeline.Full)
		b.Task("XDEP", "t", pipeline.HandlerSQL, nil)
		b.Exec("UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_ID = $1", old)
		insert := func(task string, upstreamPipeline any, upstreamTask int64) {
			b.Exec(`INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
				VALUES ($1, $2, $3, $4, 'SUCCESS')`, b.PipelineID("XDEP"), b.TaskID("XDEP", task), upstreamPipeline, upstreamTask)
		}
		validate := func() error {
			g, err := pipeline.Load(ctx, db, "XDEP")
			if err != nil {
				return err
			}
			return g.Validate()
		}
		// Without DEPENDS_ON_PIPELINE_ID the dependency names XDEP's own task.
		insert("t", nil, extract)
		err := validate()
		if !exit.Is(err, exit.UnknownTask) || !strings.Contains(err.Error(), fmt.Sprintf(
			"XDEP.t depends on task id %d (CFG_TASK_DEPENDENCY id 1), which is OLDP.extract, a task of the retired pipeline OLDP, not of XDEP: name its pipeline in DEPENDS_ON_PIPELINE_ID, or retire the dependency", extract)) {
			t.Fatalf("a task of another pipeline: %v", err)
		}
		b.Exec("UPDATE CFG_TASK_DEPENDENCY SET ACTIVE_FLAG = 'N'")
		insert("t", old, extract)
		if err := validate(); err == nil || !strings.Contains(err.Error(), "which is OLDP.extract, a task of the retired pipeline OLDP: activate the pipeline or retire the dependency") {
			t.Fatalf("a task of a retired pipeline: %v", err)
		}
	})
}
