package dag_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/dag"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// register writes the pipelines of the golden files: LOCAL_P and REMOTE_P
// cover every cell of the trigger-rule table, LOCAL_P also N, HAS_DATA and
// mixed types; both depend on the tasks of UP and on the pipelines UP,
// OTHER and THIRD with each dependency type. DOWN depends on UP and on one
// of its tasks.
func register(t *testing.T, db *engine.DB) *pipelinetest.Builder {
	b := pipelinetest.New(t, db)
	py := pipeline.HandlerPython
	for _, code := range []string{"UP", "OTHER", "THIRD", "LONE"} {
		b.Pipeline(code, pipeline.Full)
	}
	for _, task := range []string{"load", "check", "audit"} {
		b.Task("UP", task, py, nil)
	}
	for _, p := range []string{"LOCAL_P", "REMOTE_P"} {
		b.Pipeline(p, pipeline.Incremental)
		b.Exec(`UPDATE CFG_PIPELINES SET DESCRIPTION = 'Orders, daily', RUN_SCHEDULE = '0 5 * * 1-5', SLA_IN_HOURS = 1.5,
			PIPELINE_PARAMETERS = '{"RETRIES": 3, "TAGS": ["sales", "daily"], "EMAIL_ON_FAILURE": true, "EMAIL_RECIPIENTS": ["ops@example.com"]}'
			WHERE PIPELINE_CODE = $1`, p)
		for _, task := range []string{"a", "b", "s_all", "f_all", "w_all", "s_any", "f_any", "w_any", "t_up", "t_fail", "t_always"} {
			b.Task(p, task, py, nil)
		}
		for _, c := range []struct{ task, typ string }{{"s", pipeline.Success}, {"f", pipeline.Failure}, {"w", pipeline.Always}} {
			b.Dep(p, c.task+"_all", p, "a", c.typ)
			b.Dep(p, c.task+"_all", p, "b", c.typ)
			b.Dep(p, c.task+"_any", p, "a", c.typ)
			b.Dep(p, c.task+"_any", p, "b", c.typ)
			b.Condition(p, c.task+"_any", pipeline.Any, 0)
		}
		b.Dep(p, "t_up", "UP", "load", pipeline.Success)
		b.Dep(p, "t_fail", "UP", "check", pipeline.Failure)
		b.Dep(p, "t_fail", p, "a", pipeline.Success)
		b.Dep(p, "t_always", "UP", "audit", pipeline.Always)
		b.PipelineDep(p, "UP", pipeline.Success)
		b.PipelineDep(p, "OTHER", pipeline.Failure)
		b.PipelineDep(p, "THIRD", pipeline.Always)
	}
	b.Pipeline("DOWN", pipeline.Full)
	b.Task("DOWN", "x", py, nil)
	b.Dep("DOWN", "x", "UP", "load", pipeline.Success)
	b.PipelineDep("DOWN", "UP", pipeline.Success)
	for _, task := range []string{"n_cond", "has_data", "mixed"} {
		b.Task("LOCAL_P", task, py, nil)
	}
	b.Dep("LOCAL_P", "n_cond", "LOCAL_P", "a", pipeline.Success)
	b.Dep("LOCAL_P", "n_cond", "LOCAL_P", "b", pipeline.Success)
	b.Condition("LOCAL_P", "n_cond", pipeline.N, 1)
	b.Dep("LOCAL_P", "has_data", "LOCAL_P", "a", pipeline.HasData)
	b.Dep("LOCAL_P", "mixed", "LOCAL_P", "a", pipeline.Success)
	b.Dep("LOCAL_P", "mixed", "LOCAL_P", "b", pipeline.Failure)
	return b
}

func orchestration(mode string) config.Orchestration {
	return config.Orchestration{Mode: mode, AllowSchedule: true}
}

func options(o config.Orchestration) dag.Options {
	return dag.Options{Orchestration: o, AirflowVersion: dag.DefaultAirflowVersion}
}

