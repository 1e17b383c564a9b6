package chaos_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Environment variables of the chaos test.
const (
	// seedVariable replays a run of the test: its value is the seed a
	// failed run printed.
	seedVariable = "ETL_CRAFT_CHAOS_SEED"
	// longVariable, set to anything, runs the long form: more pipelines,
	// more waves of runs, every pair of databases (and a PostgreSQL
	// warehouse in the Engine DB's own database).
	longVariable = "ETL_CRAFT_CHAOS_LONG"
)

// faultPoints are the moments a server is killed at exactly
// (ETL_CRAFT_FAULT=<point>:kill), besides the timed kills.
var faultPoints = []string{
	"runner.after_take",          // a server's run taken with its first attempt, not committed
	"runner.after_bind",          // an attempt just bound, its work not started
	"sql.before_commit",          // a SQL action's writes done, not committed
	"sql.after_commit",           // committed in the warehouse, the outcome not recorded
	"script.after_load",          // a script's load published, the outcome not recorded
	"attempt.after_status",       // inside the Engine DB transaction recording an outcome
	"child.after_outcome",        // an outcome just committed
	"pipeline.after_consumption", // inside the transaction ending a run
	"clone.after_rows",           // the after-run clone's rows copied, not committed
	"admission.mid_batch",        // some of a batch of runs admitted together, not committed
}

// size is how much chaos a test makes.
type size struct {
	pipelines int
	waves     int // runs of each pipeline
	// chaosFor is how long the servers of a wave are killed at most;
	// after it, a server is left to end the wave's runs.
	chaosFor time.Duration
	pairs    []e2e.Pair
}

// chaosSize returns the bounded form CI runs, or the long form.
func chaosSize() size {
	if os.Getenv(longVariable) != "" {
		return size{pipelines: 40, waves: 6, chaosFor: 3 * time.Minute, pairs: append(slices.Clone(e2e.Pairs), e2e.OnePostgres)}
	}
	return size{pipelines: 24, waves: 2, chaosFor: time.Minute, pairs: []e2e.Pair{e2e.SQLiteDuckDB}}
}

// seeded returns the test's random source, from ETL_CRAFT_CHAOS_SEED when
// it is set, and prints the seed when the test fails, so that the failure
// can be replayed.
func seeded(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedVariable); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q is not a seed", seedVariable, v)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with %s=%d", seedVariable, seed)
		}
	})
	return rand.New(rand.NewPCG(seed, seed))
}

// The chaos test: a server over 24 pipelines of SQL appends, SCD1 and SCD2
// merges and script loads, with cloning on, whose runs are triggered
// through its API in waves, is killed with SIGKILL again and again — at
// random moments, and at fault points in the middle of attempts, commits
// and clones — and started again until every run has ended. Then every run
// is SUCCESS, every task run has exactly one SUCCESS attempt, no attempt is
// left QUEUED, CLAIMED or RUNNING, every other attempt is LOST and was the
// work of a killed server, no two attempts of a task ever lived at once,
// every target holds each run's rows exactly once, and every mirror equals
// a full clone. ETL_CRAFT_CHAOS_LONG runs a longer form on every pair.
func TestChaos(t *testing.T) {
	t.Parallel()
	sz := chaosSize()
	for _, pair := range sz.pairs {
		t.Run(pair.String(), func(t *testing.T) {
			t.Parallel()
			rng := seeded(t)
			if pair != e2e.SQLiteDuckDB {
				enginetest.AdminURL(t)
			}
			p := e2e.New(t, pair, cloning)
			p.Orchestration("  Max_parallel_tasks: 4\n")
			p.OK("init-db")
			w := newWorkload(p, sz.pipelines, 0, retryEachSecond)
			c := &chaos{t: t, p: p, db: p.DB(), w: w, rng: rng, token: p.Token("chaos", "operator"), killed: map[int]bool{}}
			var waves []string
			for i := range sz.waves {
				start, servers := time.Now(), len(c.killed)
				c.wave(sz.chaosFor)
				waves = append(waves, fmt.Sprintf("wave %d: %d server(s) in %s", i+1, len(c.killed)-servers, time.Since(start).Round(time.Second)))
			}
			c.check(sz.waves)
			t.Logf("%d server(s) killed (%d at a fault point), %d attempt(s) LOST; %s", len(c.killed), c.faults,
				e2e.Count(t, c.db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = $1", records.AttemptLost),
				strings.Join(waves, ", "))
		})
	}
}

// chaos kills the servers of a project.
type chaos struct {
	t     *testing.T
	p     *e2e.Project
	db    *engine.DB
	w     *workload
	rng   *rand.Rand
	token string
	// killed holds the pid of every server that was killed or died at a
	// fault point.
	killed map[int]bool
	faults int
	// rounds describes each round, for a failure's message.
	rounds []string
}

// giveUp is how long a wave may take before the test fails.
const giveUp = 8 * time.Minute

// wave triggers one run of every pipeline through the API and kills
// servers until every run has ended, or for chaosFor: then a server is left
// to end the wave's runs. The last tasks of a wave, script loads above all,
// take seconds of a server's life that the kills, a second or two apart,
// seldom leave them on a loaded machine: killed for ever, a wave would end
// only by chance.
func (c *chaos) wave(chaosFor time.Duration) {
	c.t.Helper()
	before := c.latest()
	calm, deadline := time.Now().Add(chaosFor), time.Now().Add(giveUp)
	for {
		if c.ended(before) {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the runs did not end after %s of chaos; rounds:\n%s\nthe runs that did not end:\n%s", giveUp,
				strings.Join(c.rounds, "\n"), strings.Join(openRuns(c.t, c.db), "\n"))
		}
		c.round(before, time.Now().After(calm))
	}
}

