package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/etl-craft/etl-craft/internal/dag"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// setMode rewrites the project's Orchestration section: the mode and more
// lines (indented two spaces).
func setMode(p *e2e.Project, mode, more string) {
	p.T.Helper()
	yml := p.Config()
	p.Write("craft-connector.yml", strings.Replace(yml, "Orchestration:\n  Mode: local\n", "Orchestration:\n  Mode: "+mode+"\n"+more, 1))
}

// generate-yml writes a pipeline's DAG to stdout or --output, refuses in
// remote mode what the orchestrator cannot express (exit 18, as validate
// fails it), and needs Global_dag for --global and Docs_site.Schedule for
// --docs (exit 3).
func TestGenerateYmlCommand(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		b := pipelinetest.New(t, p.DB())
		b.Pipeline("UP", pipeline.Full)
		b.Task("UP", "load", pipeline.HandlerPython, nil)
		b.Pipeline("P", pipeline.Full)
		b.Task("P", "a", pipeline.HandlerPython, nil)
		b.Task("P", "b", pipeline.HandlerPython, nil)
		b.Dep("P", "b", "P", "a", pipeline.HasData)
		b.PipelineDep("P", "UP", pipeline.Success)

		out := p.OK("generate-yml", "--pipeline_code", "P").Stdout
		var doc struct {
			DagID string                    `yaml:"dag_id"`
			Tasks map[string]map[string]any `yaml:"tasks"`
		}
		if err := yaml.Unmarshal([]byte(out), &doc); err != nil || doc.DagID != "P" || doc.Tasks["b"]["trigger_rule"] != "all_done" {
			t.Fatalf("local DAG (%v):\n%s", err, out)
		}
		dest := filepath.Join(p.Dir, "dags", "nested", "p.yml")
		if r := p.OK("generate-yml", "--pipeline_code", "P", "--output", dest); r.Stdout != "wrote "+dest+"\n" {
			t.Errorf("--output printed %q", r.Stdout)
		}
		if written, _ := os.ReadFile(dest); string(written) != out {
			t.Errorf("the file differs from stdout:\n%s", written)
		}
		for _, args := range [][]string{{}, {"--pipeline_code", "P", "--docs"}, {"--global", "--docs"}, {"--pipeline_code", "P", "--airflow-version", "2.2"}} {
			if r := p.Run(nil, append([]string{"generate-yml"}, args...)...); r.Code != 2 {
				t.Errorf("generate-yml %v: exit %d, want 2\n%s", args, r.Code, r.Stderr)
			}
		}
		if r := p.Run(nil, "generate-yml", "--global"); r.Code != 3 || !strings.Contains(r.Stderr, "Global_dag is not true") {
			t.Errorf("--global without Global_dag: exit %d\n%s", r.Code, r.Stderr)
		}
		if r := p.Run(nil, "generate-yml", "--docs"); r.Code != 3 || !strings.Contains(r.Stderr, "Docs_site.Schedule is not set") {
			t.Errorf("--docs without Docs_site.Schedule: exit %d\n%s", r.Code, r.Stderr)
		}
		if r := p.Run(nil, "generate-yml", "--pipeline_code", "NOPE"); r.Code != 4 {
			t.Errorf("unknown pipeline: exit %d\n%s", r.Code, r.Stderr)
		}

		setMode(p, "remote", "  Global_dag: true\n")
		r := p.Run(nil, "generate-yml", "--pipeline_code", "P")
		if r.Code != 18 || !strings.Contains(r.Stderr, "P.b: depends on a with DEPENDENCY_TYPE = 'HAS_DATA'") {
			t.Errorf("remote HAS_DATA: exit %d\n%s", r.Code, r.Stderr)
		}
		r = p.Run(nil, "validate", "--pipeline_code", "P")
		if r.Code != 1 || !strings.Contains(r.Stdout, "[FAIL] P.b: depends on a with DEPENDENCY_TYPE = 'HAS_DATA'") {
			t.Errorf("remote validate: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if r := p.Run(nil, "generate-yml", "--pipeline_code", "P", "--airflow-version", ">=2.0"); r.Code != 2 || !strings.Contains(r.Stderr, "--airflow-version >=2.0 allows Airflow before 2.2.0") {
			t.Errorf("remote floor: exit %d\n%s", r.Code, r.Stderr)
		}
		out = p.OK("generate-yml", "--global").Stdout
		if !strings.Contains(out, "dag_id: etl_craft_global_orchestration\n") || !strings.Contains(out, "  P:\n    trigger_dag_id: P\n    depends_on: [UP]\n") {
			t.Errorf("global DAG:\n%s", out)
		}
		if out := p.OK("generate-yml", "--pipeline_code", "UP").Stdout; !strings.Contains(out, "--run-date {{ data_interval_end | ds }}") {
			t.Errorf("remote DAG without the run date:\n%s", out)
		}
	})
}

// --docs writes the docs DAG on Docs_site.Schedule.
func TestGenerateYmlDocs(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "\nDocs_site:\n  Schedule: '0 6 * * *'\n")
	out := p.OK("generate-yml", "--docs").Stdout
	if !strings.Contains(out, "dag_id: etl_craft_docs\n") || !strings.Contains(out, "schedule: 0 6 * * *\n") ||
		!strings.Contains(out, "bash_command: etl-craft generate-docs\n") {
		t.Errorf("docs DAG:\n%s", out)
	}
}

// --print-loader writes the Airflow loader, without needing a project, to
// stdout or --output; it goes alone.
func TestGenerateYmlPrintLoader(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	out := p.OK("generate-yml", "--print-loader").Stdout
	if out != string(dag.Loader()) || !strings.Contains(out, `"ETL_CRAFT_ACTOR_KIND": "ORCHESTRATOR"`) {
		t.Fatalf("the loader:\n%s", out)
	}
	dest := filepath.Join(t.TempDir(), "airflow", "dags", dag.LoaderFile)
	if r := p.OK("generate-yml", "--print-loader", "--output", dest); r.Stdout != "wrote "+dest+"\n" {
		t.Errorf("--output printed %q", r.Stdout)
	}
	if written, _ := os.ReadFile(dest); string(written) != out {
		t.Errorf("the file differs from stdout")
	}
	if r := p.Run(nil, "generate-yml", "--print-loader", "--docs"); r.Code != 2 || !strings.Contains(r.Stderr, "--print-loader") {
		t.Errorf("--print-loader --docs: exit %d\n%s", r.Code, r.Stderr)
	}
}
