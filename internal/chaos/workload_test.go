package chaos_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// kind is what a task of the workload does to its target.
type kind int

const (
	appendRows kind = iota // SQL APPEND_TABLE
	scd1                   // SQL SCD1_MERGE
	scd2                   // SQL SCD2_MERGE
	scriptLoad             // PYTHON, task.load append
)

// kinds lists every kind, in the order the pipelines take them.
var kinds = []kind{appendRows, scd1, scd2, scriptLoad}

// rowsPerTask is how many rows each task writes in each run: keys k 1…5.
const rowsPerTask = 5

// setupPipeline creates the workload's targets before the chaos starts.
const setupPipeline = "SETUP"

func (k kind) String() string { return [...]string{"append", "scd1", "scd2", "load"}[k] }

// target is the table every task of the kind writes, each pipeline its own
// rows (column pipe).
func (k kind) target() string { return e2e.Schema + ".chaos_" + k.String() }

// action is the SQL action of the kind ("" for the script load).
func (k kind) action() string {
	return [...]string{"APPEND_TABLE", "SCD1_MERGE", "SCD2_MERGE", ""}[k]
}

// selectRows is the SELECT of a SQL task of the pipeline: its rows k
// 1…rowsPerTask, tagged with runID (an expression).
func selectRows(pipe, runID string) string {
	values := make([]string, rowsPerTask)
	for i := range values {
		values[i] = fmt.Sprintf("(%d)", i+1)
	}
	return fmt.Sprintf("SELECT %s AS pipe, CAST(%s AS BIGINT) AS run_id, k FROM (VALUES %s) AS v(k)",
		e2e.Quote(pipe), runID, strings.Join(values, ", "))
}

// policy is the retry parameters every task of a workload has.
type policy []string

var (
	// retryEachSecond retries a second after a failure, however often the
	// server is killed under it (a growing delay would soon outlast the
	// servers between kills).
	retryEachSecond = policy{"RETRIES", "5", "RETRY_DELAY_SECONDS", "1", "RETRY_BACKOFF", "1"}
	// retryOutlasting waits 1, 2, 4 … 32 seconds (63 in all) between
	// attempts, which outlasts a database stopped for seconds on a loaded
	// machine: five retries a second apart did not.
	retryOutlasting = policy{"RETRIES", "6", "RETRY_DELAY_SECONDS", "1", "RETRY_BACKOFF", "2"}
)

// task is the pipeline's task of kind k, named after it, retried by retry.
// A script sleeps for sleep before it loads.
func (k kind) task(pipe string, sleep time.Duration, retry policy, deps ...string) e2e.Task {
	if k == scriptLoad {
		t := e2e.Task{Code: k.String(), Handler: "PYTHON", Deps: deps, Params: map[string]string{
			"SCRIPT_NAME": "chaos_load.py",
			"INPUT_PARAMS": fmt.Sprintf(`{"table": %q, "pipe": %q, "rows": %d, "sleep": %g}`,
				k.target(), pipe, rowsPerTask, sleep.Seconds()),
		}}
		return t.With(retry...)
	}
	t := e2e.SQL(k.String(), k.action(), k.target(), selectRows(pipe, "$$pipeline_run_id"), deps...).
		With("PIPELINE_RUN_ID_SUBSTITUTION", "true")
	if k != appendRows {
		t = t.With("MERGE_KEY", "pipe|k")
	}
	return t.With(retry...)
}

// loadScript loads the run's rows of its pipeline with task.load, after
// sleeping as long as it is told.
const loadScript = `import time

from etl_craft.scripting import ScriptResult


def run(task):
    p = task.input_params
    time.sleep(p["sleep"])
    rows = [{"pipe": p["pipe"], "run_id": task.pipeline_run_id, "k": k} for k in range(1, p["rows"] + 1)]
    return ScriptResult(task.load(p["table"], rows))
`

// workload is a project's pipelines C01…Cnn: pipeline i runs a task of
// kinds[i%4], then one of kinds[(i+1)%4] once the first succeeded, so each
// target gets rows from half the pipelines, and each pipeline writes two
// kinds of target.
type workload struct {
	p         *e2e.Project
	pipelines []string
	writes    map[string][]kind
}

