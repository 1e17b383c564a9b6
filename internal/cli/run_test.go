package cli_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/fault"
)

// attemptStatuses returns the statuses of a task's attempts in a run.
func attemptStatuses(t *testing.T, db *engine.DB, runID int64, task string) string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), `SELECT a.STATUS FROM AUD_TASK_ATTEMPTS a
		JOIN AUD_TASK_RUN_LOG r ON r.TASK_RUN_ID = a.TASK_RUN_ID JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID
		WHERE r.PIPELINE_RUN_ID = $1 AND c.TASK_CODE = $2 ORDER BY a.ATTEMPT_NUMBER`, runID, task)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// runLine matches the line a pipeline run prints.
var runLine = regexp.MustCompile(`^(\w+): pipeline_run_id=(\d+) ([A-Z-]+)( — .*)?\n$`)

func TestRunSQLPipelinesOnDuckDB(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		p.Register("0001_sales", e2e.Pipeline("SALES",
			e2e.Task{Code: "setup_orders", Params: map[string]string{"SQL_ACTION": "SETUP_TABLE", "SETUP_FOR": "APPEND_TABLE",
				"TARGET_OBJECT": "main.orders", "SOURCE_SQL": "SELECT 1 AS id, 'x' AS name"}},
			e2e.Task{Code: "append_orders", Deps: []string{"setup_orders:SUCCESS"}, Params: map[string]string{"SQL_ACTION": "APPEND_TABLE",
				"TARGET_OBJECT": "main.orders", "SOURCE_SQL": "SELECT 2 AS id, 'b' AS name UNION ALL SELECT 3, 'c'"}},
			e2e.CreateTable("totals", "main.totals", "SELECT count(*) AS n FROM main.orders", "append_orders:HAS_DATA"),
			e2e.CreateTable("on_failure", "main.alarm", "SELECT 1 AS x", "append_orders:FAILURE"),
		))
		r := p.OK("run", "--pipeline_code", "SALES")
		if r.Stdout != "SALES: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("stdout %q\nstderr %s", r.Stdout, r.Stderr)
		}
		db := p.DB()
		if got := e2e.Scalar(t, db, "SELECT STATUS || ' ' || TRIGGER_KIND || ' ' || CAST(RUN_DATE AS VARCHAR) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 1"); got !=
			"SUCCESS MANUAL "+time.Now().UTC().Format(time.DateOnly) {
			t.Fatalf("run row %q", got)
		}
		if key := e2e.Scalar(t, db, "SELECT RUN_KEY FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 1"); !regexp.MustCompile(`^manual:[0-9a-f-]{36}$`).MatchString(key) {
			t.Fatalf("run key %q", key)
		}
		if got := e2e.Scalar(t, db, `SELECT t.STATUS FROM AUD_TASK_RUN_LOG t JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE c.TASK_CODE = 'on_failure'`); got != "SKIPPED" {
			t.Fatalf("on_failure %s", got)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'run'"); n != 1 {
			t.Fatalf("%d run actions", n)
		}
		if got := p.WarehouseRows("SELECT n FROM main.totals"); fmt.Sprint(got) != "[2]" {
			t.Fatalf("totals %v", got)
		}
		if h := p.OK("history", "--pipeline_code", "SALES", "--all"); !strings.Contains(h.Stdout, "\nSUCCESS\t") && !strings.Contains(h.Stdout, "1\tSUCCESS\t") {
			t.Fatalf("history:\n%s", h.Stdout)
		}

		// The run ended: a second run is a new run; tasks need a run to bind to.
		r = p.OK("run", "--pipeline_code", "SALES", "--format", "json")
		if schemaOf(t, r) != "etl-craft/run-outcome/1" || !strings.Contains(r.Stdout, `"pipeline_run_id": 2`) {
			t.Fatalf("json %s", r.Stdout)
		}
		if got := p.WarehouseRows("SELECT count(*) FROM main.orders"); fmt.Sprint(got) != "[4]" {
			t.Fatalf("orders %v", got)
		}
		e2e.WantExit(t, p.Run(nil, "run", "--pipeline_code", "SALES", "--task_code", "totals"), 9, "matched 0 runs")
		r = p.OK("run", "--pipeline_code", "SALES", "--task_code", "totals", "--run-id", "2")
		if r.Stdout != "totals: SUCCESS — already SUCCESS under pipeline_run_id=2; use --force to run it again\n" {
			t.Fatalf("%q", r.Stdout)
		}
		e2e.WantExit(t, p.Run(nil, "run", "--pipeline_code", "SALES", "--run-id", "1", "--run-key", "k"), 2, "pass only one")
		e2e.WantExit(t, p.Run(nil, "run"), 2, "--pipeline_code is required")
		e2e.WantExit(t, p.Run(nil, "run", "--pipeline_code", "SALEZ"), 4, "did you mean SALES")
		r = p.OK("reconcile")
		if r.Stdout != "reconcile: 0 attempt(s) LOST, 0 run(s) released\n" {
			t.Fatalf("%q", r.Stdout)
		}
		if r := p.OK("reconcile", "--pipeline_code", "SALES", "--format", "json"); schemaOf(t, r) != "etl-craft/reconciliation/1" {
			t.Fatalf("%s", r.Stdout)
		}
		e2e.WantExit(t, p.Run(nil, "reconcile", "--task_code", "totals"), 2, "--task_code needs --pipeline_code")

		// A warehouse that does not answer: exit 11 before anything is recorded.
		p.WithWarehouse("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: jdbc:postgresql://127.0.0.1:1/nowhere?sslmode=disable\n"+
			"    schema: public\n    auth_mode: password\n    user: nobody\n    secret: WAREHOUSE_SECRET\n", []string{"WAREHOUSE_SECRET=x"})
		e2e.WantExit(t, p.Run(nil, "run", "--pipeline_code", "SALES"), 11, "warehouse: ")
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); n != 2 {
			t.Fatalf("%d runs after a failed connection test", n)
		}
	})
}

