package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// daemon is a server process of the built binary.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *strings.Builder
	done   chan struct{}
	// api is the base URL of the server's HTTP API.
	api string
}

// startServer starts `etl-craft server` and waits until it is the overseer
// (it prints overseer_id=<id> started).
func startServer(t *testing.T, p *project) *daemon {
	t.Helper()
	cmd := p.command(nil, "server")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{t: t, cmd: cmd, stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		api, _ := r.ReadString('\n')
		started <- line + api
		io.Copy(io.Discard, r)
	}()
	go func() { cmd.Wait(); close(d.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-d.done })
	select {
	case line := <-started:
		overseer, api, _ := strings.Cut(line, "\n")
		if !strings.HasPrefix(overseer, "overseer_id=") || !strings.HasPrefix(api, "api=http://") {
			t.Fatalf("the server printed %q; stderr:\n%s", line, d.stderr)
		}
		d.api = strings.TrimSpace(strings.TrimPrefix(api, "api="))
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not start; stderr:\n%s", d.stderr)
	}
	return d
}

// stop sends SIGTERM and returns the exit status.
func (d *daemon) stop() int {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(90 * time.Second):
		d.t.Fatalf("the server did not stop; stderr:\n%s", d.stderr)
	}
	return d.cmd.ProcessState.ExitCode()
}

// kill ends the server as a crash would.
func (d *daemon) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// orchestration adds settings to the Orchestration section.
func (p *project) orchestration(lines string) {
	p.t.Helper()
	b, err := os.ReadFile(p.dir + "/craft-connector.yml")
	if err != nil {
		p.t.Fatal(err)
	}
	p.write("craft-connector.yml", strings.Replace(string(b), "  Mode: local\n", "  Mode: local\n"+lines, 1))
}

// rows returns the query's rows, each as its columns joined by spaces.
func rows(t *testing.T, db *engine.DB, query string) []string {
	t.Helper()
	rs, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out []string
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// I15: a daily schedule started five days ago with CATCHUP Y and
// MAX_CATCHUP_RUNS 2: the server queues and runs the two latest ticks,
// records the four older ones SKIPPED, and a restart records none again.
func TestServerRunsScheduledTicksWithCatchup(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		start := time.Now().UTC().AddDate(0, 0, -5).Format(time.DateOnly)
		p.register("0001_sched", sqlPipeline("SCHED", createTable("load", "main.sched_t", "SELECT 1 AS id"))+
			fmt.Sprintf("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 0 * * *', SCHEDULE_TIMEZONE = 'UTC', SCHEDULE_START_DATE = '%s', "+
				"CATCHUP = 'Y', MAX_CATCHUP_RUNS = 2 WHERE PIPELINE_CODE = 'SCHED';\n", start))
		db := p.db()
		d := startServer(t, p)
		waitFor(t, db, 2, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
		if code := d.stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, d.stderr)
		}
		today := time.Now().UTC()
		var want []string
		for i := 5; i >= 0; i-- {
			day := today.AddDate(0, 0, -i).Format(time.DateOnly)
			status := "SKIPPED"
			if i < 2 {
				status = "SUCCESS"
			}
			want = append(want, fmt.Sprintf("schedule:%sT00:00:00+00:00 %s SCHEDULE %s", day, day, status))
		}
		query := "SELECT RUN_KEY, CAST(RUN_DATE AS VARCHAR), TRIGGER_KIND, STATUS FROM AUD_PIPELINES_RUN_LOG ORDER BY RUN_KEY"
		if got := rows(t, db, query); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := rows(t, db, "SELECT DISTINCT REASON FROM AUD_RUN_INTERVENTIONS WHERE ACTION = 'NEW_RUN' ORDER BY REASON"); strings.Join(got, "|") !=
			"missed while no overseer was running|scheduled tick" {
			t.Fatalf("reasons %q", got)
		}
		if got := rows(t, db, "SELECT DISTINCT REQUESTED_BY_KIND FROM AUD_RUN_INTERVENTIONS"); strings.Join(got, "|") != "SCHEDULE" {
			t.Fatalf("interventions requested by %q", got)
		}
		if n := count(t, db, "SELECT count(*) FROM AUD_OVERSEERS WHERE STOPPED_AT IS NOT NULL AND STOPPED_BY IS NOT NULL"); n != 1 {
			t.Fatalf("%d stopped overseer rows", n)
		}

		// A restart creates none of these ticks again.
		d = startServer(t, p)
		time.Sleep(2 * time.Second)
		if code := d.stop(); code != 0 {
			t.Fatalf("the second server exited %d:\n%s", code, d.stderr)
		}
		if got := rows(t, db, query); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("runs after the restart:\n%s", strings.Join(got, "\n"))
		}
	})
}

