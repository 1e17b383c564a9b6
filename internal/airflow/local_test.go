package airflow_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/dag"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/quickstart"
)

// The demo project in remote mode under Airflow's scheduler with the
// LocalExecutor, on a PostgreSQL Engine DB and warehouse: the loader builds
// every DAG with no import error; the global DAG, triggered, runs
// QUICKSTART_SALES and then SALES_REPORT (whose sensor finds
// QUICKSTART_SALES.daily_revenue_eur done), the docs DAG writes the
// catalog, BROKEN fails. Afterwards every DAG run and task instance in
// Airflow's database agrees with the Engine DB (runs, task runs, attempts,
// the airflow ORCHESTRATOR actor with the DAG run id), the flaky task shows
// two tries in Airflow and two attempts in the Engine DB, the warehouse
// holds what a local-mode run of the same pipelines leaves, and the failing
// step's task log shows etl-craft's error and exit code. Then `airflow dags
// test` runs QUICKSTART_SALES once more in one process.
func TestLocalExecutor(t *testing.T) {
	t.Parallel()
	eachAirflow(t, func(t *testing.T, in install) {
		local := demoProject(t, "local")
		for _, code := range demoPipelines {
			local.Run(nil, "run", "--pipeline_code", code)
		}

		p := demoProject(t, "remote")
		d := deploy(t, in, "LocalExecutor")
		ids := writeDAGs(t, p, d.dags, demoPipelines...)
		d.up(stepEnv(p, filepath.Dir(e2e.Binary(t)), p.Dir))
		d.waitDAGs(ids...)
		d.trigger(dag.GlobalDAGID, dag.DocsDAGID, brokenPipeline)
		runs := d.waitRunsEnded(5)
		states := map[string]string{}
		for _, r := range runs {
			states[r.dag] = r.state
		}
		want := map[string]string{dag.GlobalDAGID: "success", dag.DocsDAGID: "success", quickstart.Pipeline: "success",
			reportPipeline: "success", brokenPipeline: "failed"}
		if !reflect.DeepEqual(states, want) {
			t.Fatalf("the DAG runs ended %v, want %v\n%s", states, want, d.logs())
		}

		for _, r := range runs {
			if r.dag == dag.GlobalDAGID || r.dag == dag.DocsDAGID {
				continue
			}
			agree(t, d, p, r)
			if r.dag == reportPipeline {
				if tis := d.taskInstances(r); tis["flaky"].tries != 2 || tis["flaky"].state != "success" {
					t.Errorf("flaky in Airflow: %+v", tis["flaky"])
				}
				if _, tasks := engineRun(t, p, r.dag, r.id); tasks["flaky"] != "SUCCESS 2 FAILED/airflow/ORCHESTRATOR SUCCESS/airflow/ORCHESTRATOR" {
					t.Errorf("flaky in the Engine DB: %s", tasks["flaky"])
				}
			}
			if r.dag == brokenPipeline {
				// The failed step's log says what etl-craft said, and how it exited.
				for try := 1; try <= 2; try++ {
					log := taskLog(t, filepath.Join(d.home, "logs"), r, "bad", try)
					if !strings.Contains(log, `relation "main.no_such_table" does not exist`) || !strings.Contains(log, "non-zero exit code 1") {
						t.Errorf("the log of bad, try %d:\n%s", try, log)
					}
				}
			}
		}
		for _, code := range demoPipelines {
			if got, want := history(t, p, code), history(t, local, code); !reflect.DeepEqual(got, want) {
				t.Errorf("%s under Airflow:\n%q\nin local mode:\n%q", code, got, want)
			}
		}
		if got, want := warehouse(t, p), warehouse(t, local); !reflect.DeepEqual(got, want) {
			t.Errorf("the warehouse under Airflow:\n%v\nafter a local run:\n%v", got, want)
		}
		if _, err := os.Stat(filepath.Join(p.Dir, "catalog", "index.html")); err != nil {
			t.Errorf("the docs DAG wrote no catalog: %v", err)
		}

		// airflow dags test: a DAG run in one process, with the scheduler
		// stopped so that it runs the steps alone.
		d.stopAll()
		env := stepEnv(p, filepath.Dir(e2e.Binary(t)), p.Dir)
		if out, err := d.try(env, "dags", "test", quickstart.Pipeline, "2026-11-06"); err != nil {
			t.Fatalf("airflow dags test: %v\n%s", err, out)
		}
		tested := d.runOn(quickstart.Pipeline, "2026-11-06")
		if tested.state != "success" {
			t.Fatalf("the DAG run of airflow dags test: %+v", tested)
		}
		agree(t, d, p, tested)

		refusals(t, d, local)
	})
}

// refusals runs DAGs of the local-mode project, where etl-craft judges the
// gates itself, with `airflow dags test`: SALES_REPORT, whose pipeline gate
// finds QUICKSTART_SALES's last run consumed by the local run, and BROKEN,
// paused. Each step's log says why nothing ran, and the DAG run ends as
// the Engine DB's run: SALES_REPORT's run SKIPPED (a MANUAL run, as every
// local-mode run is, started by the airflow ORCHESTRATOR actor) and the DAG run a
// success (no step failed), BROKEN with no run and the DAG run a success
// (nothing was started).
func refusals(t *testing.T, d *deployment, local *e2e.Project) {
	t.Helper()
	folder := filepath.Join(d.home, "local-dags")
	writeDAGs(t, local, folder, demoPipelines...)
	local.OK("pause", "--pipeline_code", brokenPipeline, "--reason", "warehouse maintenance")
	env := append(stepEnv(local, filepath.Dir(e2e.Binary(t)), local.Dir), "AIRFLOW__CORE__DAGS_FOLDER="+folder)
	for _, c := range []struct {
		pipeline, date string
		run            string   // the Engine DB's run, "" for none
		logs           []string // in the output of airflow dags test
	}{
		{reportPipeline, "2026-11-07", "SKIPPED MANUAL airflow ORCHESTRATOR", []string{
			"SALES_REPORT: pipeline_run_id=", " SKIPPED — upstream pipeline QUICKSTART_SALES (SUCCESS) ",
			"revenue_report: SKIPPED — pipeline_run_id=", " ended SKIPPED before this task ran, so it runs nothing",
			" SKIPPED — it had already ended: nothing to finalize"}},
		{brokenPipeline, "2026-11-08", "", []string{
			"BROKEN: PAUSED — paused by ", ": warehouse maintenance; nothing was started",
			"bad: PAUSED — paused by "}},
	} {
		out, err := d.try(env, "dags", "test", c.pipeline, c.date)
		if err != nil {
			t.Fatalf("airflow dags test %s: %v\n%s", c.pipeline, err, out)
		}
		run := d.runOn(c.pipeline, c.date)
		got := ""
		if n := e2e.Count(t, local.DB(), "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE RUN_KEY = $1", "orchestrator:"+run.id); n > 0 {
			got, _ = engineRun(t, local, c.pipeline, run.id)
		}
		if run.state != "success" || got != c.run {
			t.Errorf("%s: the DAG run %+v, the Engine DB's run %q, want success and %q\n%s", c.pipeline, run, got, c.run, out)
		}
		for _, want := range c.logs {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the output of airflow dags test lacks %q:\n%s", c.pipeline, want, out)
			}
		}
	}
}
