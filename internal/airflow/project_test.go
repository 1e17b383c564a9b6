package airflow_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/etl-craft/etl-craft/internal/dag"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/quickstart"
)

// The pipelines of the demo project, beside the quickstart's
// QUICKSTART_SALES.
const (
	// reportPipeline depends on QUICKSTART_SALES, and its revenue_report
	// on QUICKSTART_SALES.daily_revenue_eur (a sensor); its flaky task
	// fails on its first attempt.
	reportPipeline = "SALES_REPORT"
	// brokenPipeline has a task that always fails, bad, and after_bad,
	// which needs it to succeed.
	brokenPipeline = "BROKEN"
)

// demoMigration registers SALES_REPORT and BROKEN.
var demoMigration = e2e.Pipeline(reportPipeline,
	e2e.CreateTable("revenue_report", "main.revenue_report", "SELECT order_date, revenue_eur FROM main.daily_revenue_eur"),
	e2e.Task{Code: "flaky", Handler: "PYTHON", Params: map[string]string{"SCRIPT_NAME": "flaky.py", "RETRY_DELAY_SECONDS": "0"}},
	e2e.CreateTable("summary", "main.report_summary", "SELECT count(*) AS days, sum(revenue_eur) AS revenue_eur FROM main.revenue_report",
		"revenue_report:SUCCESS", "flaky:SUCCESS"),
) + `
INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)
SELECT d.PIPELINE_ID, u.PIPELINE_ID, 'SUCCESS' FROM CFG_PIPELINES d, CFG_PIPELINES u
WHERE d.PIPELINE_CODE = 'SALES_REPORT' AND u.PIPELINE_CODE = 'QUICKSTART_SALES' AND d.ACTIVE_FLAG = 'Y' AND u.ACTIVE_FLAG = 'Y';
INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)
SELECT d.PIPELINE_ID, dt.TASK_ID, u.PIPELINE_ID, ut.TASK_ID, 'SUCCESS'
FROM CFG_PIPELINES d JOIN CFG_TASKS dt ON dt.PIPELINE_ID = d.PIPELINE_ID, CFG_PIPELINES u JOIN CFG_TASKS ut ON ut.PIPELINE_ID = u.PIPELINE_ID
WHERE d.PIPELINE_CODE = 'SALES_REPORT' AND dt.TASK_CODE = 'revenue_report' AND u.PIPELINE_CODE = 'QUICKSTART_SALES'
  AND ut.TASK_CODE = 'daily_revenue_eur' AND d.ACTIVE_FLAG = 'Y' AND u.ACTIVE_FLAG = 'Y' AND dt.ACTIVE_FLAG = 'Y' AND ut.ACTIVE_FLAG = 'Y';
` + e2e.Pipeline(brokenPipeline,
	e2e.CreateTable("bad", "main.broken", "SELECT * FROM main.no_such_table").With("RETRY_DELAY_SECONDS", "0"),
	e2e.CreateTable("after_bad", "main.after_bad", "SELECT 1 AS x", "bad:SUCCESS"),
)

// flakyScript fails the first time it runs in a project folder, and
// succeeds after.
const flakyScript = `"""Fails on its first attempt in a project folder, then succeeds."""
import os

from etl_craft.scripting import ScriptResult


def run(task):
    marker = os.path.join(task.config["project_dir"], "flaky.tried")
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("flaky fails on its first attempt")
    return ScriptResult(0)
`

// demoPipelines are the demo's pipelines, in the order a local run runs
// them.
var demoPipelines = []string{quickstart.Pipeline, reportPipeline, brokenPipeline}

// demoProject writes the demo project on a PostgreSQL Engine DB and
// warehouse of its own: the quickstart's pipeline, SALES_REPORT and
// BROKEN, in the mode given, with one retry right away, the global DAG,
// no schedules (Airflow runs what it is told to), and a docs DAG; and
// sets it up.
func demoProject(t *testing.T, mode string) *e2e.Project {
	t.Helper()
	p := e2e.New(t, e2e.PostgresPostgres, "\nDocs_site:\n  Schedule: '0 7 * * *'\n")
	p.Orchestration("  Global_dag: true\n  Allow_schedule: false\n  Retries: 1\n  Retry_delay_minutes: 0\n")
	p.Write("craft-connector.yml", strings.Replace(p.Config(), "  Mode: local\n", "  Mode: "+mode+"\n", 1))
	if _, err := quickstart.Write(p.Dir); err != nil {
		t.Fatal(err)
	}
	p.Write("ingestion_scripts/flaky.py", flakyScript)
	p.Write("migrations/0004_demo.sql", demoMigration)
	p.OK("setup")
	return p
}

