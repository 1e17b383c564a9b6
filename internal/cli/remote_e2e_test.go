package cli_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/etl-craft/etl-craft/internal/dag"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

// orchestratedPipeline is a pipeline whose run takes every path a DAG run
// can take: load succeeds, bad fails (and is retried once), on_bad runs on
// the failure, after_bad never runs, and wrap runs whatever happened.
func orchestratedPipeline() string {
	return e2e.Pipeline("ORCH",
		e2e.CreateTable("load", "main.orders", "SELECT 1 AS id UNION ALL SELECT 2"),
		e2e.CreateTable("bad", "main.bad", "SELECT * FROM main.no_such_table", "load:SUCCESS").With("RETRY_DELAY_SECONDS", "0"),
		e2e.CreateTable("on_bad", "main.alarm", "SELECT 1 AS x", "bad:FAILURE"),
		e2e.CreateTable("after_bad", "main.after", "SELECT 1 AS x", "bad:SUCCESS"),
		e2e.CreateTable("wrap", "main.wrap", "SELECT count(*) AS n FROM main.orders", "bad:ALWAYS", "load:ALWAYS"),
	)
}

// The Airflow DAG run the test plays, and what the loader
// (etl_craft_dags.py) puts in every command's environment for it.
const (
	dagRunID      = "scheduled__2026-10-07T05:00:00+00:00"
	dataIntervalD = "2026-10-07"
)

var orchestratorEnv = []string{"ETL_CRAFT_ACTOR=airflow", "ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR", "ETL_CRAFT_DAG_RUN_ID=" + dagRunID}

// dagStep is one step of a generated DAG, as the test's orchestrator reads it.
type dagStep struct {
	id      string
	Command string   `yaml:"bash_command"`
	Depends []string `yaml:"depends_on"`
	Rule    string   `yaml:"trigger_rule"`
}

// dagSteps reads the steps of a generated DAG in its order, and its retries.
func dagSteps(t *testing.T, text string) ([]dagStep, int) {
	t.Helper()
	var doc struct {
		DefaultArgs struct {
			Retries int `yaml:"retries"`
		} `yaml:"default_args"`
		Tasks yaml.Node `yaml:"tasks"`
	}
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	var steps []dagStep
	for i := 0; i+1 < len(doc.Tasks.Content); i += 2 {
		s := dagStep{id: doc.Tasks.Content[i].Value}
		if err := doc.Tasks.Content[i+1].Decode(&s); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, s)
	}
	return steps, doc.DefaultArgs.Retries
}

// triggered applies Airflow's trigger rule to the states of a step's
// upstream steps ("success", "failed", "upstream_failed" or "skipped"), all
// finished, and tells whether the step runs, else the state it gets.
func triggered(rule string, ups []string) (bool, string) {
	n := func(states ...string) int {
		c := 0
		for _, u := range ups {
			if slices.Contains(states, u) {
				c++
			}
		}
		return c
	}
	failed := n("failed", "upstream_failed")
	switch rule {
	case "all_success":
		switch {
		case n("success") == len(ups):
			return true, ""
		case failed > 0:
			return false, "upstream_failed"
		}
	case "all_failed":
		return failed == len(ups), ""
	case "all_done":
		return true, ""
	case "one_success":
		return n("success") > 0, ""
	case "one_failed":
		return failed > 0, ""
	case "one_done":
		return n("success", "failed") > 0, ""
	}
	return false, "skipped"
}