// gatedWarehouse replaces the project's warehouse with a fresh PostgreSQL
// database holding public.gate and public.wait_for_gate(), which returns 1
// once the gate is opened; a task selecting it holds until the test opens
// the gate.
func gatedWarehouse(p *e2e.Project) *sql.DB {
	p.T.Helper()
	yml, env, raw := e2e.PGWarehouse(p.T, "public")
	p.WithWarehouse(yml, env)
	w := enginetest.Plain(p.T, engine.Options{Kind: engine.Postgres, DSN: raw})
	e2e.MustExec(p.T, w, "CREATE TABLE public.gate (open INT)", "INSERT INTO public.gate VALUES (0)",
		`CREATE FUNCTION public.wait_for_gate() RETURNS INT LANGUAGE plpgsql AS $$
		BEGIN
			LOOP
				IF (SELECT open FROM public.gate) = 1 THEN RETURN 1; END IF;
				PERFORM pg_sleep(0.02);
			END LOOP;
		END $$`)
	return w
}

const runningHeld = `SELECT count(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG r ON r.TASK_RUN_ID = a.TASK_RUN_ID
	JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID WHERE c.TASK_CODE = 'held' AND a.STATUS = 'RUNNING'`

// gatedProject returns a project on a gated PostgreSQL warehouse whose
// pipeline KP runs first, then held (which waits for the gate), then last;
// with the warehouse and the Engine DB.
func gatedProject(t *testing.T, kind engine.Kind) (*e2e.Project, *sql.DB, *engine.DB) {
	t.Helper()
	p := newProject(t, kind, "")
	w := gatedWarehouse(p)
	p.OK("init-db")
	p.Register("0001_kp", e2e.Pipeline("KP",
		e2e.CreateTable("first", "public.first_t", "SELECT 1 AS id"),
		e2e.CreateTable("held", "public.held_t", "SELECT public.wait_for_gate() AS opened", "first:SUCCESS"),
		e2e.CreateTable("last", "public.last_t", "SELECT 1 AS id", "held:SUCCESS"),
	))
	return p, w, p.DB()
}

