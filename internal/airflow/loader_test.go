package airflow_test

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

// dagBagScript loads DAG folders with Airflow's own DagBag, as Airflow's DAG
// processor does, and prints what it built: per folder its import errors,
// and per DAG its arguments and per task its operator, arguments and
// upstream tasks, as JSON into the file its second argument names (Airflow
// logs to stdout). Its first argument is a JSON list of {"folder", "env"}:
// env is set before the folder is loaded.
const dagBagScript = `import datetime
import json
import os
import sys

try:  # Airflow 3
    from airflow.dag_processing.dagbag import DagBag
except ImportError:  # Airflow 2
    from airflow.models.dagbag import DagBag

TASK_FIELDS = ["bash_command", "env", "append_env", "external_dag_id", "external_task_id", "allowed_states",
               "failed_states", "mode", "poke_interval", "trigger_dag_id", "wait_for_completion", "logical_date"]


def plain(v):
    if isinstance(v, datetime.timedelta):
        return "timedelta:%d" % v.total_seconds()
    if isinstance(v, datetime.datetime):
        return v.isoformat()
    if isinstance(v, (set, frozenset)):
        return sorted(v)
    return str(v)


out = []
for job in json.loads(sys.argv[1]):
    os.environ.update(job["env"])
    bag = DagBag(dag_folder=job["folder"])
    dags = {}
    for dag_id, d in bag.dags.items():
        schedule = d.schedule_interval if hasattr(d, "schedule_interval") else d.schedule
        tasks = {}
        for t in d.tasks:
            fields = {f: getattr(t, f) for f in TASK_FIELDS if hasattr(t, f)}
            fields["trigger_rule"] = str(getattr(t.trigger_rule, "value", t.trigger_rule))
            fields["retries"] = t.retries
            tasks[t.task_id] = {"operator": type(t).__name__, "fields": fields, "upstream": sorted(t.upstream_task_ids)}
        dags[dag_id] = {"description": d.description, "schedule": schedule, "start_date": d.start_date,
                        "catchup": d.catchup, "max_active_runs": d.max_active_runs, "tags": sorted(d.tags),
                        "default_args": d.default_args, "tasks": tasks}
    out.append({"errors": {os.path.basename(k): v for k, v in bag.import_errors.items()}, "dags": dags})
with open(sys.argv[2], "w") as f:
    json.dump(out, f, default=plain, sort_keys=True)
`

// loadJob is one folder of descriptors for dagBagScript, with the
// environment it is loaded with.
type loadJob struct {
	Folder string            `json:"folder"`
	Env    map[string]string `json:"env"`
}

// loaded is what Airflow's DagBag built from one folder.
type loaded struct {
	Errors map[string]string `json:"errors"`
	DAGs   map[string]any    `json:"dags"`
}

