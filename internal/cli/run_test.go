package cli_test

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/fault"
)

// sqlTask is one SQL task of a test pipeline: its code, its parameters, and
// its dependencies written "upstream:TYPE".
type sqlTask struct {
	code   string
	params map[string]string
	deps   []string
}

// quote writes a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// sqlPipeline returns a project migration that registers the pipeline
// and its SQL tasks, referring to rows by code as users do.
func sqlPipeline(pipe string, tasks ...sqlTask) string {
	var b strings.Builder
	fmt.Fprintf(&b, "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES (%s, %s, 'FULL');\n", quote(pipe), quote(pipe))
	lookup := func(code string) string {
		return fmt.Sprintf("(SELECT t.TASK_ID FROM CFG_TASKS t JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y' "+
			"WHERE p.PIPELINE_CODE = %s AND t.TASK_CODE = %s AND t.ACTIVE_FLAG = 'Y')", quote(pipe), quote(code))
	}
	for _, t := range tasks {
		fmt.Fprintf(&b, "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT %s, 'ETL', PIPELINE_ID, 'SQL' "+
			"FROM CFG_PIPELINES WHERE PIPELINE_CODE = %s AND ACTIVE_FLAG = 'Y';\n", quote(t.code), quote(pipe))
		names := make([]string, 0, len(t.params))
		for n := range t.params {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(&b, "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) VALUES (%s, %s, %s);\n",
				lookup(t.code), quote(n), quote(t.params[n]))
		}
	}
	for _, t := range tasks {
		for _, d := range t.deps {
			up, typ, _ := strings.Cut(d, ":")
			fmt.Fprintf(&b, "INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE) "+
				"SELECT PIPELINE_ID, %s, %s, %s FROM CFG_PIPELINES WHERE PIPELINE_CODE = %s AND ACTIVE_FLAG = 'Y';\n",
				lookup(t.code), lookup(up), quote(typ), quote(pipe))
		}
	}
	return b.String()
}

