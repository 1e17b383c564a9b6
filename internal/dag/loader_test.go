package dag_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/etl-craft/etl-craft/internal/dag"
)

// Airflow itself cannot be installed here (PyPI is out of reach), so the
// loader is run by Debian's python3 (with python3-yaml, which
// scripts/test.sh installs) against this stand-in airflow package. The
// stand-in is not Airflow: it only records the DAGs, operators and
// dependencies it is given, and checks what real Airflow checks that the
// loader relies on (the arguments each class takes, unique task ids, task
// id characters, trigger rules, sensor modes). STANDIN_AIRFLOW_VERSION=2.2.5
// gives the arguments of Airflow 2.2: schedule_interval, and no append_env.
var standIn = map[string]string{
	"airflow/__init__.py": `"""A stand-in for Apache Airflow, written by etl-craft's loader test. It records."""
import os
import re

__version__ = os.environ.get("STANDIN_AIRFLOW_VERSION", "2.9.3")
OLD = __version__.startswith("2.2.")
RECORDED = {}
TRIGGER_RULES = {"all_success", "all_failed", "all_done", "all_skipped", "one_success", "one_failed", "one_done",
                 "none_failed", "none_failed_min_one_success", "none_skipped", "always"}
TASK_ID = re.compile(r"^[\w.-]{1,250}$")


def _dag_init(self, dag_id, kwargs):
    if dag_id in RECORDED:
        raise ValueError("DAG %s is defined twice" % dag_id)
    self.dag_id, self.kwargs, self.tasks = dag_id, kwargs, {}
    RECORDED[dag_id] = self


class DAG:
    if OLD:
        def __init__(self, dag_id, description=None, schedule_interval=None, start_date=None, default_args=None,
                     catchup=True, max_active_runs=16, tags=None):
            _dag_init(self, dag_id, dict(description=description, schedule_interval=schedule_interval,
                      start_date=start_date, default_args=default_args, catchup=catchup,
                      max_active_runs=max_active_runs, tags=tags))
    else:
        def __init__(self, dag_id, description=None, schedule=None, start_date=None, default_args=None,
                     catchup=True, max_active_runs=16, tags=None):
            _dag_init(self, dag_id, dict(description=description, schedule=schedule, start_date=start_date,
                      default_args=default_args, catchup=catchup, max_active_runs=max_active_runs, tags=tags))


class BaseOperator:
    def __init__(self, task_id, dag, trigger_rule="all_success", retries=None, **kwargs):
        if retries is not None:
            kwargs["retries"] = retries
        if dag is None or not TASK_ID.match(task_id) or task_id in dag.tasks or trigger_rule not in TRIGGER_RULES:
            raise ValueError("bad task %r (trigger rule %r)" % (task_id, trigger_rule))
        self.task_id, self.dag, self.upstream = task_id, dag, set()
        self.kwargs = dict(kwargs, trigger_rule=trigger_rule)
        dag.tasks[task_id] = self

    def set_upstream(self, other):
        if other.dag is not self.dag:
            raise ValueError("%s and %s are in different DAGs" % (self.task_id, other.task_id))
        self.upstream.add(other.task_id)
`,
	"airflow/operators/__init__.py": "",
	"airflow/operators/bash.py": `from airflow import OLD, BaseOperator


class BashOperator(BaseOperator):
    if OLD:
        def __init__(self, task_id, bash_command, env=None, dag=None, trigger_rule="all_success", **more):
            super().__init__(task_id, dag, trigger_rule, bash_command=bash_command, env=env, **more)
    else:
        def __init__(self, task_id, bash_command, env=None, append_env=False, dag=None, trigger_rule="all_success",
                     **more):
            super().__init__(task_id, dag, trigger_rule, bash_command=bash_command, env=env, append_env=append_env,
                             **more)
`,
	"airflow/operators/trigger_dagrun.py": `from airflow import BaseOperator


class TriggerDagRunOperator(BaseOperator):
    def __init__(self, task_id, trigger_dag_id, wait_for_completion=False, poke_interval=60, allowed_states=None,
                 failed_states=None, dag=None, trigger_rule="all_success"):
        super().__init__(task_id, dag, trigger_rule, trigger_dag_id=trigger_dag_id,
                         wait_for_completion=wait_for_completion, poke_interval=poke_interval,
                         allowed_states=allowed_states, failed_states=failed_states)
`,
	"airflow/sensors/__init__.py": "",
	"airflow/sensors/external_task.py": `from airflow import BaseOperator


class ExternalTaskSensor(BaseOperator):
    def __init__(self, task_id, external_dag_id, external_task_id=None, allowed_states=None, failed_states=None,
                 mode="poke", poke_interval=60, dag=None, trigger_rule="all_success"):
        if mode not in ("poke", "reschedule"):
            raise ValueError("bad sensor mode %r" % mode)
        super().__init__(task_id, dag, trigger_rule, external_dag_id=external_dag_id,
                         external_task_id=external_task_id, allowed_states=allowed_states,
                         failed_states=failed_states, mode=mode, poke_interval=poke_interval)
`,
	// record.py imports the loader as Airflow would and prints what the
	// stand-in recorded, with the DAGs the loader's module holds.
	"record.py": `import datetime
import importlib.util
import json
import sys

import airflow

spec = importlib.util.spec_from_file_location("etl_craft_dags", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)


def plain(v):
    if isinstance(v, datetime.timedelta):
        return "timedelta:%d" % v.total_seconds()
    if isinstance(v, datetime.datetime):
        return v.isoformat()
    raise TypeError(repr(v))


out = {"module": sorted(d.dag_id for d in vars(module).values() if isinstance(d, airflow.DAG)), "dags": {}}
for dag_id, d in airflow.RECORDED.items():
    out["dags"][dag_id] = {"kwargs": d.kwargs, "tasks": {
        t.task_id: {"operator": type(t).__name__, "kwargs": t.kwargs, "upstream": sorted(t.upstream)}
        for t in d.tasks.values()}}
json.dump(out, sys.stdout, default=plain, sort_keys=True)
`,
}

