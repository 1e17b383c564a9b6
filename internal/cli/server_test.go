package cli_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

// I15: a daily schedule started five days ago with CATCHUP Y and
// MAX_CATCHUP_RUNS 2: the server queues and runs the two latest ticks,
// records the four older ones SKIPPED, and a restart records none again.
func TestServerRunsScheduledTicksWithCatchup(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		start := time.Now().UTC().AddDate(0, 0, -5).Format(time.DateOnly)
		p.Register("0001_sched", e2e.Pipeline("SCHED", e2e.CreateTable("load", "main.sched_t", "SELECT 1 AS id"))+
			fmt.Sprintf("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 0 * * *', SCHEDULE_TIMEZONE = 'UTC', SCHEDULE_START_DATE = '%s', "+
				"CATCHUP = 'Y', MAX_CATCHUP_RUNS = 2 WHERE PIPELINE_CODE = 'SCHED';\n", start))
		db := p.DB()
		d := p.StartServer()
		e2e.WaitFor(t, db, 2, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
		if code := d.Stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, d.Stderr())
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
		if got := e2e.QueryRows(t, db, query); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := e2e.QueryRows(t, db, "SELECT DISTINCT REASON FROM AUD_RUN_INTERVENTIONS WHERE ACTION = 'NEW_RUN' ORDER BY REASON"); strings.Join(got, "|") !=
			"missed while no overseer was running|scheduled tick" {
			t.Fatalf("reasons %q", got)
		}
		if got := e2e.QueryRows(t, db, "SELECT DISTINCT REQUESTED_BY_KIND FROM AUD_RUN_INTERVENTIONS"); strings.Join(got, "|") != "SCHEDULE" {
			t.Fatalf("interventions requested by %q", got)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_OVERSEERS WHERE STOPPED_AT IS NOT NULL AND STOPPED_BY IS NOT NULL"); n != 1 {
			t.Fatalf("%d stopped overseer rows", n)
		}

		// A restart creates none of these ticks again.
		d = p.StartServer()
		time.Sleep(2 * time.Second)
		if code := d.Stop(); code != 0 {
			t.Fatalf("the second server exited %d:\n%s", code, d.Stderr())
		}
		if got := e2e.QueryRows(t, db, query); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("runs after the restart:\n%s", strings.Join(got, "\n"))
		}
	})
}

// I15: one overseer per Engine DB. A second server exits at once naming
// the first; once the first stopped, a new one takes over.
func TestASecondServerExitsNamingTheOverseer(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		db := p.DB()
		first := p.StartServer()
		id := e2e.Scalar(t, db, "SELECT OVERSEER_ID FROM AUD_OVERSEERS WHERE STOPPED_AT IS NULL")
		host, _ := os.Hostname()
		e2e.WantExit(t, p.Run(nil, "server"), 14,
			fmt.Sprintf("another etl-craft server is the overseer of this Engine DB: overseer_id=%s host=%s pid=%d", id, host, first.Pid()))
		if code := first.Stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, first.Stderr())
		}
		second := p.StartServer()
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_OVERSEERS WHERE STOPPED_AT IS NULL"); n != 1 {
			t.Fatalf("%d overseers running", n)
		}
		if got := e2e.QueryRows(t, db, "SELECT PID, VERSION, STARTED_BY_KIND FROM AUD_OVERSEERS WHERE STOPPED_AT IS NULL"); len(got) != 1 ||
			got[0] != fmt.Sprintf("%d 0.1.0 HUMAN", second.Pid()) {
			t.Fatalf("the second overseer's row: %q", got)
		}
		if code := second.Stop(); code != 0 {
			t.Fatalf("the second server exited %d:\n%s", code, second.Stderr())
		}
	})
}

// I15: the server refuses remote mode (exit 10).
func TestTheServerRefusesRemoteMode(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.OK("init-db")
	b, _ := os.ReadFile(p.Dir + "/craft-connector.yml")
	p.Write("craft-connector.yml", strings.Replace(string(b), "Mode: local", "Mode: remote", 1))
	e2e.WantExit(t, p.Run(nil, "server"), 10, "Orchestration.Mode is remote")
}