// createTable is a CREATE_TABLE task of target from the SELECT.
func createTable(code, target, query string, deps ...string) sqlTask {
	return sqlTask{code: code, deps: deps, params: map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": target, "SOURCE_SQL": query}}
}

// with returns the task with more parameters, given as name, value pairs.
func (t sqlTask) with(nv ...string) sqlTask {
	for i := 0; i+1 < len(nv); i += 2 {
		t.params[nv[i]] = nv[i+1]
	}
	return t
}

// register writes the pipeline's migration and applies it.
func (p *project) register(name, sql string) {
	p.t.Helper()
	p.write("migrations/"+name+".sql", sql)
	p.ok("migrate")
}

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

// scalar reads one text value from the Engine DB.
func scalar(t *testing.T, db *engine.DB, query string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := db.QueryRowContext(context.Background(), query, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return s.String
}

// runLine matches the line a pipeline run prints.
var runLine = regexp.MustCompile(`^(\w+): pipeline_run_id=(\d+) ([A-Z-]+)( — .*)?\n$`)

func TestRunSQLPipelinesOnDuckDB(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		p.register("0001_sales", sqlPipeline("SALES",
			sqlTask{code: "setup_orders", params: map[string]string{"SQL_ACTION": "SETUP_TABLE", "SETUP_FOR": "APPEND_TABLE",
				"TARGET_OBJECT": "main.orders", "SOURCE_SQL": "SELECT 1 AS id, 'x' AS name"}},
			sqlTask{code: "append_orders", deps: []string{"setup_orders:SUCCESS"}, params: map[string]string{"SQL_ACTION": "APPEND_TABLE",
				"TARGET_OBJECT": "main.orders", "SOURCE_SQL": "SELECT 2 AS id, 'b' AS name UNION ALL SELECT 3, 'c'"}},
			createTable("totals", "main.totals", "SELECT count(*) AS n FROM main.orders", "append_orders:HAS_DATA"),
			createTable("on_failure", "main.alarm", "SELECT 1 AS x", "append_orders:FAILURE"),
		))
		r := p.ok("run", "--pipeline_code", "SALES")
		if r.stdout != "SALES: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("stdout %q\nstderr %s", r.stdout, r.stderr)
		}
		db := p.db()
		if got := scalar(t, db, "SELECT STATUS || ' ' || TRIGGER_KIND || ' ' || CAST(RUN_DATE AS VARCHAR) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 1"); got !=
			"SUCCESS MANUAL "+time.Now().UTC().Format(time.DateOnly) {
			t.Fatalf("run row %q", got)
		}
		if key := scalar(t, db, "SELECT RUN_KEY FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 1"); !regexp.MustCompile(`^manual:[0-9a-f-]{36}$`).MatchString(key) {
			t.Fatalf("run key %q", key)
		}
		if got := scalar(t, db, `SELECT t.STATUS FROM AUD_TASK_RUN_LOG t JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE c.TASK_CODE = 'on_failure'`); got != "SKIPPED" {
			t.Fatalf("on_failure %s", got)
		}
		if n := count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'run'"); n != 1 {
			t.Fatalf("%d run actions", n)
		}
		if got := p.duckRows("SELECT n FROM main.totals"); fmt.Sprint(got) != "[2]" {
			t.Fatalf("totals %v", got)
		}
		if h := p.ok("history", "--pipeline_code", "SALES", "--all"); !strings.Contains(h.stdout, "\nSUCCESS\t") && !strings.Contains(h.stdout, "1\tSUCCESS\t") {
			t.Fatalf("history:\n%s", h.stdout)
		}

		// The run ended: a second run is a new run; tasks need a run to bind to.
		r = p.ok("run", "--pipeline_code", "SALES", "--format", "json")
		if schemaOf(t, r) != "etl-craft/run-outcome/1" || !strings.Contains(r.stdout, `"pipeline_run_id": 2`) {
			t.Fatalf("json %s", r.stdout)
		}
		if got := p.duckRows("SELECT count(*) FROM main.orders"); fmt.Sprint(got) != "[4]" {
			t.Fatalf("orders %v", got)
		}
		wantExit(t, p.run(nil, "run", "--pipeline_code", "SALES", "--task_code", "totals"), 9, "matched 0 runs")
		r = p.ok("run", "--pipeline_code", "SALES", "--task_code", "totals", "--run-id", "2")
		if r.stdout != "totals: SUCCESS — already SUCCESS under pipeline_run_id=2; use --force to run it again\n" {
			t.Fatalf("%q", r.stdout)
		}
		wantExit(t, p.run(nil, "run", "--pipeline_code", "SALES", "--run-id", "1", "--run-key", "k"), 2, "pass only one")
		wantExit(t, p.run(nil, "run"), 2, "--pipeline_code is required")
		wantExit(t, p.run(nil, "run", "--pipeline_code", "SALEZ"), 4, "did you mean SALES")
		r = p.ok("reconcile")
		if r.stdout != "reconcile: 0 attempt(s) LOST, 0 run(s) released\n" {
			t.Fatalf("%q", r.stdout)
		}
		if r := p.ok("reconcile", "--pipeline_code", "SALES", "--format", "json"); schemaOf(t, r) != "etl-craft/reconciliation/1" {
			t.Fatalf("%s", r.stdout)
		}
		wantExit(t, p.run(nil, "reconcile", "--task_code", "totals"), 2, "--task_code needs --pipeline_code")

		// A warehouse that does not answer: exit 11 before anything is recorded.
		p.withWarehouse("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: jdbc:postgresql://127.0.0.1:1/nowhere?sslmode=disable\n"+
			"    schema: public\n    auth_mode: password\n    user: nobody\n    secret: WAREHOUSE_SECRET\n", []string{"WAREHOUSE_SECRET=x"})
		wantExit(t, p.run(nil, "run", "--pipeline_code", "SALES"), 11, "warehouse: ")
		if n := count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); n != 2 {
			t.Fatalf("%d runs after a failed connection test", n)
		}
	})
}

// gatedWarehouse replaces the project's warehouse with a fresh PostgreSQL
// database holding public.gate and public.wait_for_gate(), which returns 1
// once the gate is opened; a task selecting it holds until the test opens
// the gate.
func gatedWarehouse(p *project) *sql.DB {
	p.t.Helper()
	yml, env := pgWarehouse(p.t, "public")
	p.withWarehouse(yml, env)
	w := warehouseDB(p.t, yml, env)
	mustExec(p.t, w, "CREATE TABLE public.gate (open INT)", "INSERT INTO public.gate VALUES (0)",
		`CREATE FUNCTION public.wait_for_gate() RETURNS INT LANGUAGE plpgsql AS $$
		BEGIN
			LOOP
				IF (SELECT open FROM public.gate) = 1 THEN RETURN 1; END IF;
				PERFORM pg_sleep(0.02);
			END LOOP;
		END $$`)
	return w
}