// python returns Debian's python3, which must have PyYAML.
func python(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		if py, err = exec.LookPath("python3"); err != nil {
			t.Fatal("the loader test needs python3 with PyYAML (Debian's python3-yaml; scripts/test.sh installs it)")
		}
	}
	if out, err := exec.Command(py, "-c", "import yaml").CombinedOutput(); err != nil {
		t.Fatalf("%s has no PyYAML (install Debian's python3-yaml): %v\n%s", py, err, out)
	}
	return py
}

// loaderRun is one run of the loader by python3 against the stand-in.
type loaderRun struct {
	stdout, stderr string
	err            error
}

// runLoader writes the stand-in, the loader (as generate-yml
// --print-loader writes it) and the descriptors into a folder, and runs the
// loader there as Airflow would import it, with the environment given.
func runLoader(t *testing.T, descriptors map[string][]byte, env ...string) loaderRun {
	t.Helper()
	dir := t.TempDir()
	site, dags := filepath.Join(dir, "site"), filepath.Join(dir, "dags")
	files := map[string][]byte{filepath.Join(dags, dag.LoaderFile): dag.Loader()}
	for name, text := range standIn {
		files[filepath.Join(site, name)] = []byte(text)
	}
	for name, text := range descriptors {
		files[filepath.Join(dags, name)] = text
	}
	for path, text := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(python(t), filepath.Join(site, "record.py"), filepath.Join(dags, dag.LoaderFile))
	cmd.Env = append(os.Environ(), append([]string{"PYTHONPATH=" + site, "PYTHONDONTWRITEBYTECODE=1"}, env...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return loaderRun{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// goldenDescriptors reads every golden descriptor of testdata.
func goldenDescriptors(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.yml"))
	if err != nil || len(paths) < 5 {
		t.Fatalf("golden files %v: %v", paths, err)
	}
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(p)] = b
	}
	return out
}

// commandEnv is what the loader puts in every command's environment.
var commandEnv = map[string]any{"ETL_CRAFT_ACTOR": "airflow", "ETL_CRAFT_ACTOR_KIND": "ORCHESTRATOR", "ETL_CRAFT_DAG_RUN_ID": "{{ run_id }}"}

// expectedDAG is what the stand-in must record for a descriptor, derived
// from the descriptor's YAML alone: the DAG's arguments, and per step its
// operator, arguments and upstream steps. old is Airflow 2.2's arguments.
func expectedDAG(t *testing.T, text []byte, old bool) (string, map[string]any) {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(text, &doc); err != nil {
		t.Fatal(err)
	}
	d := doc["default_args"].(map[string]any)
	args := map[string]any{"owner": d["owner"], "retries": d["retries"], "depends_on_past": d["depends_on_past"],
		"email_on_failure": d["email_on_failure"], "retry_delay": "timedelta:" + strconv.Itoa(60*d["retry_delay_minutes"].(int))}
	if e, ok := d["email"]; ok {
		args["email"] = e
	}
	schedule := "schedule"
	if old {
		schedule = "schedule_interval"
	}
	kwargs := map[string]any{"description": doc["description"], schedule: doc["schedule"], "start_date": "2024-01-01T00:00:00+00:00",
		"catchup": doc["catchup"], "max_active_runs": doc["max_active_runs"], "tags": doc["tags"], "default_args": args}
	tasks := map[string]any{}
	steps, global := doc["pipelines"].(map[string]any)
	if !global {
		steps = doc["tasks"].(map[string]any)
	}
	for id, v := range steps {
		s := v.(map[string]any)
		task := map[string]any{"upstream": sortedTexts(s["depends_on"])}
		k := map[string]any{"trigger_rule": s["trigger_rule"]}
		switch sensor, isSensor := s["sensor"].(map[string]any); {
		case global:
			task["operator"] = "TriggerDagRunOperator"
			k["trigger_dag_id"], k["wait_for_completion"], k["poke_interval"] = s["trigger_dag_id"], true, 60
			k["allowed_states"], k["failed_states"] = []any{"success"}, []any{"failed"}
		case isSensor:
			task["operator"] = "ExternalTaskSensor"
			for _, key := range []string{"external_dag_id", "external_task_id", "allowed_states", "failed_states"} {
				k[key] = sensor[key]
			}
			k["mode"], k["poke_interval"] = "reschedule", 60
		case old:
			task["operator"] = "BashOperator"
			k["bash_command"] = "ETL_CRAFT_ACTOR=airflow ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR ETL_CRAFT_DAG_RUN_ID={{ run_id }} " + s["bash_command"].(string)
			k["env"] = nil
		default:
			task["operator"] = "BashOperator"
			k["bash_command"], k["env"], k["append_env"] = s["bash_command"], commandEnv, true
		}
		if id == dag.FinalizeStep {
			k["retries"] = 0
		}
		task["kwargs"] = k
		tasks[id] = task
	}
	return doc["dag_id"].(string), map[string]any{"kwargs": kwargs, "tasks": tasks}
}

func sortedTexts(v any) []any {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	slices.Sort(out)
	res := make([]any, len(out))
	for i, s := range out {
		res[i] = s
	}
	return res
}

// normal is v as JSON reads it back, so that Go and Python values compare.
func normal(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The loader, run by python3 against the stand-in airflow package, builds
// from each golden descriptor the DAG it describes: a BashOperator per
// command with the ORCHESTRATOR actor and the DAG run id in its
// environment, an ExternalTaskSensor per sensor, a TriggerDagRunOperator
// per pipeline of the global DAG, and every depends_on as an upstream; the
// loader's module holds every DAG. With Airflow 2.2's arguments the
// variables go before the command instead, and schedule is
// schedule_interval.
func TestLoaderBuildsTheGoldenDAGs(t *testing.T) {
	t.Parallel()
	descriptors := goldenDescriptors(t)
	for _, version := range []string{"2.9.3", "2.2.5"} {
		r := runLoader(t, descriptors, "STANDIN_AIRFLOW_VERSION="+version)
		if r.err != nil {
			t.Fatalf("Airflow %s stand-in: %v\n%s", version, r.err, r.stderr)
		}
		var got struct {
			Module []string
			DAGs   map[string]any `json:"dags"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("%v\n%s", err, r.stdout)
		}
		want := map[string]any{}
		var ids []string
		for _, text := range descriptors {
			id, d := expectedDAG(t, text, version == "2.2.5")
			want[id] = d
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if !reflect.DeepEqual(got.Module, ids) {
			t.Errorf("Airflow %s stand-in: the loader's module holds DAGs %v, want %v", version, got.Module, ids)
		}
		for id, w := range want {
			if g := got.DAGs[id]; !reflect.DeepEqual(g, normal(t, w)) {
				gj, _ := json.MarshalIndent(g, "", " ")
				wj, _ := json.MarshalIndent(normal(t, w), "", " ")
				t.Errorf("Airflow %s stand-in: DAG %s\ngot  %s\nwant %s", version, id, gj, wj)
			}
		}
		if len(got.DAGs) != len(want) {
			t.Errorf("Airflow %s stand-in: %d DAGs, want %d", version, len(got.DAGs), len(want))
		}
	}
	// Spot checks that do not go through expectedDAG.
	r := runLoader(t, map[string][]byte{"remote.yml": descriptors["remote.yml"]})
	if !strings.Contains(r.stdout, `"__wait_for_UP.audit__": {"kwargs": {"allowed_states": ["success", "failed", "upstream_failed", "skipped"], "external_dag_id": "UP", "external_task_id": "audit", "failed_states": [], "mode": "reschedule"`) ||
		!strings.Contains(r.stdout, `"env": {"ETL_CRAFT_ACTOR": "airflow", "ETL_CRAFT_ACTOR_KIND": "ORCHESTRATOR", "ETL_CRAFT_DAG_RUN_ID": "{{ run_id }}"}`) ||
		!strings.Contains(r.stdout, `--finalize-only --run-key orchestrator:{{ run_id }} --run-date {{ data_interval_end | ds }}", "env": {"ETL_CRAFT_ACTOR": "airflow", "ETL_CRAFT_ACTOR_KIND": "ORCHESTRATOR", "ETL_CRAFT_DAG_RUN_ID": "{{ run_id }}"}, "retries": 0`) {
		t.Errorf("remote.yml:\n%s", r.stdout)
	}
}

// A descriptor the loader cannot build from stops the loading with an
// error naming the file and what is wrong: another format version, a step
// depending on a step that does not exist, a missing key, two files of one
// DAG. ETL_CRAFT_AIRFLOW_ACTOR names the actor.
func TestLoaderRefusesBrokenDescriptors(t *testing.T) {
	t.Parallel()
	docs := goldenDescriptors(t)["docs.yml"]
	for _, c := range []struct {
		name  string
		files map[string][]byte
		want  string
	}{
		{"version", map[string][]byte{"a.yml": bytes.Replace(docs, []byte("etl_craft_yaml_version: 1"), []byte("etl_craft_yaml_version: 2"), 1)},
			"a.yml: not an etl-craft DAG descriptor of etl_craft_yaml_version 1"},
		{"unknown step", map[string][]byte{"a.yml": bytes.Replace(docs, []byte("depends_on: []"), []byte("depends_on: [nowhere]"), 1)},
			"a.yml: step generate_docs depends on nowhere, which is not a step of the DAG"},
		{"missing key", map[string][]byte{"a.yml": bytes.Replace(docs, []byte("    trigger_rule: all_success\n"), nil, 1)},
			"a.yml: the descriptor has no 'trigger_rule'"},
		{"twice", map[string][]byte{"a.yml": docs, "b.yaml": docs}, "a.yml and "},
	} {
		r := runLoader(t, c.files)
		if r.err == nil || !strings.Contains(r.stderr, "DescriptorError") || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: %v, stderr:\n%s", c.name, r.err, r.stderr)
		}
	}
	r := runLoader(t, map[string][]byte{"docs.yml": docs}, "ETL_CRAFT_AIRFLOW_ACTOR=ops-airflow")
	if r.err != nil || !strings.Contains(r.stdout, `"ETL_CRAFT_ACTOR": "ops-airflow", "ETL_CRAFT_ACTOR_KIND": "ORCHESTRATOR"`) {
		t.Errorf("%v %s\n%s", r.err, r.stdout, r.stderr)
	}
}