// I15: one overseer per Engine DB. A second server exits at once naming
// the first; once the first stopped, a new one takes over.
func TestASecondServerExitsNamingTheOverseer(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		db := p.db()
		first := startServer(t, p)
		id := scalar(t, db, "SELECT OVERSEER_ID FROM AUD_OVERSEERS WHERE STOPPED_AT IS NULL")
		host, _ := os.Hostname()
		wantExit(t, p.run(nil, "server"), 14,
			fmt.Sprintf("another etl-craft server is the overseer of this Engine DB: overseer_id=%s host=%s pid=%d", id, host, first.cmd.Process.Pid))
		if code := first.stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, first.stderr)
		}
		second := startServer(t, p)
		if n := count(t, db, "SELECT count(*) FROM AUD_OVERSEERS WHERE STOPPED_AT IS NULL"); n != 1 {
			t.Fatalf("%d overseers running", n)
		}
		if got := rows(t, db, "SELECT PID, VERSION, STARTED_BY_KIND FROM AUD_OVERSEERS WHERE STOPPED_AT IS NULL"); len(got) != 1 ||
			got[0] != fmt.Sprintf("%d 0.1.0 HUMAN", second.cmd.Process.Pid) {
			t.Fatalf("the second overseer's row: %q", got)
		}
		if code := second.stop(); code != 0 {
			t.Fatalf("the second server exited %d:\n%s", code, second.stderr)
		}
	})
}

// I15: the server refuses remote mode (exit 10).
func TestTheServerRefusesRemoteMode(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.ok("init-db")
	b, _ := os.ReadFile(p.dir + "/craft-connector.yml")
	p.write("craft-connector.yml", strings.Replace(string(b), "Mode: local", "Mode: remote", 1))
	wantExit(t, p.run(nil, "server"), 10, "Orchestration.Mode is remote")
}

// I15: `run --init-only` makes a run no process holds; the server executes
// that exact run.
func TestTheServerExecutesAnInitOnlyRun(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		p.register("0001_io", sqlPipeline("IO", createTable("a", "main.io_a", "SELECT 1 AS id"),
			createTable("b", "main.io_b", "SELECT 2 AS id", "a:SUCCESS")))
		if r := p.ok("run", "--pipeline_code", "IO", "--init-only", "--run-key", "ext-1"); !strings.Contains(r.stdout, "pipeline_run_id=1 IN-PROGRESS") {
			t.Fatalf("%q", r.stdout)
		}
		db := p.db()
		d := startServer(t, p)
		waitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
		d.stop()
		if got := rows(t, db, "SELECT PIPELINE_RUN_ID, RUN_KEY, STATUS FROM AUD_PIPELINES_RUN_LOG"); strings.Join(got, "|") != "1 ext-1 SUCCESS" {
			t.Fatalf("runs %q", got)
		}
		if n := count(t, db, "SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = 1 AND STATUS = 'SUCCESS'"); n != 2 {
			t.Fatalf("%d tasks SUCCESS", n)
		}
	})
}

// overlapping counts the pairs of attempts of one task whose lives
// (claimed to ended, or still going) overlap.
const overlapping = `SELECT count(*) FROM AUD_TASK_ATTEMPTS x JOIN AUD_TASK_ATTEMPTS y
	ON x.TASK_RUN_ID = y.TASK_RUN_ID AND x.ATTEMPT_ID < y.ATTEMPT_ID
	WHERE y.CLAIMED_AT < coalesce(x.ENDED_AT, y.CLAIMED_AT)`

// I15: a server killed with SIGKILL while a task runs: the next server
// records the attempt LOST, resumes the same run and task run, and the run
// ends SUCCESS; no task ever had two live attempts.
func TestAKilledServerIsRecoveredByTheNext(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		p.ok("run", "--pipeline_code", "KP", "--init-only")
		d := startServer(t, p)
		waitFor(t, db, 1, runningHeld)
		d.kill()
		mustExec(t, w, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%wait_for_gate%' AND pid <> pg_backend_pid()")

		d = startServer(t, p)
		waitFor(t, db, 1, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = 'LOST'")
		waitFor(t, db, 1, runningHeld)
		mustExec(t, w, "UPDATE public.gate SET open = 1")
		waitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
		if code := d.stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, d.stderr)
		}
		got := []string{attemptStatuses(t, db, 1, "first"), attemptStatuses(t, db, 1, "held"), attemptStatuses(t, db, 1, "last")}
		if fmt.Sprint(got) != "[SUCCESS LOST SUCCESS SUCCESS]" || count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG") != 1 ||
			count(t, db, "SELECT count(*) FROM AUD_TASK_RUN_LOG") != 3 {
			t.Fatalf("attempts %q", got)
		}
		if n := count(t, db, overlapping); n != 0 {
			t.Fatalf("%d pairs of attempts of one task were live at once", n)
		}
	})
}