// openRuns describes the runs that have not ended, their task runs and the
// attempts of those.
func openRuns(t testing.TB, db *engine.DB) []string {
	return e2e.QueryRows(t, db, `SELECT 'run', r.PIPELINE_RUN_ID, p.PIPELINE_CODE, r.STATUS, coalesce(r.OWNER_ID, '-'),
			'task', t.TASK_RUN_ID, ct.TASK_CODE, coalesce(t.STATUS, '-'),
			'attempt', coalesce(a.ATTEMPT_NUMBER, 0), coalesce(a.STATUS, '-'), coalesce(a.OWNER_ID, '-'),
			coalesce(a.NOT_BEFORE, a.QUEUED_AT), coalesce(a.ENDED_AT, a.CLAIMED_AT), coalesce(substr(a.ERROR_MESSAGE, 1, 200), '')
		FROM AUD_PIPELINES_RUN_LOG r JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
		LEFT JOIN AUD_TASK_RUN_LOG t ON t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID
		LEFT JOIN CFG_TASKS ct ON ct.TASK_ID = t.TASK_ID
		LEFT JOIN AUD_TASK_ATTEMPTS a ON a.TASK_RUN_ID = t.TASK_RUN_ID
		WHERE r.STATUS NOT IN (`+records.SQLEndedRuns+`)
		ORDER BY r.PIPELINE_RUN_ID, t.TASK_RUN_ID, a.ATTEMPT_NUMBER`)
}

// round starts a server, triggers the wave's runs it lacks, and kills the
// server: at a fault point, or after a random time; a calm round's server
// is killed once the wave's runs have ended.
func (c *chaos) round(before map[string]int64, calm bool) {
	var env []string
	fault := ""
	limit := time.Duration(200+c.rng.IntN(2800)) * time.Millisecond
	switch {
	case calm:
		limit = giveUp
	case c.rng.IntN(2) == 0:
		fault = faultPoints[c.rng.IntN(len(faultPoints))]
		env = []string{"ETL_CRAFT_FAULT=" + fault + ":kill"}
		limit = 10 * time.Second // the point may not be reached
	}
	s := c.p.StartServer(env...)
	c.trigger(s, before)
	started := time.Now()
	deadline := started.Add(limit)
	for !s.Exited() && time.Now().Before(deadline) && !c.ended(before) {
		time.Sleep(20 * time.Millisecond)
	}
	how := fmt.Sprintf("killed after %s", limit)
	switch {
	case s.Exited() && fault == "":
		c.t.Errorf("server %d exited by itself:\n%s", s.Pid(), s.Stderr())
	case s.Exited():
		c.faults++
		how = "died at " + fault
	case calm:
		how = fmt.Sprintf("left to end the wave (%s), then killed", time.Since(started).Round(time.Millisecond))
	case fault != "":
		how = fmt.Sprintf("killed after %s without reaching %s", limit, fault)
	}
	s.Kill()
	c.killed[s.Pid()] = true
	c.rounds = append(c.rounds, fmt.Sprintf("server %d %s", s.Pid(), how))
}

// latest returns each pipeline's latest run id (0 for none).
func (c *chaos) latest() map[string]int64 {
	out := map[string]int64{}
	for code, runs := range c.w.runsOf(c.db) {
		out[code] = runs[len(runs)-1].id
	}
	return out
}

// ended reports whether every pipeline has a run newer than before and no
// run is QUEUED or IN-PROGRESS.
func (c *chaos) ended(before map[string]int64) bool {
	all := c.w.runsOf(c.db)
	for _, code := range c.w.pipelines {
		runs := all[code]
		if len(runs) == 0 {
			return false
		}
		if last := runs[len(runs)-1]; !last.status.Ended() || last.id == before[code] {
			return false
		}
	}
	return true
}

// trigger asks the server to run every pipeline that has no run newer
// than before. A request the dying server does not answer is asked again
// in the next round, when its run was not made.
func (c *chaos) trigger(s *e2e.Server, before map[string]int64) {
	latest := c.latest()
	var codes []string
	for _, code := range c.w.pipelines {
		if latest[code] == before[code] {
			codes = append(codes, code)
		}
	}
	triggerRuns(c.t, s, c.token, codes)
}