func load(t *testing.T, db *engine.DB, code string) *pipeline.Graph {
	t.Helper()
	g, err := pipeline.Load(context.Background(), db, code)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// golden compares out with testdata/<name>.yml (rewritten with -update)
// and checks that it parses as YAML.
func golden(t *testing.T, name string, out []byte) {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("%s does not parse: %v\n%s", name, err, out)
	}
	path := filepath.Join("testdata", name+".yml")
	if *update {
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, want) {
		t.Errorf("%s differs from %s (run with -update to accept):\n%s", name, path, out)
	}
}

func wantCode(t *testing.T, err error, code exit.Code, parts ...string) {
	t.Helper()
	if exit.CodeOf(err) != code {
		t.Fatalf("want exit %d, got %v", code, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not say %q", err, p)
		}
	}
}

func TestGenerateYmlGolden(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.SQLite)
	register(t, db)
	global := orchestration(config.ModeLocal)
	global.GlobalDAG = true
	remoteGlobal := orchestration(config.ModeRemote)
	remoteGlobal.GlobalDAG = true
	cases := []struct {
		name string
		gen  func() ([]byte, error)
	}{
		{"local", func() ([]byte, error) {
			return dag.Pipeline(load(t, db, "LOCAL_P"), options(orchestration(config.ModeLocal)))
		}},
		{"remote", func() ([]byte, error) {
			return dag.Pipeline(load(t, db, "REMOTE_P"), options(orchestration(config.ModeRemote)))
		}},
		// With Global_dag the global DAG orders the pipelines: no pipeline sensor.
		{"remote_global_dag", func() ([]byte, error) { return dag.Pipeline(load(t, db, "DOWN"), options(remoteGlobal)) }},
		{"global", func() ([]byte, error) {
			var graphs []*pipeline.Graph
			for _, code := range []string{"DOWN", "LOCAL_P", "LONE", "OTHER", "REMOTE_P", "THIRD", "UP"} {
				graphs = append(graphs, load(t, db, code))
			}
			return dag.Global(graphs, options(global))
		}},
		{"docs", func() ([]byte, error) {
			return dag.Docs(&config.DocsSite{Schedule: "0 6 * * *"}, options(orchestration(config.ModeLocal)))
		}},
	}
	for _, c := range cases {
		out, err := c.gen()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		golden(t, c.name, out)
		again, _ := c.gen()
		if !bytes.Equal(out, again) {
			t.Errorf("%s: a second generation differs", c.name)
		}
	}
}

func TestGenerateYmlRefusals(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.SQLite)
	register(t, db)
	remote := options(orchestration(config.ModeRemote))

	_, err := dag.Pipeline(load(t, db, "LOCAL_P"), remote)
	wantCode(t, err, exit.RemoteUnsupported, "LOCAL_P has 3 rule(s) the remote orchestrator cannot express",
		"LOCAL_P.n_cond: RUN_CONDITION = 'N'", "LOCAL_P.has_data: depends on a with DEPENDENCY_TYPE = 'HAS_DATA'",
		"LOCAL_P.mixed: its dependencies have different types (a: SUCCESS, b: FAILURE)")

	g := remote
	g.Orchestration.GlobalDAG = true
	_, err = dag.Global([]*pipeline.Graph{load(t, db, "REMOTE_P"), load(t, db, "UP")}, g)
	wantCode(t, err, exit.RemoteUnsupported, "REMOTE_P has 1 rule(s) the global DAG cannot express",
		"different types (OTHER: FAILURE, THIRD: ALWAYS, UP: SUCCESS) and Global_dag is on")

	_, err = dag.Global(nil, options(orchestration(config.ModeLocal)))
	wantCode(t, err, exit.Configuration, "Global_dag is not true")
	_, err = dag.Docs(nil, remote)
	wantCode(t, err, exit.Configuration, "Docs_site.Schedule is not set")
	_, err = dag.Docs(&config.DocsSite{}, remote)
	wantCode(t, err, exit.Configuration, "Docs_site.Schedule is not set")

	// One upstream task awaited with two types cannot be one sensor.
	b := pipelinetest.New(t, db)
	b.Pipeline("TWICE", pipeline.Full)
	b.Task("TWICE", "x", pipeline.HandlerPython, nil)
	b.Task("TWICE", "y", pipeline.HandlerPython, nil)
	b.Dep("TWICE", "x", "UP", "load", pipeline.Success)
	b.Dep("TWICE", "y", "UP", "load", pipeline.Failure)
	_, err = dag.Pipeline(load(t, db, "TWICE"), remote)
	wantCode(t, err, exit.RemoteUnsupported, "TWICE.y: __wait_for_UP.load__ would wait for UP.load with two different dependency types")

	// An invalid graph is the graph's own error.
	b.Dep("TWICE", "x", "TWICE", "y", pipeline.Success)
	b.Dep("TWICE", "y", "TWICE", "x", pipeline.Success)
	_, err = dag.Pipeline(load(t, db, "TWICE"), options(orchestration(config.ModeLocal)))
	wantCode(t, err, exit.DependencyCycle)
}