// I15: SIGTERM with a task running and Shutdown_grace_seconds 2: the server
// waits the grace, stops the task, leaves the run IN-PROGRESS without an
// owner, records its stop, and exits 0.
func TestSIGTERMStopsARunningTaskAfterTheGrace(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p, _, db := gatedProject(t, kind)
		p.orchestration("  Shutdown_grace_seconds: 2\n")
		p.ok("run", "--pipeline_code", "KP", "--init-only")
		d := startServer(t, p)
		waitFor(t, db, 1, runningHeld)
		if code := d.stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, d.stderr)
		}
		if got := rows(t, db, "SELECT STATUS, coalesce(OWNER_ID, 'none') FROM AUD_PIPELINES_RUN_LOG"); strings.Join(got, "|") != "IN-PROGRESS none" {
			t.Fatalf("run %q", got)
		}
		if got := attemptStatuses(t, db, 1, "held"); got != "FAILED" {
			t.Fatalf("held's attempts %q", got)
		}
		if n := count(t, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS IN ('CLAIMED', 'RUNNING')"); n != 0 {
			t.Fatalf("%d attempts still live", n)
		}
		if got := rows(t, db, "SELECT count(*) FROM AUD_OVERSEERS WHERE STOPPED_AT IS NOT NULL AND STOPPED_BY_KIND = 'HUMAN'"); got[0] != "1" {
			t.Fatalf("overseer rows stopped: %q", got)
		}
		// The grace was waited: the attempt ended at least 2 s after the stop began.
		if !strings.Contains(d.stderr.String(), "grace=2s") {
			t.Fatalf("stderr:\n%s", d.stderr)
		}
	})
}

// I15: a tick due while a slow run is in progress: OVERLAP_POLICY SKIP
// records it SKIPPED ("previous run still active"); QUEUE keeps it QUEUED
// and the server runs it once the slow run has ended.
func TestOverlapPolicies(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"SKIP", "QUEUE"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			eachKind(t, func(t *testing.T, kind engine.Kind) {
				p, w, db := gatedProject(t, kind)
				p.register("0002_sched", fmt.Sprintf("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 * * * *', SCHEDULE_TIMEZONE = 'UTC', "+
					"SCHEDULE_START_DATE = '%s', OVERLAP_POLICY = '%s' WHERE PIPELINE_CODE = 'KP';\n", time.Now().UTC().Format(time.DateOnly), policy))
				slow := p.command(nil, "run", "--pipeline_code", "KP")
				if err := slow.Start(); err != nil {
					t.Fatal(err)
				}
				waitFor(t, db, 1, runningHeld)
				d := startServer(t, p)
				// The tick of this hour (the latest due) is recorded after the missed ones.
				key := "schedule:" + time.Now().UTC().Truncate(time.Hour).Format("2006-01-02T15:04:05+00:00")
				waitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS IN ('SKIPPED', 'QUEUED') AND RUN_KEY = $1", key)
				latest := "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE RUN_KEY = $1"
				reason := scalar(t, db, "SELECT i.REASON FROM AUD_RUN_INTERVENTIONS i JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = i.PIPELINE_RUN_ID "+
					"WHERE r.RUN_KEY = $1", key)
				status := scalar(t, db, latest, key)
				switch {
				case policy == "SKIP" && (status != "SKIPPED" || reason != "previous run still active"):
					t.Fatalf("the overlapping tick is %s (%s)", status, reason)
				case policy == "QUEUE" && (status != "QUEUED" || reason != "scheduled tick"):
					t.Fatalf("the overlapping tick is %s (%s)", status, reason)
				}
				// The server leaves the foreground run alone.
				if got := scalar(t, db, "SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 1"); !strings.Contains(got, fmt.Sprintf(":%d:", slow.Process.Pid)) {
					t.Fatalf("the slow run is held by %q, not by its process %d", got, slow.Process.Pid)
				}
				mustExec(t, w, "UPDATE public.gate SET open = 1")
				if err := slow.Wait(); err != nil {
					t.Fatalf("the slow run: %v", err)
				}
				if policy == "QUEUE" {
					waitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE TRIGGER_KIND = 'SCHEDULE' AND STATUS = 'SUCCESS'")
				}
				if code := d.stop(); code != 0 {
					t.Fatalf("the server exited %d:\n%s", code, d.stderr)
				}
				if n := count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS IN ('QUEUED', 'IN-PROGRESS')"); n != 0 {
					t.Fatalf("%d runs left open", n)
				}
			})
		})
	}
}