// triggerRuns asks the server to run each pipeline through its API. When
// the server stops answering (it died at a fault point), the rest are left
// for the next server.
func triggerRuns(t testing.TB, s *e2e.Server, token string, codes []string) {
	t.Helper()
	for _, code := range codes {
		req, _ := http.NewRequest(http.MethodPost, s.API+"/api/v1/pipelines/"+code+"/runs", strings.NewReader(`{"reason": "chaos"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("triggering %s: %s", code, resp.Status)
		}
	}
}

// check checks the runs, attempts, targets and mirrors once every run has
// ended (verify): every attempt that did not succeed was LOST by a killed
// server, and some were.
func (c *chaos) check(waves int) {
	c.t.Helper()
	verify(c.t, c.p, c.db, c.w, waves, func(status records.AttemptStatus, owner string) bool {
		return status == records.AttemptLost && c.killed[ownerPID(owner)]
	})
	if n := e2e.Count(c.t, c.db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = $1", records.AttemptLost); n == 0 {
		c.t.Errorf("no attempt was LOST: the servers were never killed in the middle of one")
	}
	if c.t.Failed() {
		c.t.Logf("rounds:\n%s", strings.Join(c.rounds, "\n"))
	}
}

// verify checks a project once every run of its workload has ended: each
// pipeline has waves runs (any number when waves is 0); every run is SUCCESS; every task run is SUCCESS with
// exactly one SUCCESS attempt; every other attempt ended, as expected says
// (given its status and owner), so none is left QUEUED, CLAIMED or RUNNING;
// no two attempts of a task ever lived at once; every target holds each
// run's rows exactly once; and every mirror equals a full clone.
func verify(t testing.TB, p *e2e.Project, db *engine.DB, w *workload, waves int, expected func(status records.AttemptStatus, owner string) bool) {
	t.Helper()
	runs := w.runsOf(db)
	for _, code := range w.pipelines {
		if waves > 0 && len(runs[code]) != waves {
			t.Errorf("%s has %d runs, want %d", code, len(runs[code]), waves)
		}
		for _, r := range runs[code] {
			if r.status != records.RunSuccess {
				t.Errorf("%s: pipeline_run_id=%d ended %s", code, r.id, r.status)
			}
		}
	}
	for _, row := range e2e.QueryRows(t, db, `SELECT ATTEMPT_ID, STATUS, coalesce(OWNER_ID, '-'), coalesce(ERROR_MESSAGE, '')
		FROM AUD_TASK_ATTEMPTS WHERE STATUS <> $1 ORDER BY ATTEMPT_ID`, records.AttemptSuccess) {
		f := strings.SplitN(row, " ", 4)
		if !expected(records.AttemptStatus(f[1]), f[2]) {
			t.Errorf("attempt %s is %s (owner %s): %s", f[0], f[1], f[2], f[3])
		}
	}
	for _, row := range e2e.QueryRows(t, db, `SELECT t.TASK_RUN_ID, t.STATUS, (SELECT count(*) FROM AUD_TASK_ATTEMPTS a
			WHERE a.TASK_RUN_ID = t.TASK_RUN_ID AND a.STATUS = $1) FROM AUD_TASK_RUN_LOG t`, records.AttemptSuccess) {
		var id, successes int
		var status string
		fmt.Sscan(row, &id, &status, &successes)
		if status != string(records.TaskSuccess) || successes != 1 {
			t.Errorf("task_run_id=%d is %s with %d SUCCESS attempt(s); its attempts:\n%s", id, status, successes,
				strings.Join(e2e.QueryRows(t, db, `SELECT ATTEMPT_NUMBER, STATUS, coalesce(CLAIMED_AT, QUEUED_AT), coalesce(ENDED_AT, CLAIMED_AT),
					coalesce(substr(ERROR_MESSAGE, 1, 300), '') FROM AUD_TASK_ATTEMPTS WHERE TASK_RUN_ID = $1 ORDER BY ATTEMPT_NUMBER`, id), "\n"))
		}
	}
	if n := e2e.Count(t, db, `SELECT count(*) FROM AUD_TASK_ATTEMPTS x JOIN AUD_TASK_ATTEMPTS y
		ON x.TASK_RUN_ID = y.TASK_RUN_ID AND x.ATTEMPT_ID < y.ATTEMPT_ID
		WHERE y.CLAIMED_AT < coalesce(x.ENDED_AT, y.CLAIMED_AT)`); n != 0 {
		t.Errorf("%d pairs of attempts of one task lived at once", n)
	}
	w.checkTargets(t, runs)
	checkMirrors(t, p)
}

// ownerPID is the pid in a lease owner id (host:pid:process-start:<hex>),
// 0 when there is none.
func ownerPID(owner string) int {
	parts := strings.Split(owner, ":")
	if len(parts) < 4 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[len(parts)-3])
	return pid
}