// newWorkload registers n pipelines, and the SETUP pipeline, which it runs
// once in the foreground to create every target (and the script load
// ledger) before anything else writes them. Their tasks are retried by
// retry, and their scripts sleep for sleep before they load.
func newWorkload(p *e2e.Project, n int, sleep time.Duration, retry policy) *workload {
	w := &workload{p: p, writes: map[string][]kind{}}
	p.Write("ingestion_scripts/chaos_load.py", loadScript)
	var mig strings.Builder
	setup := []e2e.Task{scriptLoad.task(setupPipeline, 0, retry)}
	for _, k := range kinds[:3] {
		setup = append(setup, e2e.SQL("setup_"+k.String(), "SETUP_TABLE", k.target(), selectRows(setupPipeline, "0")).
			With("SETUP_FOR", k.action()))
	}
	mig.WriteString(e2e.Pipeline(setupPipeline, setup...))
	for i := range n {
		code := fmt.Sprintf("C%02d", i+1)
		first, second := kinds[i%len(kinds)], kinds[(i+1)%len(kinds)]
		mig.WriteString(e2e.Pipeline(code, first.task(code, sleep, retry), second.task(code, sleep, retry, first.String()+":SUCCESS")))
		w.pipelines = append(w.pipelines, code)
		w.writes[code] = []kind{first, second}
	}
	p.Register("0001_chaos", mig.String())
	p.OK("run", "--pipeline_code", setupPipeline)
	return w
}

// runsOf returns the runs of each pipeline of the workload, oldest first,
// with their statuses.
func (w *workload) runsOf(db *engine.DB) map[string][]run {
	out := map[string][]run{}
	for _, row := range e2e.QueryRows(w.p.T, db, `SELECT p.PIPELINE_CODE, r.PIPELINE_RUN_ID, r.STATUS FROM AUD_PIPELINES_RUN_LOG r
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID WHERE p.PIPELINE_CODE <> $1 ORDER BY r.PIPELINE_RUN_ID`, setupPipeline) {
		var code string
		var r run
		fmt.Sscan(row, &code, &r.id, &r.status)
		out[code] = append(out[code], r)
	}
	return out
}

// run is one run of a pipeline.
type run struct {
	id     int64
	status records.RunStatus
}

// checkTargets checks that every target holds each run's rows exactly
// once: an append or a load target rowsPerTask rows of each run of each of
// its pipelines (and the run's id in PIPELINE_RUN_ID, where etl-craft adds
// it); an SCD1 target each key once, with the pipeline's last run; an SCD2
// target one version of each key for each run, the last run's active.
func (w *workload) checkTargets(t testing.TB, runs map[string][]run) {
	t.Helper()
	want := map[kind][]string{}
	for _, code := range w.pipelines {
		ids := runs[code]
		last := ids[len(ids)-1].id
		for _, k := range w.writes[code] {
			switch k {
			case appendRows, scriptLoad:
				for _, r := range ids {
					want[k] = append(want[k], fmt.Sprintf("%s %d %d %d", code, r.id, rowsPerTask, rowsPerTask))
				}
			case scd1:
				want[k] = append(want[k], fmt.Sprintf("%s %d %d %d", code, last, rowsPerTask, rowsPerTask))
			case scd2:
				for _, r := range ids {
					active := 0
					if r.id == last {
						active = rowsPerTask
					}
					want[k] = append(want[k], fmt.Sprintf("%s %d %d %d", code, r.id, rowsPerTask, active))
				}
			}
		}
	}
	for _, k := range kinds {
		fourth := "count(DISTINCT k)"
		if k == scd2 {
			fourth = "sum(CASE WHEN active_flag = 'Y' THEN 1 ELSE 0 END)"
		}
		got := w.p.WarehouseRows(fmt.Sprintf(`SELECT pipe, run_id, count(*), %s FROM %s WHERE pipe <> '%s'
			GROUP BY pipe, run_id ORDER BY pipe, run_id`, fourth, k.target(), setupPipeline))
		slices.Sort(got)
		slices.Sort(want[k])
		if !slices.Equal(got, want[k]) {
			t.Errorf("%s holds (pipe, run, rows, keys or active):\n%s\nwant:\n%s", k.target(), strings.Join(got, "\n"), strings.Join(want[k], "\n"))
		}
		if k == scriptLoad {
			continue
		}
		// A closed SCD2 version carries the run that closed it.
		cond := "pipeline_run_id <> run_id AND pipe <> '" + setupPipeline + "'"
		if k == scd2 {
			cond += " AND active_flag = 'Y'"
		}
		if n := w.p.WarehouseRows(fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", k.target(), cond)); n[0] != "0" {
			t.Errorf("%s: %s row(s) whose PIPELINE_RUN_ID is not the run that wrote them", k.target(), n[0])
		}
	}
}