// I15: on PostgreSQL the engine notifies etl_craft_events when a run is
// queued, and the idle server starts it at once: the first task started
// well within the one-second poll of the run's creation, by the run's own
// timestamps.
func TestAQueuedRunWakesTheServer(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.Postgres, "")
	p.ok("init-db")
	p.register("0001_wake", sqlPipeline("WAKE", createTable("a", "main.wake_a", "SELECT 1 AS id")))
	db := p.db()
	d := startServer(t, p)
	time.Sleep(1500 * time.Millisecond) // idle past its first polls
	for i := 1; i <= 3; i++ {
		p.ok("run", "--pipeline_code", "WAKE", "--init-only")
		waitFor(t, db, i, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
	}
	d.stop()
	// Each run's first attempt was claimed well within a poll of the run's start.
	delays := rows(t, db, `SELECT EXTRACT(EPOCH FROM (min(a.CLAIMED_AT) - r.START_DATE)) FROM AUD_PIPELINES_RUN_LOG r
		JOIN AUD_TASK_RUN_LOG t ON t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID JOIN AUD_TASK_ATTEMPTS a ON a.TASK_RUN_ID = t.TASK_RUN_ID
		GROUP BY r.PIPELINE_RUN_ID, r.START_DATE ORDER BY r.PIPELINE_RUN_ID`)
	worst := 0.0
	for _, s := range delays {
		var f float64
		fmt.Sscan(s, &f)
		worst = max(worst, f)
	}
	if len(delays) != 3 || worst >= 0.5 {
		t.Fatalf("delays from the run's start to its first attempt: %q (s); the LISTEN path starts a run well under the 1 s poll", delays)
	}
}

// The HTTP API of a real server: a run triggered with an operator token is
// executed by that server's overseer to SUCCESS, started by the token's
// name; a viewer token may read it but not trigger; no token is refused.
func TestTheServerServesTheAPIAndRunsWhatItTriggers(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		p.register("0001_api", sqlPipeline("API", createTable("a", "main.api_a", "SELECT 1 AS id")))
		tokenOf := func(name, role string) string {
			r := p.ok("token", "create", "--name", name, "--role", role, "--format", "json")
			var doc struct {
				Value string `json:"value"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || doc.Value == "" {
				t.Fatalf("token create: %v %q", err, r.stdout)
			}
			return doc.Value
		}
		operator, viewer := tokenOf("chat-bot", "operator"), tokenOf("dashboard", "viewer")
		d := startServer(t, p)
		call := func(token, method, path, body string) (int, map[string]any) {
			t.Helper()
			req, err := http.NewRequest(method, d.api+"/api/v1"+path, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var doc map[string]any
			json.NewDecoder(resp.Body).Decode(&doc)
			return resp.StatusCode, doc
		}
		if code, _ := call("", "GET", "/pipelines", ""); code != http.StatusUnauthorized {
			t.Fatalf("no token: %d", code)
		}
		if code, doc := call(viewer, "POST", "/pipelines/API/runs", `{"reason": "from the dashboard"}`); code != http.StatusForbidden {
			t.Fatalf("a viewer's trigger: %d %v", code, doc)
		}
		code, doc := call(operator, "POST", "/pipelines/API/runs", `{"reason": "rerun the mart"}`)
		id, _ := doc["pipeline_run_id"].(float64)
		if code != http.StatusAccepted || id == 0 {
			t.Fatalf("an operator's trigger: %d %v", code, doc)
		}
		db := p.db()
		waitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1 AND STATUS = 'SUCCESS'", int64(id))
		if code, doc := call(viewer, "GET", fmt.Sprintf("/runs/%d", int64(id)), ""); code != http.StatusOK || doc["status"] != "SUCCESS" || doc["started_by"] != "chat-bot" {
			t.Fatalf("the triggered run, read by a viewer: %d %v", code, doc)
		}
		if n := count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'api trigger' AND ACTOR = 'chat-bot'"); n != 1 {
			t.Fatalf("AUD_ACTIONS holds %d trigger requests", n)
		}
		if code := d.stop(); code != 0 {
			t.Fatalf("the server stopped with %d; stderr:\n%s", code, d.stderr)
		}
	})
}