// orchestrate plays an Airflow DAG run of the descriptor, as the loader
// builds it: each step, once its upstream steps have finished, runs (its
// command, as a process of its own, with the orchestrator's environment) or
// not, as its trigger rule says, in the DAG's order among the steps that
// can go; a failed command is tried again up to retries times, but
// __finalize__, which the loader never retries. It returns
// each step's state and the commands run, in order.
func orchestrate(t *testing.T, p *e2e.Project, yml string) (map[string]string, []string) {
	t.Helper()
	steps, retries := dagSteps(t, yml)
	state := map[string]string{}
	var ran []string
	for len(state) < len(steps) {
		progressed := false
		for _, s := range steps {
			if state[s.id] != "" || slices.ContainsFunc(s.Depends, func(u string) bool { return state[u] == "" }) {
				continue
			}
			progressed = true
			ups := make([]string, len(s.Depends))
			for i, u := range s.Depends {
				ups[i] = state[u]
			}
			run, not := triggered(s.Rule, ups)
			if !run {
				state[s.id] = not
				break
			}
			command := strings.NewReplacer("{{ run_id }}", dagRunID, "{{ data_interval_end | ds }}", dataIntervalD).Replace(s.Command)
			args := strings.Fields(command)
			if args[0] != "etl-craft" {
				t.Fatalf("step %s runs %q", s.id, command)
			}
			tries := retries + 1
			if s.id == dag.FinalizeStep {
				tries = 1
			}
			state[s.id] = "failed"
			for try := 0; try < tries && state[s.id] == "failed"; try++ {
				ran = append(ran, s.id)
				if r := p.Run(orchestratorEnv, args[1:]...); r.Code == 0 {
					state[s.id] = "success"
				} else if r.Code != 1 {
					t.Fatalf("step %s (%s) exited %d\n%s%s", s.id, command, r.Code, r.Stdout, r.Stderr)
				}
			}
			break // back to the DAG's order
		}
		if !progressed {
			t.Fatalf("the DAG's steps wait on each other: %v", state)
		}
	}
	return state, ran
}