// expireLeases moves every lease into the past, as if their holders had
// stopped renewing them long ago.
func expireLeases(t *testing.T, db *engine.DB) {
	t.Helper()
	past := db.TimeArg(time.Now().Add(-time.Hour))
	err := db.Tx(context.Background(), func(tx *engine.Tx) error {
		if _, err := tx.ExecContext(context.Background(),
			"UPDATE AUD_TASK_ATTEMPTS SET LEASE_EXPIRES_AT = $1 WHERE STATUS IN ('CLAIMED', 'RUNNING')", past); err != nil {
			return err
		}
		_, err := tx.ExecContext(context.Background(),
			"UPDATE AUD_PIPELINES_RUN_LOG SET LEASE_EXPIRES_AT = $1 WHERE OWNER_ID IS NOT NULL", past)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTwoRunProcessesStartedTogether(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		done := make(chan e2e.Result, 2)
		for range 2 {
			cmd := p.Command(nil, "run", "--pipeline_code", "KP")
			var errb strings.Builder
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() {
				cmd.Wait()
				done <- e2e.Result{Code: cmd.ProcessState.ExitCode(), Stderr: errb.String()}
			}()
		}
		// The supervisor holds its task on the gate until the other process
		// has given up.
		// The loser finds the winner's run supervised, or loses the
		// admission of a run it recorded QUEUED, which stays QUEUED (CH06).
		loser := <-done
		if loser.Code != 9 || !strings.Contains(loser.Stderr, "is supervised by") && !strings.Contains(loser.Stderr, "another process started pipeline_run_id=") {
			t.Fatalf("the second process exited %d: %s", loser.Code, loser.Stderr)
		}
		e2e.MustExec(t, w, "UPDATE public.gate SET open = 1")
		if winner := <-done; winner.Code != 0 {
			t.Fatalf("the supervisor exited %d: %s", winner.Code, winner.Stderr)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS NOT IN ('SUCCESS', 'QUEUED')"); n != 0 ||
			e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'") != 1 {
			t.Fatalf("%d runs neither SUCCESS nor QUEUED", n)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS"); n != 3 {
			t.Fatalf("%d attempts for 3 tasks", n)
		}
	})
}

// CH02, local mode: a second delivery of a task while its attempt runs in
// another process runs nothing, says so and exits 0; the first delivery
// finishes the run with one attempt per task.
func TestADuplicateTaskDeliveryWhileItRunsExitsZero(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		cmd := p.Command(nil, "run", "--pipeline_code", "KP")
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		e2e.WaitFor(t, db, 1, runningHeld)
		r := p.Run(nil, "run", "--pipeline_code", "KP", "--task_code", "held")
		if r.Code != 0 || !strings.HasPrefix(r.Stdout, "held: IN-PROGRESS — already IN-PROGRESS under pipeline_run_id=1 (task_run_id=") {
			t.Fatalf("the duplicate delivery exited %d: %q\n%s", r.Code, r.Stdout, r.Stderr)
		}
		if got := attemptStatuses(t, db, 1, "held"); got != "RUNNING" {
			t.Fatalf("held attempts after the duplicate delivery: %s", got)
		}
		e2e.MustExec(t, w, "UPDATE public.gate SET open = 1")
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the first delivery: %v\n%s", err, errb.String())
		}
		got := []string{attemptStatuses(t, db, 1, "first"), attemptStatuses(t, db, 1, "held"), attemptStatuses(t, db, 1, "last")}
		if fmt.Sprint(got) != "[SUCCESS SUCCESS SUCCESS]" || e2e.Scalar(t, db, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG") != "SUCCESS" {
			t.Fatalf("attempts %q", got)
		}
	})
}

func TestASignalStopsTheRunAndTheNextRunResumesIt(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
			cmd := p.Command(nil, "run", "--pipeline_code", "KP")
			var out strings.Builder
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			e2e.WaitFor(t, db, 1, runningHeld)
			cmd.Process.Signal(sig)
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 22 || out.String() !=
				"KP: pipeline_run_id=1 IN-PROGRESS — interrupted: 1 running task(s) were stopped and recorded FAILED; run again to resume\n" {
				t.Fatalf("%s: exit %d, %q", sig, code, out.String())
			}
		}
		if msg := e2e.Scalar(t, db, "SELECT ERROR_MESSAGE FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_NUMBER = 2 AND STATUS = 'FAILED'"); msg !=
			"was stopped because the run was interrupted" {
			t.Fatalf("attempt message %q", msg)
		}
		e2e.MustExec(t, w, "UPDATE public.gate SET open = 1")
		if r := p.OK("run", "--pipeline_code", "KP"); r.Stdout != "KP: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("%q", r.Stdout)
		}
		if got := attemptStatuses(t, db, 1, "held"); got != "FAILED FAILED SUCCESS" {
			t.Fatalf("held: %s", got)
		}
	})
}

func TestATimedOutWarehouseQueryIsStopped(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		w := gatedWarehouse(p)
		p.OK("init-db")
		p.Register("0001_slow", e2e.Pipeline("SLOW",
			e2e.CreateTable("load", "public.loaded", "SELECT 1 AS id"),
			e2e.CreateTable("slow", "public.slow_t", "SELECT 1 AS x FROM (SELECT pg_sleep(30)) AS s", "load:SUCCESS").
				With("TASK_TIMEOUT_SECONDS", "1", "RETRIES", "1", "RETRY_DELAY_SECONDS", "0"),
		))
		r := p.Run(nil, "run", "--pipeline_code", "SLOW")
		m := runLine.FindStringSubmatch(r.Stdout)
		if r.Code != 1 || m == nil || m[3] != "FAILED" || m[4] != " — 1 task(s) did not succeed: slow (FAILED)" {
			t.Fatalf("exit %d %q\n%s", r.Code, r.Stdout, r.Stderr)
		}
		db := p.DB()
		if got := attemptStatuses(t, db, 1, "slow"); got != "TIMED_OUT TIMED_OUT" {
			t.Fatalf("attempts %s", got)
		}
		if msg := e2e.Scalar(t, db, "SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE STATUS = 'FAILED'"); msg != "timed out after 1s and was stopped" {
			t.Fatalf("%q", msg)
		}
		var sleeping int
		if err := w.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(30)%' AND state = 'active' AND pid <> pg_backend_pid()").
			Scan(&sleeping); err != nil || sleeping != 0 {
			t.Fatalf("%d warehouse queries still sleep (%v)", sleeping, err)
		}
	})
}

