package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

// alice is the actor of the operator commands in these tests.
var alice = []string{"ETL_CRAFT_ACTOR=alice@test"}

// pipelineDep returns a project migration making pipeline down depend on
// pipeline up with the type.
func pipelineDep(down, up, typ string) string {
	return fmt.Sprintf(`INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)
SELECT d.PIPELINE_ID, u.PIPELINE_ID, %s FROM CFG_PIPELINES d JOIN CFG_PIPELINES u ON u.PIPELINE_CODE = %s AND u.ACTIVE_FLAG = 'Y'
WHERE d.PIPELINE_CODE = %s AND d.ACTIVE_FLAG = 'Y';
`, e2e.Quote(typ), e2e.Quote(up), e2e.Quote(down))
}

// runOf returns the run id a run command printed.
func runOf(t *testing.T, r e2e.Result) int64 {
	t.Helper()
	m := regexp.MustCompile(`pipeline_run_id=(\d+)`).FindStringSubmatch(r.Stdout)
	if m == nil {
		t.Fatalf("no run in %q (stderr %s)", r.Stdout, r.Stderr)
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

// want fails the test unless r exited with the code and printed the line.
func want(t *testing.T, r e2e.Result, code int, line string) {
	t.Helper()
	if r.Code != code || r.Stdout != line+"\n" {
		t.Fatalf("exit %d, stdout %q; want exit %d with %q\nstderr: %s", r.Code, r.Stdout, code, line, r.Stderr)
	}
}

// I05 through the binary: cancel stops a pipeline run whose task is blocked
// in a PostgreSQL warehouse query, and a task run on its own; both record
// CANCELLED with the CANCEL interventions of the operator.
func TestCancelStopsRunningWorkThroughTheBinary(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		cmd := p.Command(nil, "run", "--pipeline_code", "KP")
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e2e.WaitFor(t, db, 1, runningHeld)
		e2e.WantExit(t, p.Run(alice, "mark", "--pipeline_code", "KP", "--task_code", "held", "--status", "SUCCESS", "--reason", "x"),
			10, "KP.held is running under pipeline_run_id=1")
		want(t, p.Run(alice, "cancel", "--pipeline_code", "KP", "--reason", "wrong day"), 0,
			"KP: pipeline_run_id=1 CANCELLED; stopping 1 running task(s): held (the process running each stops it within a few seconds)")
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.HasPrefix(out.String(), "KP: pipeline_run_id=1 CANCELLED") {
			t.Fatalf("the run exited %d: %q", code, out.String())
		}
		if got := attemptStatuses(t, db, 1, "held"); got != "CANCELLED" || attemptStatuses(t, db, 1, "last") != "" {
			t.Fatalf("held %s, last %s", got, attemptStatuses(t, db, 1, "last"))
		}
		got := textColumn(t, db, `SELECT i.ACTION || ' ' || COALESCE(c.TASK_CODE, '-') || ' ' || i.REQUESTED_BY || ' ' || i.REQUESTED_BY_KIND || ' ' || i.REASON
			FROM AUD_RUN_INTERVENTIONS i LEFT JOIN CFG_TASKS c ON c.TASK_ID = i.TASK_ID ORDER BY i.INTERVENTION_ID`)
		if strings.Join(got, "|") != "CANCEL held alice@test HUMAN wrong day|CANCEL - alice@test HUMAN wrong day" {
			t.Fatalf("interventions %v", got)
		}
		e2e.WantExit(t, p.Run(alice, "cancel", "--pipeline_code", "KP", "--reason", "again", "--run-id", "1"), 9, "ended CANCELLED")
		stopped := func() int {
			var n int
			if err := w.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%wait_for_gate%' AND state = 'active' AND pid <> pg_backend_pid()").
				Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		for deadline := time.Now().Add(10 * time.Second); stopped() != 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the warehouse query still runs")
			}
		}

		// A task run on its own notices the cancel by itself.
		want(t, p.Run(nil, "run", "--pipeline_code", "KP", "--init-only"), 0, "KP: pipeline_run_id=2 IN-PROGRESS")
		want(t, p.Run(nil, "run", "--pipeline_code", "KP", "--task_code", "first"), 0, "first: SUCCESS")
		task := p.Command(nil, "run", "--pipeline_code", "KP", "--task_code", "held")
		var taskOut strings.Builder
		task.Stdout = &taskOut
		if err := task.Start(); err != nil {
			t.Fatal(err)
		}
		e2e.WaitFor(t, db, 1, runningHeld)
		want(t, p.Run(alice, "cancel", "--pipeline_code", "KP", "--reason", "not today"), 0,
			"KP: pipeline_run_id=2 CANCELLED; stopping 1 running task(s): held (the process running each stops it within a few seconds)")
		task.Wait()
		if code := task.ProcessState.ExitCode(); code != 1 || taskOut.String() != "held: CANCELLED — was stopped because an operator cancelled it\n" {
			t.Fatalf("the task exited %d: %q", code, taskOut.String())
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'cancel' AND ACTOR = 'alice@test'"); n != 3 {
			t.Fatalf("%d cancel actions", n)
		}
	})
}