// runHistory is what the Engine DB holds of a run, in the terms that must
// not depend on who ran it: the run's status, and per task its status,
// counts and attempts.
func runHistory(t *testing.T, db *engine.DB, runID int64) []string {
	t.Helper()
	out := []string{"run " + e2e.Scalar(t, db, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", runID)}
	rows := textColumn(t, db, fmt.Sprintf(`SELECT c.TASK_CODE || ' ' || r.STATUS || ' rows=' || COALESCE(CAST(r.ROWS_WRITTEN AS VARCHAR), '-') ||
			' attempts=' || CAST(r.ATTEMPT_COUNT AS VARCHAR)
		FROM AUD_TASK_RUN_LOG r JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID WHERE r.PIPELINE_RUN_ID = %d ORDER BY c.TASK_CODE`, runID))
	for _, row := range rows {
		code, _, _ := strings.Cut(row, " ")
		out = append(out, row+" ["+attemptStatuses(t, db, runID, code)+"]")
	}
	return out
}

// Remote mode end to end: the commands of the generated DAG, run in its
// order as an orchestrator runs them (init, each task as its own process,
// retried by the orchestrator, finalize), leave the same history as a local
// run of the same pipeline; the run is the orchestrator's (its run key, run
// date and the ORCHESTRATOR actor on every row and action). A task
// delivered again after it ran is a new attempt on the same task run of the
// same run, which the next finalize ends again.
func TestRemoteModeEndToEnd(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		local := newProject(t, kind, "")
		setMode(local, "local", "  Retries: 1\n")
		local.OK("init-db")
		local.Register("0001_orch", orchestratedPipeline())
		if r := local.Run(nil, "run", "--pipeline_code", "ORCH"); r.Code != 1 || r.Stdout != "ORCH: pipeline_run_id=1 FAILED — 1 task(s) did not succeed: bad (FAILED); skipped because of the failure: after_bad\n" {
			t.Fatalf("local run: exit %d %q\n%s", r.Code, r.Stdout, r.Stderr)
		}
		want := runHistory(t, local.DB(), 1)

		remote := newProject(t, kind, "")
		setMode(remote, "remote", "  Retries: 1\n")
		remote.OK("init-db")
		remote.Register("0001_orch", orchestratedPipeline())
		yml := remote.OK("generate-yml", "--pipeline_code", "ORCH").Stdout
		state, ran := orchestrate(t, remote, yml)
		if fmt.Sprint(ran) != "[__init__ load bad bad on_bad wrap __finalize__]" ||
			fmt.Sprint(state) != "map[__finalize__:failed __init__:success after_bad:upstream_failed bad:failed load:success on_bad:success wrap:success]" {
			t.Fatalf("the DAG run: ran %v, states %v\n%s", ran, state, yml)
		}
		db := remote.DB()
		if got := runHistory(t, db, 1); !slices.Equal(got, want) {
			t.Fatalf("the remote history differs from the local one:\nremote %q\nlocal  %q", got, want)
		}
		if fmt.Sprint(want) != "[run FAILED after_bad SKIPPED rows=- attempts=0 [] bad FAILED rows=- attempts=2 [FAILED FAILED] "+
			"load SUCCESS rows=2 attempts=1 [SUCCESS] on_bad SUCCESS rows=1 attempts=1 [SUCCESS] wrap SUCCESS rows=1 attempts=1 [SUCCESS]]" {
			t.Fatalf("the local history %q", want)
		}

		// As the reference says: the local run is a HUMAN's MANUAL run of
		// today under a manual key, the remote run the orchestrator's.
		if got := e2e.Scalar(t, local.DB(), `SELECT TRIGGER_KIND || ' ' || STARTED_BY_KIND || ' ' || SUBSTR(RUN_KEY, 1, 7) FROM AUD_PIPELINES_RUN_LOG`); got != "MANUAL HUMAN manual:" {
			t.Errorf("the local run: %s", got)
		}
		if got := e2e.Scalar(t, db, `SELECT TRIGGER_KIND || ' ' || STARTED_BY || ' ' || STARTED_BY_KIND || ' ' || RUN_KEY || ' ' || CAST(RUN_DATE AS VARCHAR)
			FROM AUD_PIPELINES_RUN_LOG`); got != "ORCHESTRATOR airflow ORCHESTRATOR orchestrator:"+dagRunID+" "+dataIntervalD {
			t.Errorf("the remote run: %s", got)
		}
		if got := textColumn(t, db, `SELECT DISTINCT COALESCE(REQUESTED_BY, '-') || ' ' || COALESCE(REQUESTED_BY_KIND, '-') FROM AUD_TASK_ATTEMPTS`); fmt.Sprint(got) != "[airflow ORCHESTRATOR]" {
			t.Errorf("the attempts were requested by %v", got)
		}
		actions := textColumn(t, db, `SELECT ACTOR || ' ' || ACTOR_KIND FROM AUD_ACTIONS WHERE COMMAND = 'run' ORDER BY ACTION_ID`)
		if len(actions) != 7 || slices.ContainsFunc(actions, func(a string) bool { return a != "airflow ORCHESTRATOR" }) {
			t.Errorf("the run actions %v", actions)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE CAST(ARGUMENTS AS VARCHAR) LIKE $1", "%"+dagRunID+"%"); n != 7 {
			t.Errorf("%d of the 7 actions record the DAG run id", n)
		}

		// An orchestrator retry of a task that ran: a second attempt on the
		// same task run of the same run, which it reopens until the next
		// finalize ends it again.
		taskRun := e2e.Scalar(t, db, `SELECT CAST(r.TASK_RUN_ID AS VARCHAR) FROM AUD_TASK_RUN_LOG r JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID WHERE c.TASK_CODE = 'load'`)
		steps, _ := dagSteps(t, yml)
		command := func(id string) []string {
			for _, s := range steps {
				if s.id == id {
					return strings.Fields(strings.NewReplacer("{{ run_id }}", dagRunID, "{{ data_interval_end | ds }}", dataIntervalD).Replace(s.Command))[1:]
				}
			}
			t.Fatalf("no step %s", id)
			return nil
		}
		if r := remote.Run(orchestratorEnv, command("load")...); r.Code != 0 || r.Stdout != "load: SUCCESS\n" {
			t.Fatalf("the re-delivered task: exit %d %q\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if got := e2e.Scalar(t, db, `SELECT CAST(r.TASK_RUN_ID AS VARCHAR) || ' ' || p.STATUS || ' ' || CAST(r.ATTEMPT_COUNT AS VARCHAR)
			FROM AUD_TASK_RUN_LOG r JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID JOIN AUD_PIPELINES_RUN_LOG p ON p.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID
			WHERE c.TASK_CODE = 'load'`); got != taskRun+" IN-PROGRESS 2" || attemptStatuses(t, db, 1, "load") != "SUCCESS SUCCESS" {
			t.Fatalf("after the re-delivery: %s, attempts %s", got, attemptStatuses(t, db, 1, "load"))
		}
		if got := e2e.Scalar(t, db, `SELECT ACTION || ' ' || REQUESTED_BY_KIND FROM AUD_RUN_INTERVENTIONS`); got != "REOPEN ORCHESTRATOR" {
			t.Errorf("intervention %q", got)
		}
		if r := remote.Run(orchestratorEnv, command("__finalize__")...); r.Code != 1 || !strings.HasPrefix(r.Stdout, "ORCH: pipeline_run_id=1 FAILED") {
			t.Fatalf("the second finalize: exit %d %q\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); n != 1 {
			t.Errorf("%d runs", n)
		}
	})
}