// I15: `run --init-only` makes a run no process holds; the server executes
// that exact run.
func TestTheServerExecutesAnInitOnlyRun(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		p.Register("0001_io", e2e.Pipeline("IO", e2e.CreateTable("a", "main.io_a", "SELECT 1 AS id"),
			e2e.CreateTable("b", "main.io_b", "SELECT 2 AS id", "a:SUCCESS")))
		if r := p.OK("run", "--pipeline_code", "IO", "--init-only", "--run-key", "ext-1"); !strings.Contains(r.Stdout, "pipeline_run_id=1 IN-PROGRESS") {
			t.Fatalf("%q", r.Stdout)
		}
		db := p.DB()
		d := p.StartServer()
		e2e.WaitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
		d.Stop()
		if got := e2e.QueryRows(t, db, "SELECT PIPELINE_RUN_ID, RUN_KEY, STATUS FROM AUD_PIPELINES_RUN_LOG"); strings.Join(got, "|") != "1 ext-1 SUCCESS" {
			t.Fatalf("runs %q", got)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = 1 AND STATUS = 'SUCCESS'"); n != 2 {
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
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		p.OK("run", "--pipeline_code", "KP", "--init-only")
		d := p.StartServer()
		e2e.WaitFor(t, db, 1, runningHeld)
		d.Kill()
		e2e.MustExec(t, w, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%wait_for_gate%' AND pid <> pg_backend_pid()")

		d = p.StartServer()
		e2e.WaitFor(t, db, 1, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = 'LOST'")
		e2e.WaitFor(t, db, 1, runningHeld)
		e2e.MustExec(t, w, "UPDATE public.gate SET open = 1")
		e2e.WaitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
		if code := d.Stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, d.Stderr())
		}
		got := []string{attemptStatuses(t, db, 1, "first"), attemptStatuses(t, db, 1, "held"), attemptStatuses(t, db, 1, "last")}
		if fmt.Sprint(got) != "[SUCCESS LOST SUCCESS SUCCESS]" || e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG") != 1 ||
			e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_RUN_LOG") != 3 {
			t.Fatalf("attempts %q", got)
		}
		if n := e2e.Count(t, db, overlapping); n != 0 {
			t.Fatalf("%d pairs of attempts of one task were live at once", n)
		}
	})
}

// I15: SIGTERM with a task running and Shutdown_grace_seconds 2: the server
// waits the grace, stops the task, leaves the run IN-PROGRESS without an
// owner, records its stop, and exits 0.
func TestSIGTERMStopsARunningTaskAfterTheGrace(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p, _, db := gatedProject(t, kind)
		p.Orchestration("  Shutdown_grace_seconds: 2\n")
		p.OK("run", "--pipeline_code", "KP", "--init-only")
		d := p.StartServer()
		e2e.WaitFor(t, db, 1, runningHeld)
		if code := d.Stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, d.Stderr())
		}
		if got := e2e.QueryRows(t, db, "SELECT STATUS, coalesce(OWNER_ID, 'none') FROM AUD_PIPELINES_RUN_LOG"); strings.Join(got, "|") != "IN-PROGRESS none" {
			t.Fatalf("run %q", got)
		}
		if got := attemptStatuses(t, db, 1, "held"); got != "FAILED" {
			t.Fatalf("held's attempts %q", got)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS IN ('CLAIMED', 'RUNNING')"); n != 0 {
			t.Fatalf("%d attempts still live", n)
		}
		if got := e2e.QueryRows(t, db, "SELECT count(*) FROM AUD_OVERSEERS WHERE STOPPED_AT IS NOT NULL AND STOPPED_BY_KIND = 'HUMAN'"); got[0] != "1" {
			t.Fatalf("overseer rows stopped: %q", got)
		}
		// The grace was waited: the attempt ended at least 2 s after the stop began.
		if !strings.Contains(d.Stderr(), "grace=2s") {
			t.Fatalf("stderr:\n%s", d.Stderr())
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
			e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
				p, w, db := gatedProject(t, kind)
				p.Register("0002_sched", fmt.Sprintf("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 * * * *', SCHEDULE_TIMEZONE = 'UTC', "+
					"SCHEDULE_START_DATE = '%s', OVERLAP_POLICY = '%s' WHERE PIPELINE_CODE = 'KP';\n", time.Now().UTC().Format(time.DateOnly), policy))
				slow := p.Command(nil, "run", "--pipeline_code", "KP")
				if err := slow.Start(); err != nil {
					t.Fatal(err)
				}
				e2e.WaitFor(t, db, 1, runningHeld)
				d := p.StartServer()
				// The tick of this hour (the latest due) is recorded after the missed ones.
				key := "schedule:" + time.Now().UTC().Truncate(time.Hour).Format("2006-01-02T15:04:05+00:00")
				e2e.WaitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS IN ('SKIPPED', 'QUEUED') AND RUN_KEY = $1", key)
				latest := "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE RUN_KEY = $1"
				reason := e2e.Scalar(t, db, "SELECT i.REASON FROM AUD_RUN_INTERVENTIONS i JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = i.PIPELINE_RUN_ID "+
					"WHERE r.RUN_KEY = $1", key)
				status := e2e.Scalar(t, db, latest, key)
				switch {
				case policy == "SKIP" && (status != "SKIPPED" || reason != "previous run still active"):
					t.Fatalf("the overlapping tick is %s (%s)", status, reason)
				case policy == "QUEUE" && (status != "QUEUED" || reason != "scheduled tick"):
					t.Fatalf("the overlapping tick is %s (%s)", status, reason)
				}
				// The server leaves the foreground run alone.
				if got := e2e.Scalar(t, db, "SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = 1"); !strings.Contains(got, fmt.Sprintf(":%d:", slow.Process.Pid)) {
					t.Fatalf("the slow run is held by %q, not by its process %d", got, slow.Process.Pid)
				}
				e2e.MustExec(t, w, "UPDATE public.gate SET open = 1")
				if err := slow.Wait(); err != nil {
					t.Fatalf("the slow run: %v", err)
				}
				if policy == "QUEUE" {
					e2e.WaitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE TRIGGER_KIND = 'SCHEDULE' AND STATUS = 'SUCCESS'")
				}
				if code := d.Stop(); code != 0 {
					t.Fatalf("the server exited %d:\n%s", code, d.Stderr())
				}
				if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS IN ('QUEUED', 'IN-PROGRESS')"); n != 0 {
					t.Fatalf("%d runs left open", n)
				}
			})
		})
	}
}