// loadFolders writes each set of descriptors with the loader into a folder
// of its own and loads them all with the Airflow's DagBag in one process.
func loadFolders(t *testing.T, in install, sets []map[string][]byte, envs []map[string]string) []loaded {
	t.Helper()
	home := t.TempDir()
	var jobs []loadJob
	for i, files := range sets {
		folder := filepath.Join(home, "dags"+strconv.Itoa(i))
		files = mapWith(files, dag.LoaderFile, dag.Loader())
		for name, text := range files {
			if err := os.MkdirAll(folder, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(folder, name), text, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		jobs = append(jobs, loadJob{Folder: folder, Env: envs[i]})
	}
	arg, _ := json.Marshal(jobs)
	result := filepath.Join(home, "loaded.json")
	cmd := exec.Command(filepath.Join(in.dir, "bin", "python"), "-c", dagBagScript, string(arg), result)
	cmd.Env = append(os.Environ(), "AIRFLOW_HOME="+home, "AIRFLOW__CORE__LOAD_EXAMPLES=False", "AIRFLOW__CORE__UNIT_TEST_MODE=True")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("Airflow %s's DagBag: %v\n%s", in.version, err, out)
	}
	b, err := os.ReadFile(result)
	if err != nil {
		t.Fatal(err)
	}
	var out []loaded
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return out
}

// mapWith returns a copy of m with name set to text.
func mapWith(m map[string][]byte, name string, text []byte) map[string][]byte {
	out := map[string][]byte{name: text}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// goldenDescriptors reads every golden descriptor of internal/dag.
func goldenDescriptors(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "dag", "testdata", "*.yml"))
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
func commandEnv(actor string) map[string]any {
	return map[string]any{"ETL_CRAFT_ACTOR": actor, "ETL_CRAFT_ACTOR_KIND": "ORCHESTRATOR", "ETL_CRAFT_DAG_RUN_ID": "{{ run_id }}"}
}

// expectedDAG is the DAG Airflow must build from a descriptor, derived from
// the descriptor's YAML alone: the DAG's arguments, and per step its
// operator, arguments and upstream steps.
func expectedDAG(t *testing.T, text []byte) (string, map[string]any) {
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
	tags := sortedTexts(doc["tags"])
	out := map[string]any{"description": doc["description"], "schedule": doc["schedule"], "start_date": "2024-01-01T00:00:00+00:00",
		"catchup": doc["catchup"], "max_active_runs": doc["max_active_runs"], "tags": tags, "default_args": args}
	tasks := map[string]any{}
	steps, global := doc["pipelines"].(map[string]any)
	if !global {
		steps = doc["tasks"].(map[string]any)
	}
	for id, v := range steps {
		s := v.(map[string]any)
		task := map[string]any{"upstream": sortedTexts(s["depends_on"])}
		f := map[string]any{"trigger_rule": s["trigger_rule"], "retries": d["retries"]}
		switch sensor, isSensor := s["sensor"].(map[string]any); {
		case global:
			task["operator"] = "TriggerDagRunOperator"
			f["trigger_dag_id"], f["wait_for_completion"], f["poke_interval"] = s["trigger_dag_id"], true, 60
			f["allowed_states"], f["failed_states"], f["logical_date"] = []any{"success"}, []any{"failed"}, "{{ logical_date }}"
		case isSensor:
			task["operator"] = "ExternalTaskSensor"
			for _, key := range []string{"external_dag_id", "external_task_id", "allowed_states", "failed_states"} {
				f[key] = sensor[key]
			}
			f["mode"], f["poke_interval"] = "reschedule", 60
		default:
			task["operator"] = "BashOperator"
			f["bash_command"], f["env"], f["append_env"] = s["bash_command"], commandEnv("airflow"), true
		}
		if id == dag.FinalizeStep {
			f["retries"] = 0
		}
		task["fields"] = f
		tasks[id] = task
	}
	out["tasks"] = tasks
	return doc["dag_id"].(string), out
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

// Airflow's own DagBag, loading the loader beside every golden descriptor,
// builds the DAG each describes, with no import error: a BashOperator per
// command with the ORCHESTRATOR actor and the DAG run id in its
// environment, an ExternalTaskSensor per sensor, a TriggerDagRunOperator
// per pipeline of the global DAG (giving the triggered run its own logical
// date), and every depends_on as an upstream task. A descriptor the loader
// cannot build from is an import error naming the file and what is wrong:
// another format version, a step depending on a step that does not exist,
// a missing key, two files of one DAG. ETL_CRAFT_AIRFLOW_ACTOR names the
// actor.
func TestLoaderInAirflow(t *testing.T) {
	t.Parallel()
	eachAirflow(t, func(t *testing.T, in install) {
		golden := goldenDescriptors(t)
		docs := golden["docs.yml"]
		broken := []struct {
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
		}
		sets := []map[string][]byte{golden, {"docs.yml": docs}}
		envs := []map[string]string{{}, {"ETL_CRAFT_AIRFLOW_ACTOR": "ops-airflow"}}
		for _, b := range broken {
			sets, envs = append(sets, b.files), append(envs, map[string]string{"ETL_CRAFT_AIRFLOW_ACTOR": ""})
		}
		got := loadFolders(t, in, sets, envs)

		if len(got[0].Errors) > 0 {
			t.Fatalf("import errors: %v", got[0].Errors)
		}
		want := map[string]any{}
		for _, text := range golden {
			id, d := expectedDAG(t, text)
			want[id] = d
		}
		for id, w := range want {
			if g := got[0].DAGs[id]; !reflect.DeepEqual(g, normal(t, w)) {
				gj, _ := json.MarshalIndent(g, "", " ")
				wj, _ := json.MarshalIndent(normal(t, w), "", " ")
				t.Errorf("DAG %s\ngot  %s\nwant %s", id, gj, wj)
			}
		}
		if len(got[0].DAGs) != len(want) {
			t.Errorf("%d DAGs, want %d", len(got[0].DAGs), len(want))
		}

		docsDAG, _ := json.Marshal(got[1].DAGs[dag.DocsDAGID])
		if wantEnv, _ := json.Marshal(commandEnv("ops-airflow")); !bytes.Contains(docsDAG, wantEnv) {
			t.Errorf("with ETL_CRAFT_AIRFLOW_ACTOR=ops-airflow: %s", docsDAG)
		}
		for i, b := range broken {
			errs := got[i+2].Errors
			msg := strings.Join(mapValues(errs), "\n")
			if len(got[i+2].DAGs) != 0 || !strings.Contains(msg, "DescriptorError") || !strings.Contains(msg, b.want) {
				t.Errorf("%s: DAGs %v, import errors:\n%s", b.name, got[i+2].DAGs, msg)
			}
		}
	})
}

// mapValues returns the map's values, sorted.
func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}