// Every operator command through the binary records its intervention with
// its reason and actor, and its request in AUD_ACTIONS: run --skip, mark
// --new-run, mark of a task and of a run, --ignore-dependencies, --rerun and
// --backfill (five dates, stopping at the failing third); remote mode
// refuses them.
func TestOperatorCommandsThroughTheBinary(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		p.Register("0001_pipelines", e2e.Pipeline("UP", e2e.CreateTable("publish", "main.up_t", "SELECT 1 AS id"))+
			e2e.Pipeline("DOWN", e2e.CreateTable("load", "main.down_t", "SELECT 1 AS id"))+
			e2e.Pipeline("B",
				e2e.CreateTable("extract", "main.extract_t", "SELECT CAST('broken' AS INTEGER) AS id"),
				e2e.CreateTable("load", "main.load_t", "SELECT 1 AS id", "extract:SUCCESS"),
				e2e.CreateTable("publish", "main.publish_t", "SELECT 1 AS id", "load:SUCCESS"))+
			e2e.Pipeline("C", e2e.CreateTable("daily", "main.daily_t",
				"SELECT CAST(CASE WHEN $$run_date = DATE '2026-01-03' THEN 'boom' ELSE '1' END AS INTEGER) AS n").
				With("RUN_DATE_SUBSTITUTION", "true"))+
			pipelineDep("DOWN", "UP", "SUCCESS"))
		db := p.DB()

		want(t, p.Run(alice, "run", "--pipeline_code", "DOWN"), 0, "DOWN: pipeline_run_id=1 SKIPPED — upstream pipeline UP (SUCCESS) has no finished run")
		want(t, p.Run(alice, "run", "--pipeline_code", "UP", "--skip", "--reason", "holiday"), 0,
			"UP: pipeline_run_id=2 SKIPPED — skipped on purpose: holiday")
		r := p.Run(alice, "mark", "--pipeline_code", "UP", "--new-run", "--status", "SUCCESS", "--reason", "loaded elsewhere", "--format", "json")
		var doc struct {
			Schema, Message string
			Run             struct {
				ID          int64  `json:"pipeline_run_id"`
				TriggerKind string `json:"trigger_kind"`
				Status      string
			}
		}
		if err := jsonUnmarshal(r.Stdout, &doc); err != nil || r.Code != 0 || doc.Schema != "etl-craft/operation/1" ||
			doc.Run.ID != 3 || doc.Run.TriggerKind != "STAND_IN" || doc.Run.Status != "SUCCESS" ||
			doc.Message != "UP: stand-in run pipeline_run_id=3 recorded SUCCESS" {
			t.Fatalf("exit %d %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
		}
		want(t, p.Run(alice, "run", "--pipeline_code", "DOWN"), 0, "DOWN: pipeline_run_id=4 SUCCESS")

		failed := p.Run(alice, "run", "--pipeline_code", "B")
		if failed.Code != 1 {
			t.Fatalf("exit %d %q %s", failed.Code, failed.Stdout, failed.Stderr)
		}
		b := strconv.FormatInt(runOf(t, failed), 10)
		want(t, p.Run(alice, "mark", "--pipeline_code", "B", "--task_code", "extract", "--run-id", b, "--status", "SUCCESS", "--reason", "fixed by hand"), 0,
			"B.extract: marked SUCCESS under pipeline_run_id="+b+" (was FAILED); the run was FAILED and is IN-PROGRESS again; "+
				"reset to run again: load, publish. etl-craft run --pipeline_code B resumes it")
		want(t, p.Run(alice, "run", "--pipeline_code", "B"), 0, "B: pipeline_run_id="+b+" SUCCESS")
		want(t, p.Run(alice, "run", "--pipeline_code", "B", "--task_code", "load", "--run-id", b, "--rerun", "--with-downstream", "--reason", "rebuild"), 0,
			"B: pipeline_run_id="+b+" SUCCESS — ran again: load (SUCCESS), publish (SUCCESS)")
		open := runOf(t, p.OK("run", "--pipeline_code", "B", "--init-only"))
		want(t, p.Run(alice, "run", "--pipeline_code", "B", "--task_code", "load", "--ignore-dependencies", "--reason", "the source is fine"), 0, "load: SUCCESS")
		want(t, p.Run(alice, "mark", "--pipeline_code", "B", "--status", "FAILED", "--reason", "close it"), 0,
			fmt.Sprintf("B: pipeline_run_id=%d marked FAILED (was IN-PROGRESS)", open))

		// A paused pipeline starts nothing, and says who paused it and why.
		p.OK("pause", "--pipeline_code", "C", "--reason", "warehouse upgrade")
		for _, args := range [][]string{{"run", "--pipeline_code", "C"}, {"run", "--pipeline_code", "C", "--backfill", "2026-01-01:2026-01-02", "--reason", "x"}} {
			r := p.Run(alice, args...)
			if r.Code != 0 || !regexp.MustCompile(`^C: PAUSED — paused by \S+ \(HUMAN\) since [0-9: +-]+: warehouse upgrade; nothing was started`).MatchString(r.Stdout) {
				t.Fatalf("%v: exit %d %q", args, r.Code, r.Stdout)
			}
		}
		p.OK("resume", "--pipeline_code", "C", "--reason", "done")
		r = p.Run(alice, "run", "--pipeline_code", "C", "--backfill", "2026-01-01:2026-01-05", "--reason", "reload January", "--format", "json")
		var bf struct {
			Schema, Status, Message string
			Runs                    []struct{ Status string }
			Stopped                 struct{ Status string }
			ExitCode                int `json:"exit_code"`
		}
		if err := jsonUnmarshal(r.Stdout, &bf); err != nil || r.Code != 1 || bf.Schema != "etl-craft/backfill/1" || len(bf.Runs) != 3 ||
			bf.Stopped.Status != "FAILED" || bf.ExitCode != 1 || !strings.Contains(bf.Message, "--backfill 2026-01-03:2026-01-05") {
			t.Fatalf("exit %d %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
		}
		dates := textColumn(t, db, `SELECT CAST(r.RUN_DATE AS VARCHAR) || ' ' || r.STATUS || ' ' || r.BACKFILL FROM AUD_PIPELINES_RUN_LOG r
			JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID WHERE p.PIPELINE_CODE = 'C' ORDER BY r.PIPELINE_RUN_ID`)
		if strings.Join(dates, "|") != "2026-01-01 SUCCESS Y|2026-01-02 SUCCESS Y|2026-01-03 FAILED Y" {
			t.Fatalf("backfill runs %v", dates)
		}

		got := textColumn(t, db, `SELECT p.PIPELINE_CODE || ' ' || i.ACTION || ' ' || COALESCE(c.TASK_CODE, '-') || ' ' || i.REQUESTED_BY || ' ' || i.REASON
			FROM AUD_RUN_INTERVENTIONS i JOIN CFG_PIPELINES p ON p.PIPELINE_ID = i.PIPELINE_ID LEFT JOIN CFG_TASKS c ON c.TASK_ID = i.TASK_ID
			ORDER BY i.INTERVENTION_ID`)
		backfill := "dependencies on other pipelines are not checked, and nothing is consumed"
		wanted := []string{
			"UP NEW_RUN - alice@test holiday",
			"UP NEW_RUN - alice@test loaded elsewhere",
			"B MARK extract alice@test fixed by hand",
			"B REOPEN - alice@test fixed by hand",
			"B RESET load alice@test fixed by hand",
			"B RESET publish alice@test fixed by hand",
			"B REOPEN - alice@test rebuild",
			"B RERUN load alice@test rebuild",
			"B RERUN publish alice@test rebuild",
			"B IGNORE_DEPENDENCIES load alice@test the source is fine",
			"B MARK - alice@test close it",
			"C GATE_BYPASS - alice@test backfill for 2026-01-01: reload January; " + backfill,
			"C GATE_BYPASS - alice@test backfill for 2026-01-02: reload January; " + backfill,
			"C GATE_BYPASS - alice@test backfill for 2026-01-03: reload January; " + backfill,
		}
		if strings.Join(got, "\n") != strings.Join(wanted, "\n") {
			t.Fatalf("interventions:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wanted, "\n"))
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE ACTOR = 'alice@test' AND COMMAND IN ('run', 'mark')"); n != 13 {
			t.Fatalf("%d actions", n)
		}

		// Flags that do not go together; nothing is recorded for them.
		for _, args := range [][]string{
			{"run", "--pipeline_code", "B", "--rerun", "--reason", "x"},
			{"run", "--pipeline_code", "B", "--reason", "x"},
			{"run", "--pipeline_code", "B", "--task_code", "load", "--ignore-dependencies"},
			{"run", "--pipeline_code", "B", "--backfill", "2026-01-05:2026-01-01", "--reason", "x"},
			{"run", "--pipeline_code", "B", "--init-only", "--force"},
			{"run", "--pipeline_code", "B", "--init-only", "--task_code", "load"},
			{"mark", "--pipeline_code", "B", "--reason", "x"},
			{"mark", "--pipeline_code", "B", "--new-run", "--status", "SUCCESS", "--reason", "x", "--run-id", "1"},
			{"cancel", "--pipeline_code", "B"},
		} {
			if r := p.Run(alice, args...); r.Code != 2 {
				t.Fatalf("%v: exit %d %s", args, r.Code, r.Stderr)
			}
		}

		// Remote mode refuses whole runs and every intervention (exit 10),
		// and rules an orchestrator cannot express (exit 18).
		path := filepath.Join(p.Dir, "craft-connector.yml")
		yml, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p.Write("craft-connector.yml", strings.Replace(string(yml), "Mode: local", "Mode: remote", 1))
		for _, args := range [][]string{
			{"run", "--pipeline_code", "B"},
			{"run", "--pipeline_code", "B", "--skip", "--reason", "x"},
			{"run", "--pipeline_code", "B", "--backfill", "2026-01-01:2026-01-02", "--reason", "x"},
			{"mark", "--pipeline_code", "B", "--status", "SUCCESS", "--reason", "x"},
			{"cancel", "--pipeline_code", "B", "--reason", "x"},
		} {
			e2e.WantExit(t, p.Run(alice, args...), 10, "")
		}
		p.Register("0002_n_of", e2e.Pipeline("NOF",
			e2e.CreateTable("a", "main.a_t", "SELECT 1 AS id"), e2e.CreateTable("b", "main.b_t", "SELECT 1 AS id"),
			e2e.CreateTable("c", "main.c_t", "SELECT 1 AS id", "a:SUCCESS", "b:SUCCESS"))+
			"UPDATE CFG_TASKS SET RUN_CONDITION = 'N', RUN_CONDITION_COUNT = 1 WHERE TASK_CODE = 'c';\n")
		e2e.WantExit(t, p.Run(nil, "run", "--pipeline_code", "NOF", "--init-only"), 18, "NOF.c: RUN_CONDITION = 'N'")
	})
}