// waitFor polls the Engine DB until the count query returns want.
func waitFor(t *testing.T, db *engine.DB, want int, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for count(t, db, query, args...) != want {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %d from %s", want, query)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

const runningHeld = `SELECT count(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG r ON r.TASK_RUN_ID = a.TASK_RUN_ID
	JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID WHERE c.TASK_CODE = 'held' AND a.STATUS = 'RUNNING'`

// gatedProject returns a project on a gated PostgreSQL warehouse whose
// pipeline KP runs first, then held (which waits for the gate), then last;
// with the warehouse and the Engine DB.
func gatedProject(t *testing.T, kind engine.Kind) (*project, *sql.DB, *engine.DB) {
	t.Helper()
	p := newProject(t, kind, "")
	w := gatedWarehouse(p)
	p.ok("init-db")
	p.register("0001_kp", sqlPipeline("KP",
		createTable("first", "public.first_t", "SELECT 1 AS id"),
		createTable("held", "public.held_t", "SELECT public.wait_for_gate() AS opened", "first:SUCCESS"),
		createTable("last", "public.last_t", "SELECT 1 AS id", "held:SUCCESS"),
	))
	return p, w, p.db()
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
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		type exited struct {
			code   int
			stderr string
		}
		done := make(chan exited, 2)
		for range 2 {
			cmd := p.command(nil, "run", "--pipeline_code", "KP")
			var errb strings.Builder
			cmd.Stderr = &errb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() {
				cmd.Wait()
				done <- exited{cmd.ProcessState.ExitCode(), errb.String()}
			}()
		}
		// The supervisor holds its task on the gate until the other process
		// has given up.
		// The loser finds the winner's run supervised, or loses the
		// admission of a run it recorded QUEUED, which stays QUEUED (CH06).
		loser := <-done
		if loser.code != 9 || !strings.Contains(loser.stderr, "is supervised by") && !strings.Contains(loser.stderr, "another process started pipeline_run_id=") {
			t.Fatalf("the second process exited %d: %s", loser.code, loser.stderr)
		}
		mustExec(t, w, "UPDATE public.gate SET open = 1")
		if winner := <-done; winner.code != 0 {
			t.Fatalf("the supervisor exited %d: %s", winner.code, winner.stderr)
		}
		if n := count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS NOT IN ('SUCCESS', 'QUEUED')"); n != 0 ||
			count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'") != 1 {
			t.Fatalf("%d runs neither SUCCESS nor QUEUED", n)
		}
		if n := count(t, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS"); n != 3 {
			t.Fatalf("%d attempts for 3 tasks", n)
		}
	})
}

// CH02, local mode: a second delivery of a task while its attempt runs in
// another process runs nothing, says so and exits 0; the first delivery
// finishes the run with one attempt per task.
func TestADuplicateTaskDeliveryWhileItRunsExitsZero(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		cmd := p.command(nil, "run", "--pipeline_code", "KP")
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, db, 1, runningHeld)
		r := p.run(nil, "run", "--pipeline_code", "KP", "--task_code", "held")
		if r.code != 0 || !strings.HasPrefix(r.stdout, "held: IN-PROGRESS — already IN-PROGRESS under pipeline_run_id=1 (task_run_id=") {
			t.Fatalf("the duplicate delivery exited %d: %q\n%s", r.code, r.stdout, r.stderr)
		}
		if got := attemptStatuses(t, db, 1, "held"); got != "RUNNING" {
			t.Fatalf("held attempts after the duplicate delivery: %s", got)
		}
		mustExec(t, w, "UPDATE public.gate SET open = 1")
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the first delivery: %v\n%s", err, errb.String())
		}
		got := []string{attemptStatuses(t, db, 1, "first"), attemptStatuses(t, db, 1, "held"), attemptStatuses(t, db, 1, "last")}
		if fmt.Sprint(got) != "[SUCCESS SUCCESS SUCCESS]" || scalar(t, db, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG") != "SUCCESS" {
			t.Fatalf("attempts %q", got)
		}
	})
}

func TestASignalStopsTheRunAndTheNextRunResumesIt(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGHUP} {
			cmd := p.command(nil, "run", "--pipeline_code", "KP")
			var out strings.Builder
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, db, 1, runningHeld)
			cmd.Process.Signal(sig)
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != 22 || out.String() !=
				"KP: pipeline_run_id=1 IN-PROGRESS — interrupted: 1 running task(s) were stopped and recorded FAILED; run again to resume\n" {
				t.Fatalf("%s: exit %d, %q", sig, code, out.String())
			}
		}
		if msg := scalar(t, db, "SELECT ERROR_MESSAGE FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_NUMBER = 2 AND STATUS = 'FAILED'"); msg !=
			"was stopped because the run was interrupted" {
			t.Fatalf("attempt message %q", msg)
		}
		mustExec(t, w, "UPDATE public.gate SET open = 1")
		if r := p.ok("run", "--pipeline_code", "KP"); r.stdout != "KP: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("%q", r.stdout)
		}
		if got := attemptStatuses(t, db, 1, "held"); got != "FAILED FAILED SUCCESS" {
			t.Fatalf("held: %s", got)
		}
	})
}

