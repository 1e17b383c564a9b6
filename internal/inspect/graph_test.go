package inspect_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// salesGraph registers SALES: extract, then load (also waiting for
// UP.publish), then an alert on load's failure that runs on ANY; SALES also
// depends on the pipeline UP.
func salesGraph(t *testing.T, db *engine.DB) *pipelinetest.Builder {
	b := pipelinetest.New(t, db)
	b.Pipeline("UP", pipeline.Full)
	b.Task("UP", "publish", pipeline.HandlerSQL, nil)
	b.Pipeline("SALES", pipeline.Full)
	for _, task := range []string{"extract", "load", "alert"} {
		b.Task("SALES", task, pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE"})
	}
	b.Dep("SALES", "load", "SALES", "extract", pipeline.Success)
	b.Dep("SALES", "load", "UP", "publish", pipeline.Success)
	b.Dep("SALES", "alert", "SALES", "load", pipeline.Failure)
	b.Condition("SALES", "alert", pipeline.Any, 0)
	b.PipelineDep("SALES", "UP", pipeline.Success)
	return b
}

func TestPipelineGraphListsWavesAndEdges(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := salesGraph(t, db)
		g, err := pipeline.Load(context.Background(), db, "SALES")
		if err != nil {
			t.Fatal(err)
		}
		doc, err := inspect.PipelineGraph(g)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(doc)
		want := `{"schema":"etl-craft/graph/1","pipeline_id":` + itoa(b.PipelineID("SALES")) + `,"pipeline_code":"SALES",` +
			`"waves":[["extract"],["load"],["alert"]],"conditional":["alert"],` +
			`"depends_on":{"alert":[["load","FAILURE"]],"extract":[],"load":[["UP.publish","SUCCESS"],["extract","SUCCESS"]]},` +
			`"pipeline_dependencies":[["UP","SUCCESS"]]}`
		if string(got) != want {
			t.Fatalf("graph\n got %s\nwant %s", got, want)
		}

		b.Dep("SALES", "extract", "SALES", "alert", pipeline.Always)
		g, _ = pipeline.Load(context.Background(), db, "SALES")
		_, err = inspect.PipelineGraph(g)
		wantCode(t, err, exit.DependencyCycle, "SALES has a dependency cycle")
	})
}