// I15: on PostgreSQL the engine notifies etl_craft_events when a run is
// queued, and the idle server is woken by it rather than by its poll: it
// logs each wake by an event at DEBUG, one per queued run.
func TestAQueuedRunWakesTheServer(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.Postgres, "")
	p.OK("init-db")
	p.Register("0001_wake", e2e.Pipeline("WAKE", e2e.CreateTable("a", "main.wake_a", "SELECT 1 AS id")))
	db := p.DB()
	d := p.StartServerWith(nil, "--log-level", "DEBUG")
	const woken = `msg="an engine event woke the server" event=` + engine.EventQueued
	for i := 1; i <= 3; i++ {
		p.OK("run", "--pipeline_code", "WAKE", "--init-only")
		e2e.WaitFor(t, db, i, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
		// The run's own notification reached the server's LISTEN and woke
		// its loop: the run did not wait for the poll to be found. (The
		// line was written before the run ended; its copy from the pipe
		// may lag.)
		for deadline := time.Now().Add(e2e.Patience); strings.Count(d.Stderr(), woken) < i; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after %d queued runs the server logged %d wakes by a queued event; stderr:\n%s", i, strings.Count(d.Stderr(), woken), d.Stderr())
			}
		}
	}
	if code := d.Stop(); code != 0 {
		t.Fatalf("the server exited %d:\n%s", code, d.Stderr())
	}
}