func TestKillFaultsDuringARun(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		p.Register("0001_one", e2e.Pipeline("ONE", e2e.CreateTable("only", "main.only_t", "SELECT 1 AS id")))
		db := p.DB()
		// A new run is recorded QUEUED before its admission, which the
		// kill interrupts: the next run admits that run.
		r := p.Run([]string{fault.Variable + "=pipeline.after_insert:kill"}, "run", "--pipeline_code", "ONE")
		if r.Code != fault.KilledStatus || e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'QUEUED'") != 1 {
			t.Fatalf("pipeline.after_insert:kill: exit %d, %d runs", r.Code, e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"))
		}
		r = p.Run([]string{fault.Variable + "=attempt.after_status:kill"}, "run", "--pipeline_code", "ONE")
		// PostgreSQL does not give back the id the killed insert took.
		first := int64(e2e.Count(t, db, "SELECT max(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG"))
		if r.Code != fault.KilledStatus || attemptStatuses(t, db, first, "only") != "RUNNING" {
			t.Fatalf("attempt.after_status:kill: exit %d, attempts %s", r.Code, attemptStatuses(t, db, first, "only"))
		}
		expireLeases(t, db)
		if r := p.OK("run", "--pipeline_code", "ONE"); r.Stdout != fmt.Sprintf("ONE: pipeline_run_id=%d SUCCESS\n", first) {
			t.Fatalf("%q", r.Stdout)
		}
		if got := attemptStatuses(t, db, first, "only"); got != "LOST SUCCESS" {
			t.Fatalf("attempts %s", got)
		}
		r = p.Run([]string{fault.Variable + "=child.after_outcome:kill"}, "run", "--pipeline_code", "ONE")
		if r.Code != fault.KilledStatus || attemptStatuses(t, db, first+1, "only") != "SUCCESS" {
			t.Fatalf("child.after_outcome:kill: exit %d, attempts %s", r.Code, attemptStatuses(t, db, first+1, "only"))
		}
		expireLeases(t, db)
		if r := p.OK("run", "--pipeline_code", "ONE"); r.Stdout != fmt.Sprintf("ONE: pipeline_run_id=%d SUCCESS\n", first+1) {
			t.Fatalf("%q", r.Stdout)
		}
	})
}

// Exit codes of single-task runs that record nothing.
func TestSingleTaskRunsThroughTheBinary(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		p.Register("0001_two", e2e.Pipeline("TWO",
			e2e.CreateTable("a", "main.a_t", "SELECT 1 AS id"),
			e2e.CreateTable("b", "main.b_t", "SELECT 1 AS id", "a:SUCCESS"),
		))
		// A run that is left open: its only process is killed before any task.
		r := p.Run([]string{fault.Variable + "=supervisor.after_mkdir:kill"}, "run", "--pipeline_code", "TWO")
		if r.Code != fault.KilledStatus {
			t.Fatalf("exit %d", r.Code)
		}
		db := p.DB()
		expireLeases(t, db)
		p.OK("reconcile")
		r = p.Run(nil, "run", "--pipeline_code", "TWO", "--task_code", "b")
		if r.Code != 23 || r.Stdout != "b: WAITING — its dependencies are not met yet: a (SUCCESS) ended FAILED and may run again\n" {
			t.Fatalf("exit %d %q", r.Code, r.Stdout)
		}
		if r := p.OK("run", "--pipeline_code", "TWO", "--task_code", "a"); r.Stdout != "a: SUCCESS\n" {
			t.Fatalf("%q", r.Stdout)
		}
		if got := attemptStatuses(t, db, 1, "a"); got != "LOST SUCCESS" {
			t.Fatalf("a: %s", got)
		}
		if r := p.OK("run", "--pipeline_code", "TWO", "--task_code", "b", "--format", "json"); schemaOf(t, r) != "etl-craft/task-outcome/1" {
			t.Fatalf("%s", r.Stdout)
		}
		if r := p.OK("run", "--pipeline_code", "TWO"); r.Stdout != "TWO: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("%q", r.Stdout)
		}
	})
}
