package concurrency_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
	"github.com/etl-craft/etl-craft/internal/records"
)

// rounds are the workload's two runs: on a fresh warehouse (every target,
// the load ledger and every sequence made by the first use, eight at
// once), then on the warm one those runs left.
var rounds = []string{"fresh", "warm"}

// project is a project holding the workload, with the SMTP server its
// alerts send to.
type project struct {
	*e2e.Project
	mail *mailtest.Server
	db   *engine.DB
}

// newProject writes a project of the pair running parallel tasks at once,
// with the workload registered, ready to run.
func newProject(t *testing.T, pair e2e.Pair, parallel int, migration, extra string) *project {
	t.Helper()
	p := &project{Project: e2e.New(t, pair, extra), mail: mailtest.Start(t, mailtest.Options{})}
	p.Orchestration(fmt.Sprintf("  Max_parallel_tasks: %d\n  Email:\n    host: %s\n    port: %d\n    from_address: etl@example.com\n    tls_mode: none\n",
		parallel, p.mail.Host, p.mail.Port))
	p.OK("init-db")
	for name, text := range scripts {
		p.Write("ingestion_scripts/"+name, text)
	}
	p.Register("0001_workload", migration)
	p.db = p.DB()
	return p
}

// checkRound fails the test unless every run ended SUCCESS, every task run
// has exactly one attempt, SUCCESS, and the alerts of the rounds so far
// sent one mail per lane each.
func (p *project) checkRound(t *testing.T, round int) {
	t.Helper()
	failed := e2e.QueryRows(t, p.db, `SELECT c.TASK_CODE, a.ATTEMPT_NUMBER, a.STATUS, coalesce(a.ERROR_MESSAGE, '') FROM AUD_TASK_ATTEMPTS a
		JOIN AUD_TASK_RUN_LOG r ON r.TASK_RUN_ID = a.TASK_RUN_ID JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID
		WHERE a.STATUS <> $1 OR a.ATTEMPT_NUMBER <> 1 ORDER BY a.ATTEMPT_ID`, records.AttemptSuccess)
	if bad := e2e.QueryRows(t, p.db, "SELECT PIPELINE_RUN_ID, STATUS FROM AUD_PIPELINES_RUN_LOG WHERE STATUS <> $1", records.RunSuccess); len(bad) > 0 {
		t.Fatalf("runs that did not succeed: %q; attempts that were not a first attempt's SUCCESS:\n%s", bad, strings.Join(failed, "\n"))
	}
	if len(failed) > 0 {
		t.Fatalf("attempts that were not a first attempt's SUCCESS:\n%s", strings.Join(failed, "\n"))
	}
	if n, want := e2e.Count(t, p.db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS"), round*lanes*len(kinds); n != want {
		t.Fatalf("%d attempts after %d round(s), want %d", n, round, want)
	}
	var to []string
	for _, m := range p.mail.Messages() {
		to = append(to, m.To...)
	}
	slices.Sort(to)
	var want []string
	for lane := 1; lane <= lanes; lane++ {
		for range round {
			want = append(want, fmt.Sprintf("lane%d@example.com", lane))
		}
	}
	slices.Sort(want)
	if !slices.Equal(to, want) {
		t.Fatalf("mails sent to %q, want %q", to, want)
	}
}

// snapshot reads what the workload left in the warehouse and the Engine DB.
func (p *project) snapshot(t *testing.T) snapshot {
	t.Helper()
	s := snapshot{"flagged": e2e.QueryRows(t, p.db, flagged)}
	for name, q := range targets {
		s[name] = p.WarehouseRows(q)
	}
	return s
}

// sequential is the reference: the workload run one task after the other
// (one pipeline, Max_parallel_tasks 1) on SQLite and DuckDB, and what it
// left after each round. The first test to need it runs it; the others
// wait for it.
var sequential struct {
	sync.Mutex
	done      bool
	failed    bool
	snapshots []snapshot
}

// reference returns the sequential run's snapshot after each round.
func reference(t *testing.T) []snapshot {
	t.Helper()
	sequential.Lock()
	defer sequential.Unlock()
	if !sequential.done {
		sequential.done, sequential.failed = true, true
		t.Log("running the workload one task after the other, for the reference")
		p := newProject(t, e2e.SQLiteDuckDB, 1, allInOne(), "")
		for i := range rounds {
			p.OK("run", "--pipeline_code", "ALL")
			p.checkRound(t, i+1)
			sequential.snapshots = append(sequential.snapshots, p.snapshot(t))
		}
		sequential.failed = false
	}
	if sequential.failed {
		t.Fatal("the sequential reference run failed: see the test that ran it")
	}
	return sequential.snapshots
}