// The HTTP API of a real server: a run triggered with an operator token is
// executed by that server's overseer to SUCCESS, started by the token's
// name; a viewer token may read it but not trigger; no token is refused.
func TestTheServerServesTheAPIAndRunsWhatItTriggers(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		p.Register("0001_api", e2e.Pipeline("API", e2e.CreateTable("a", "main.api_a", "SELECT 1 AS id")))
		operator, viewer := p.Token("chat-bot", "operator"), p.Token("dashboard", "viewer")
		d := p.StartServer()
		if code, _ := d.Call("", "GET", "/pipelines", ""); code != http.StatusUnauthorized {
			t.Fatalf("no token: %d", code)
		}
		if code, doc := d.Call(viewer, "POST", "/pipelines/API/runs", `{"reason": "from the dashboard"}`); code != http.StatusForbidden {
			t.Fatalf("a viewer's trigger: %d %v", code, doc)
		}
		code, doc := d.Call(operator, "POST", "/pipelines/API/runs", `{"reason": "rerun the mart"}`)
		id, _ := doc["pipeline_run_id"].(float64)
		if code != http.StatusAccepted || id == 0 {
			t.Fatalf("an operator's trigger: %d %v", code, doc)
		}
		db := p.DB()
		e2e.WaitFor(t, db, 1, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1 AND STATUS = 'SUCCESS'", int64(id))
		if code, doc := d.Call(viewer, "GET", fmt.Sprintf("/runs/%d", int64(id)), ""); code != http.StatusOK || doc["status"] != "SUCCESS" || doc["started_by"] != "chat-bot" {
			t.Fatalf("the triggered run, read by a viewer: %d %v", code, doc)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'api trigger' AND ACTOR = 'chat-bot'"); n != 1 {
			t.Fatalf("AUD_ACTIONS holds %d trigger requests", n)
		}
		if code := d.Stop(); code != 0 {
			t.Fatalf("the server stopped with %d; stderr:\n%s", code, d.Stderr())
		}
	})
}

// I33: a server killed (SIGKILL, fault admission.mid_batch:kill) while it
// admits its due runs together, some admitted and not committed, leaves
// every run QUEUED with no attempt, as admitting them one by one would have
// had it died before the first; the next server admits and runs each once.
func TestAServerKilledAdmittingRunsTogetherLeavesThemQueued(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		serverKilledAt(t, kind, "admission.mid_batch", "[QUEUED 5]")
	})
}

// I33: a server killed (SIGKILL, fault runner.after_take:kill) inside the
// transaction that takes a run and starts its first attempt leaves every
// run IN-PROGRESS with no owner and no attempt, as taking the run in a
// transaction of its own would have had it died before the take; the next
// server takes them up at once and runs each once.
func TestAServerKilledTakingARunWithItsAttemptLeavesItUntaken(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		serverKilledAt(t, kind, "runner.after_take", "[IN-PROGRESS 5]")
	})
}

// serverKilledAt registers five pipelines of one task, each with a daily
// tick due at once, and runs a server killed at the fault point: the runs
// must then have the statuses want (as "[STATUS count]"), no owner and no
// attempt. A second server must run each once.
func serverKilledAt(t *testing.T, kind engine.Kind, point, want string) {
	p := newProject(t, kind, "")
	p.OK("init-db")
	const n = 5
	start := time.Now().UTC().Format(time.DateOnly)
	var sql strings.Builder
	for i := range n {
		code := fmt.Sprintf("KILL%d", i)
		sql.WriteString(e2e.Pipeline(code, e2e.CreateTable("load", fmt.Sprintf("main.kill_%d", i), fmt.Sprintf("SELECT %d AS id", i))))
	}
	// One daily tick due at once for each, recorded in one transaction.
	fmt.Fprintf(&sql, "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 0 * * *', SCHEDULE_TIMEZONE = 'UTC', SCHEDULE_START_DATE = '%s';\n", start)
	p.Register("0001_kill", sql.String())
	db := p.DB()
	d := p.StartServer("ETL_CRAFT_FAULT=" + point + ":kill")
	deadline := time.Now().Add(e2e.Patience)
	for !d.Exited() {
		if time.Now().After(deadline) {
			d.Kill()
			t.Fatalf("the server did not reach %s:\n%s", point, d.Stderr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	d.Kill() // reaps it
	if got := e2e.QueryRows(t, db, "SELECT STATUS, count(*) FROM AUD_PIPELINES_RUN_LOG GROUP BY STATUS"); fmt.Sprint(got) != want ||
		e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE OWNER_ID IS NOT NULL") != 0 ||
		e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS") != 0 {
		t.Fatalf("runs after the kill at %s: %q; want %s, no owner, no attempt\n%s", point, got, want, d.Stderr())
	}

	d = p.StartServer()
	e2e.WaitFor(t, db, n, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
	if code := d.Stop(); code != 0 {
		t.Fatalf("the server exited %d:\n%s", code, d.Stderr())
	}
	if got := e2e.QueryRows(t, db, "SELECT STATUS, count(*) FROM AUD_TASK_ATTEMPTS GROUP BY STATUS"); fmt.Sprint(got) != fmt.Sprintf("[SUCCESS %d]", n) {
		t.Fatalf("attempts %q, want one SUCCESS a run", got)
	}
}