// writeDAGs writes the descriptor of each pipeline, the global DAG, the
// docs DAG and the loader into the DAGs folder, as a deployment does, and
// returns the DAG ids.
func writeDAGs(t *testing.T, p *e2e.Project, folder string, pipelines ...string) []string {
	t.Helper()
	ids := slices.Clone(pipelines)
	for _, code := range pipelines {
		p.OK("generate-yml", "--pipeline_code", code, "--output", filepath.Join(folder, code+".yml"))
	}
	if strings.Contains(p.Config(), "Global_dag: true") {
		p.OK("generate-yml", "--global", "--output", filepath.Join(folder, dag.GlobalDAGID+".yml"))
		ids = append(ids, dag.GlobalDAGID)
	}
	if strings.Contains(p.Config(), "Docs_site:") {
		p.OK("generate-yml", "--docs", "--output", filepath.Join(folder, dag.DocsDAGID+".yml"))
		ids = append(ids, dag.DocsDAGID)
	}
	p.OK("generate-yml", "--print-loader", "--output", filepath.Join(folder, dag.LoaderFile))
	return ids
}

// stepEnv is what Airflow's processes need for the steps' etl-craft
// commands: the binary of binDir first on PATH, the project's
// craft-connector.yml and secrets, the DAGs' start date, and sensors that
// look every two seconds.
func stepEnv(p *e2e.Project, binDir, projectDir string) []string {
	return append([]string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"ETL_CRAFT_CONFIG=" + filepath.Join(projectDir, "craft-connector.yml"),
		"ETL_CRAFT_START_DATE=2026-11-01",
		"ETL_CRAFT_POKE_SECONDS=2",
	}, p.Env...)
}

// logicalDate is the logical date of the DAG runs the tests trigger.
const logicalDate = "2026-11-05T06:00:00+00:00"

// trigger triggers a DAG run of each DAG with logicalDate, with `airflow
// dags trigger` commands running at once (each takes seconds to start).
func (d *deployment) trigger(dagIDs ...string) {
	d.t.Helper()
	flag := "--exec-date"
	if d.in.major() >= 3 {
		flag = "--logical-date"
	}
	outs, errs := make([]string, len(dagIDs)), make([]error, len(dagIDs))
	var wg sync.WaitGroup
	for i, id := range dagIDs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = d.try(nil, "dags", "trigger", id, flag, logicalDate)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			d.t.Fatalf("airflow dags trigger %s: %v\n%s", dagIDs[i], err, outs[i])
		}
	}
}

// engineRun is what the Engine DB holds of the pipeline's run of a DAG run
// (by its run key; the DAG runs of one logical date share their run id):
// the run's status and who started it, and per task its status and attempt
// count, with its attempts' statuses and requesters.
func engineRun(t *testing.T, p *e2e.Project, pipeline, dagRunID string) (run string, tasks map[string]string) {
	t.Helper()
	db := p.DB()
	run = e2e.Scalar(t, db, `SELECT r.STATUS || ' ' || r.TRIGGER_KIND || ' ' || r.STARTED_BY || ' ' || r.STARTED_BY_KIND
		FROM AUD_PIPELINES_RUN_LOG r JOIN CFG_PIPELINES pl ON pl.PIPELINE_ID = r.PIPELINE_ID
		WHERE r.RUN_KEY = $1 AND pl.PIPELINE_CODE = $2`, "orchestrator:"+dagRunID, pipeline)
	tasks = map[string]string{}
	for _, row := range e2e.QueryRows(t, db, `SELECT c.TASK_CODE, r.STATUS, r.ATTEMPT_COUNT,
			COALESCE((SELECT string_agg(a.STATUS || '/' || a.REQUESTED_BY || '/' || a.REQUESTED_BY_KIND, ' ' ORDER BY a.ATTEMPT_NUMBER)
				FROM AUD_TASK_ATTEMPTS a WHERE a.TASK_RUN_ID = r.TASK_RUN_ID), '')
		FROM AUD_TASK_RUN_LOG r JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID JOIN AUD_PIPELINES_RUN_LOG p ON p.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID
		JOIN CFG_PIPELINES pl ON pl.PIPELINE_ID = p.PIPELINE_ID
		WHERE p.RUN_KEY = $1 AND pl.PIPELINE_CODE = $2`, "orchestrator:"+dagRunID, pipeline) {
		code, rest, _ := strings.Cut(row, " ")
		tasks[code] = rest
	}
	return run, tasks
}