// compare fails the test unless got holds what the reference run left.
func compare(t *testing.T, round string, got, want snapshot) {
	t.Helper()
	var diffs []string
	for name := range want {
		if !slices.Equal(got[name], want[name]) {
			diffs = append(diffs, fmt.Sprintf("%s holds\n  %s\nbut one task after the other leaves\n  %s",
				name, strings.Join(got[name], "\n  "), strings.Join(want[name], "\n  ")))
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		t.Fatalf("after the %s round:\n%s", round, strings.Join(diffs, "\n"))
	}
}

// Every handler eight tasks wide, under one foreground run with
// Max_parallel_tasks 8, on every pair of databases: on a fresh warehouse
// and on the warm one, every attempt succeeds at once and every target
// holds exactly what the same tasks leave one after the other.
func TestEveryHandlerEightWideUnderOneRun(t *testing.T) {
	t.Parallel()
	e2e.EachPair(t, func(t *testing.T, pair e2e.Pair) {
		p := newProject(t, pair, lanes, allInOne(), "")
		var got []snapshot
		for i := range rounds {
			if r := p.OK("run", "--pipeline_code", "ALL"); !strings.HasSuffix(r.Stdout, " SUCCESS\n") {
				t.Fatalf("run: %s", r.Stdout)
			}
			p.checkRound(t, i+1)
			got = append(got, p.snapshot(t))
		}
		want := reference(t)
		for i, round := range rounds {
			compare(t, round, got[i], want[i])
		}
	})
}

// Every handler eight tasks wide under the server, as eight pipelines
// (one per lane, so tasks of different pipelines write one target with one
// action: appends to one table, merges into one table) triggered together
// through the API in the first round and from eight console sessions at
// once in the second, with Max_parallel_tasks 8 and cloning after each run,
// and `etl-craft clone` started while they run; a server for each round,
// stopped at its end so that the test may read a DuckDB file: every attempt succeeds,
// every target holds what the tasks leave one after the other, and the
// mirrors afterwards are what a full clone writes.
func TestEveryHandlerEightWideUnderTheServer(t *testing.T) {
	t.Parallel()
	e2e.EachPair(t, func(t *testing.T, pair e2e.Pair) {
		p := newProject(t, pair, lanes, perLane(), "Cloning:\n  dev:\n    Enabled: true\n    Scope: all\n")
		token := p.Token("ops", "operator")
		var got []snapshot
		for i := range rounds {
			s := p.StartServer()
			var ids []int64
			if i == 0 {
				ids = make([]int64, lanes)
				for lane := range ids {
					ids[lane] = s.Trigger(token, fmt.Sprintf("LANE%d", lane+1))
				}
			} else {
				ids = consoleTriggers(t, s, token)
			}
			var clone e2e.Result
			cloned := make(chan struct{})
			if i == 0 {
				go func() { defer close(cloned); clone = p.Run(nil, "clone") }()
			} else {
				close(cloned)
			}
			e2e.WaitRunsEnded(t, p.db, ids...)
			<-cloned
			if code := s.Stop(); code != 0 {
				t.Fatalf("the server exited %d:\n%s", code, s.Stderr())
			}
			if clone.Code != 0 {
				t.Fatalf("the clone started while the tasks ran exited %d:\n%s", clone.Code, clone.Stderr)
			}
			p.checkRound(t, i+1)
			got = append(got, p.snapshot(t))
		}
		p.checkMirrors(t)
		want := reference(t)
		for i, round := range rounds {
			compare(t, round, got[i], want[i])
		}
	})
}

// runIDFlash finds the run id in the flash of the console's trigger.
var runIDFlash = regexp.MustCompile(`pipeline_run_id=(\d+)`)

// consoleTriggers signs in to the server's console eight times with the
// token, posts each lane's trigger form from its own session, the eight at
// once, and returns the runs' ids, read from each page's flash.
func consoleTriggers(t *testing.T, s *e2e.Server, token string) []int64 {
	t.Helper()
	consoles, csrf := make([]*e2e.Console, lanes), make([]string, lanes)
	for lane := range consoles {
		consoles[lane] = e2e.SignIn(t, s.API, token)
		csrf[lane] = consoles[lane].CSRF()
	}
	type answer struct {
		status   int
		location string
	}
	answers := make([]answer, lanes)
	var wg sync.WaitGroup
	for lane, c := range consoles {
		wg.Go(func() {
			form := url.Values{"reason": {"from the console"}}
			answers[lane].status, answers[lane].location, _ = c.Post(fmt.Sprintf("/pipelines/LANE%d/trigger", lane+1), csrf[lane], form)
		})
	}
	wg.Wait()
	ids := make([]int64, lanes)
	for lane, c := range consoles {
		_, page := c.Get(answers[lane].location)
		m := runIDFlash.FindStringSubmatch(page)
		if answers[lane].status != http.StatusSeeOther || m == nil {
			t.Fatalf("LANE%d's trigger from the console: %d to %s\n%s", lane+1, answers[lane].status, answers[lane].location, page)
		}
		ids[lane], _ = strconv.ParseInt(m[1], 10, 64)
	}
	return ids
}

// checkMirrors fails the test unless the mirrors, caught up by one more
// clone after the clones that ran beside the tasks, are what a full clone
// writes: the same rows in every copy (AUD_ACTIONS only gains the full
// clone's own request).
func (p *project) checkMirrors(t *testing.T) {
	t.Helper()
	p.OK("clone")
	caught := p.mirrors(t)
	p.OK("clone", "--full")
	full := p.mirrors(t)
	if len(full) == 0 || len(caught) != len(full) {
		t.Fatalf("%d mirrors after the clones, %d after a full clone", len(caught), len(full))
	}
	for name, rows := range full {
		got := caught[name]
		if name == "AUD_ACTIONS" && len(rows) == len(got)+1 {
			rows = rows[:len(got)]
		}
		if !slices.Equal(got, rows) {
			t.Errorf("the mirror %s holds\n  %s\nbut a full clone writes\n  %s", name, strings.Join(got, "\n  "), strings.Join(rows, "\n  "))
		}
	}
}

// mirrors reads every mirror's rows, in the order of their first column.
func (p *project) mirrors(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, name := range p.WarehouseRows("SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' " +
		"AND (table_name LIKE 'CFG\\_%' ESCAPE '\\' OR table_name LIKE 'AUD\\_%' ESCAPE '\\') ORDER BY table_name") {
		out[name] = p.WarehouseRows(`SELECT * FROM main."` + name + `" ORDER BY 1`)
	}
	return out
}