func TestGenerateYmlAllowScheduleAndDefaults(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.SQLite)
	register(t, db)
	o := orchestration(config.ModeLocal)
	o.AllowSchedule = false
	retries, delay, yes := 4, 9, true
	o.Retries, o.RetryDelayMinutes, o.Catchup, o.Tags = &retries, &delay, &yes, []string{"team"}
	for name, gen := range map[string]func() ([]byte, error){
		"pipeline": func() ([]byte, error) { return dag.Pipeline(load(t, db, "UP"), options(o)) },
		"docs":     func() ([]byte, error) { return dag.Docs(&config.DocsSite{Schedule: "0 6 * * *"}, options(o)) },
	} {
		out, err := gen()
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Schedule    *string  `yaml:"schedule"`
			Catchup     bool     `yaml:"catchup"`
			Tags        []string `yaml:"tags"`
			DefaultArgs struct {
				Retries int `yaml:"retries"`
				Delay   int `yaml:"retry_delay_minutes"`
			} `yaml:"default_args"`
		}
		if err := yaml.Unmarshal(out, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Schedule != nil || doc.DefaultArgs.Retries != 4 || doc.DefaultArgs.Delay != 9 {
			t.Errorf("%s: Allow_schedule false and the Orchestration defaults not applied:\n%s", name, out)
		}
		if name == "pipeline" && (!doc.Catchup || strings.Join(doc.Tags, ",") != "team") {
			t.Errorf("pipeline: Catchup and Tags defaults not applied:\n%s", out)
		}
	}
	// The pipeline's own PIPELINE_PARAMETERS win over the defaults.
	out, err := dag.Pipeline(load(t, db, "LOCAL_P"), options(o))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "retries: 3\n") || !strings.Contains(string(out), "tags: [sales, daily]\n") {
		t.Errorf("PIPELINE_PARAMETERS do not win:\n%s", out)
	}
	b := pipelinetest.New(t, db)
	b.Exec(`UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = '{"RETRIES": "many"}' WHERE PIPELINE_CODE = 'UP'`)
	_, err = dag.Pipeline(load(t, db, "UP"), options(o))
	wantCode(t, err, exit.Metadata, "PIPELINE_PARAMETERS of UP: RETRIES must be a whole number")
	// Minutes are bounded as the configuration file bounds them.
	b.Exec(`UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = '{"RETRY_DELAY_MINUTES": 1000000000000000}' WHERE PIPELINE_CODE = 'UP'`)
	_, err = dag.Pipeline(load(t, db, "UP"), options(o))
	wantCode(t, err, exit.Metadata, "PIPELINE_PARAMETERS of UP: RETRY_DELAY_MINUTES must be a whole number from 0 to 2147483647; got 1e+15")
}

func TestGenerateYmlAirflowVersion(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rng    string
		remote bool
		ok     bool
	}{
		{">=2.2.0", true, true}, {">=2.7,<3", true, true}, {"==2.9.1", true, true}, {"~=2.5", true, true},
		{">=2.0.0", true, false}, {"<3", true, false}, {">=2.0.0", false, true}, {"2.2", false, false}, {">=two", false, false},
	} {
		err := dag.CheckAirflowVersion(c.rng, c.remote)
		if c.ok != (err == nil) {
			t.Errorf("%q remote=%v: %v", c.rng, c.remote, err)
		}
		if err != nil && exit.CodeOf(err) != exit.Usage {
			t.Errorf("%q: want a usage error, got %v", c.rng, err)
		}
	}
}