// agree checks that the Engine DB's run of each ended DAG run of a
// pipeline agrees with Airflow's database: the run SUCCESS or FAILED as
// the DAG run succeeded or failed, an ORCHESTRATOR run the airflow actor
// started; each task step that ran as many attempts as Airflow's tries,
// every one requested by the airflow actor, the last one's status the
// step's, the others FAILED (or LOST, when their worker died); a step
// Airflow never ran (upstream_failed) SKIPPED with no attempt; and one run
// action, by the airflow actor, recording the DAG run id, per try of each
// command step.
func agree(t *testing.T, d *deployment, p *e2e.Project, run dagRun) {
	t.Helper()
	status := map[string]string{"success": "SUCCESS", "failed": "FAILED"}
	got, tasks := engineRun(t, p, run.dag, run.id)
	if want := status[run.state] + " ORCHESTRATOR airflow ORCHESTRATOR"; got != want {
		t.Errorf("DAG run %s %s: the Engine DB's run is %q, want %q", run.dag, run.id, got, want)
	}
	commands, tries := 0, map[string]int{}
	for id, ti := range d.taskInstances(run) {
		if strings.HasPrefix(id, "__wait_for_") {
			continue
		}
		commands += ti.tries
		tries[id] = ti.tries
		if id == dag.InitStep || id == dag.FinalizeStep {
			continue
		}
		var want string
		switch ti.state {
		case "upstream_failed":
			want = "SKIPPED 0 "
		case "success", "failed":
			attempts := make([]string, ti.tries)
			for i := range attempts {
				attempts[i] = "FAILED/airflow/ORCHESTRATOR"
			}
			if ti.state == "success" {
				attempts[len(attempts)-1] = "SUCCESS/airflow/ORCHESTRATOR"
			}
			want = fmt.Sprintf("%s %d %s", status[ti.state], ti.tries, strings.Join(attempts, " "))
		default:
			t.Errorf("DAG run %s %s: step %s is %s", run.dag, run.id, id, ti.state)
			continue
		}
		// A try whose worker died is fenced: its attempt is LOST.
		if got := strings.ReplaceAll(tasks[id], "LOST/", "FAILED/"); got != want {
			t.Errorf("DAG run %s %s: step %s is %s after %d tries; the Engine DB's task run is %q, want %q",
				run.dag, run.id, id, ti.state, ti.tries, tasks[id], want)
		}
	}
	actions := e2e.QueryRows(t, p.DB(), `SELECT ACTOR || ' ' || ACTOR_KIND FROM AUD_ACTIONS WHERE COMMAND = 'run'
		AND ARGUMENTS->>'dag_run_id' = $1 AND ARGUMENTS->>'pipeline_code' = $2`, run.id, run.dag)
	if len(actions) != commands || slices.ContainsFunc(actions, func(a string) bool { return a != "airflow ORCHESTRATOR" }) {
		arguments := e2e.QueryRows(t, p.DB(), `SELECT CAST(ARGUMENTS AS VARCHAR) FROM AUD_ACTIONS WHERE COMMAND = 'run'
			AND ARGUMENTS->>'dag_run_id' = $1 AND ARGUMENTS->>'pipeline_code' = $2 ORDER BY ACTION_ID`, run.id, run.dag)
		t.Errorf("DAG run %s %s: %d tries of its commands %v, run actions recording its id: %v\n%s",
			run.dag, run.id, commands, tries, actions, strings.Join(arguments, "\n"))
	}
}

// history is what the Engine DB holds of the pipeline's runs, in the terms
// that do not depend on who ran them: per run its status, and per task its
// status, rows written and attempts' statuses.
func history(t *testing.T, p *e2e.Project, pipeline string) []string {
	t.Helper()
	return e2e.QueryRows(t, p.DB(), `SELECT r.STATUS, c.TASK_CODE, t.STATUS, COALESCE(CAST(t.ROWS_WRITTEN AS VARCHAR), '-'),
			COALESCE((SELECT string_agg(a.STATUS, ',' ORDER BY a.ATTEMPT_NUMBER) FROM AUD_TASK_ATTEMPTS a WHERE a.TASK_RUN_ID = t.TASK_RUN_ID), '-')
		FROM AUD_PIPELINES_RUN_LOG r JOIN CFG_PIPELINES pl ON pl.PIPELINE_ID = r.PIPELINE_ID
		JOIN AUD_TASK_RUN_LOG t ON t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID
		WHERE pl.PIPELINE_CODE = $1 ORDER BY r.PIPELINE_RUN_ID, c.TASK_CODE`, pipeline)
}

// warehouse returns every table of the warehouse schema main with its rows
// in order, without the columns that name the run, task run and attempt
// which wrote them (their ids depend on what else the Engine DB recorded
// first) and without the qualified target names of the script load ledger
// (each project has a schema of its own).
func warehouse(t *testing.T, p *e2e.Project) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range p.WarehouseRows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'") {
		columns := p.WarehouseRows(`SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' AND table_name = '` + table + `'
			AND lower(column_name) NOT IN ('pipeline_run_id', 'task_run_id', 'attempt_id', 'target') ORDER BY ordinal_position`)
		for i, c := range columns {
			columns[i] = `"` + c + `"`
		}
		rows := p.WarehouseRows("SELECT " + strings.Join(columns, ", ") + " FROM main." + table)
		slices.Sort(rows)
		out[table] = rows
	}
	return out
}