func TestATimedOutWarehouseQueryIsStopped(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		w := gatedWarehouse(p)
		p.ok("init-db")
		p.register("0001_slow", sqlPipeline("SLOW",
			createTable("load", "public.loaded", "SELECT 1 AS id"),
			createTable("slow", "public.slow_t", "SELECT 1 AS x FROM (SELECT pg_sleep(30)) AS s", "load:SUCCESS").
				with("TASK_TIMEOUT_SECONDS", "1", "RETRIES", "1", "RETRY_DELAY_SECONDS", "0"),
		))
		r := p.run(nil, "run", "--pipeline_code", "SLOW")
		m := runLine.FindStringSubmatch(r.stdout)
		if r.code != 1 || m == nil || m[3] != "FAILED" || m[4] != " — 1 task(s) did not succeed: slow (FAILED)" {
			t.Fatalf("exit %d %q\n%s", r.code, r.stdout, r.stderr)
		}
		db := p.db()
		if got := attemptStatuses(t, db, 1, "slow"); got != "TIMED_OUT TIMED_OUT" {
			t.Fatalf("attempts %s", got)
		}
		if msg := scalar(t, db, "SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE STATUS = 'FAILED'"); msg != "timed out after 1s and was stopped" {
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
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		p.register("0001_one", sqlPipeline("ONE", createTable("only", "main.only_t", "SELECT 1 AS id")))
		db := p.db()
		// A new run is recorded QUEUED before its admission, which the
		// kill interrupts: the next run admits that run.
		r := p.run([]string{fault.Variable + "=pipeline.after_insert:kill"}, "run", "--pipeline_code", "ONE")
		if r.code != fault.KilledStatus || count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'QUEUED'") != 1 {
			t.Fatalf("pipeline.after_insert:kill: exit %d, %d runs", r.code, count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"))
		}
		r = p.run([]string{fault.Variable + "=attempt.after_status:kill"}, "run", "--pipeline_code", "ONE")
		// PostgreSQL does not give back the id the killed insert took.
		first := int64(count(t, db, "SELECT max(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG"))
		if r.code != fault.KilledStatus || attemptStatuses(t, db, first, "only") != "RUNNING" {
			t.Fatalf("attempt.after_status:kill: exit %d, attempts %s", r.code, attemptStatuses(t, db, first, "only"))
		}
		expireLeases(t, db)
		if r := p.ok("run", "--pipeline_code", "ONE"); r.stdout != fmt.Sprintf("ONE: pipeline_run_id=%d SUCCESS\n", first) {
			t.Fatalf("%q", r.stdout)
		}
		if got := attemptStatuses(t, db, first, "only"); got != "LOST SUCCESS" {
			t.Fatalf("attempts %s", got)
		}
		r = p.run([]string{fault.Variable + "=child.after_outcome:kill"}, "run", "--pipeline_code", "ONE")
		if r.code != fault.KilledStatus || attemptStatuses(t, db, first+1, "only") != "SUCCESS" {
			t.Fatalf("child.after_outcome:kill: exit %d, attempts %s", r.code, attemptStatuses(t, db, first+1, "only"))
		}
		expireLeases(t, db)
		if r := p.ok("run", "--pipeline_code", "ONE"); r.stdout != fmt.Sprintf("ONE: pipeline_run_id=%d SUCCESS\n", first+1) {
			t.Fatalf("%q", r.stdout)
		}
	})
}

// Exit codes of single-task runs that record nothing.
func TestSingleTaskRunsThroughTheBinary(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		p.register("0001_two", sqlPipeline("TWO",
			createTable("a", "main.a_t", "SELECT 1 AS id"),
			createTable("b", "main.b_t", "SELECT 1 AS id", "a:SUCCESS"),
		))
		// A run that is left open: its only process is killed before any task.
		r := p.run([]string{fault.Variable + "=supervisor.after_mkdir:kill"}, "run", "--pipeline_code", "TWO")
		if r.code != fault.KilledStatus {
			t.Fatalf("exit %d", r.code)
		}
		db := p.db()
		expireLeases(t, db)
		p.ok("reconcile")
		r = p.run(nil, "run", "--pipeline_code", "TWO", "--task_code", "b")
		if r.code != 23 || r.stdout != "b: WAITING — its dependencies are not met yet: a (SUCCESS) ended FAILED and may run again\n" {
			t.Fatalf("exit %d %q", r.code, r.stdout)
		}
		if r := p.ok("run", "--pipeline_code", "TWO", "--task_code", "a"); r.stdout != "a: SUCCESS\n" {
			t.Fatalf("%q", r.stdout)
		}
		if got := attemptStatuses(t, db, 1, "a"); got != "LOST SUCCESS" {
			t.Fatalf("a: %s", got)
		}
		if r := p.ok("run", "--pipeline_code", "TWO", "--task_code", "b", "--format", "json"); schemaOf(t, r) != "etl-craft/task-outcome/1" {
			t.Fatalf("%s", r.stdout)
		}
		if r := p.ok("run", "--pipeline_code", "TWO"); r.stdout != "TWO: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("%q", r.stdout)
		}
	})
}
