package run

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestOwnerIDsNameThisProcess(t *testing.T) {
	t.Parallel()
	a, b := NewOwner(), NewOwner()
	re := regexp.MustCompile(`^(.+):(\d+):(\d+):([0-9a-f]{8})$`)
	m := re.FindStringSubmatch(a)
	if m == nil || a == b || !re.MatchString(b) {
		t.Fatalf("owners %q %q", a, b)
	}
	p := Self()
	if m[1] != p.Host || m[2] != strconv.Itoa(p.PID) || m[3] != p.Start || !p.Alive() || !p.IsSelf() {
		t.Fatalf("owner %q, process %+v", a, p)
	}
}

// sleeper starts a process that lives until the test ends, and returns its
// identity.
func sleeper(t *testing.T) (Process, *exec.Cmd, chan error) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	start, err := processStart(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return Process{Host: Self().Host, PID: cmd.Process.Pid, Start: start}, cmd, done
}

func TestAReusedPidIsNeverSignalled(t *testing.T) {
	t.Parallel()
	p, _, done := sleeper(t)
	reused := p
	reused.Start = "1"
	if reused.Alive() {
		t.Fatal("a process with another start time is alive")
	}
	if err := reused.stop(time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		t.Fatal("the process of a reused pid was signalled")
	case <-time.After(100 * time.Millisecond):
	}
	if err := p.stop(time.Second); err != nil {
		t.Fatal(err)
	}
	<-done
	if p.Alive() {
		t.Fatal("the stopped process is alive")
	}
}

// runningAttempt sets up an attempt RUNNING under the ledger's run, as if
// the given process ran it.
func (l *ledger) runningAttempt(proc Process) (queued, string) {
	l.t.Helper()
	q, owner := l.attemptIn(AttemptRunning)
	l.exec("UPDATE AUD_TASK_ATTEMPTS SET HOST = $2, PID = $3, PROCESS_START = $4 WHERE ATTEMPT_ID = $1",
		q.AttemptID, proc.Host, proc.PID, proc.Start)
	return q, owner
}

func TestReconcileFencesTheAttemptsOfDeadProcesses(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		// The process is gone: its attempt is fenced at once, with its
		// lease still live.
		q, owner := l.runningAttempt(Process{Host: Self().Host, PID: 99999999, Start: "1"})
		s := l.supervisor()
		rec, err := s.Reconcile(l.ctx(), Scope{PipelineCode: "P"})
		if err != nil || len(rec.Lost) != 1 || rec.Lost[0].AttemptID != q.AttemptID || rec.Lost[0].Owner != owner || rec.Lost[0].Stopped {
			t.Fatalf("reconcile: %+v %v", rec, err)
		}
		if again, _ := s.Reconcile(l.ctx(), Scope{}); len(again.Lost) != 0 {
			t.Fatalf("a second reconcile: %+v", again)
		}
		if got := l.summary(q.TaskRunID); got != "FAILED|1|attempt 1 was lost: its owner "+owner+" ended before finishing it (process 99999999 is gone)" {
			t.Fatalf("summary %s", got)
		}
		// A retry by a new owner; the old owner's late success is stale.
		due := time.Now()
		retry, err := l.queue(l.b.TaskID("P", "t1"), &due)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return claimAttempt(ctx, tx, retry.AttemptID, NewOwner(), now)
		}); err != nil {
			t.Fatal(err)
		}
		zombie := okOutcome
		zombie.Result.TargetCount, zombie.Log = nil, "zombie"
		err = l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return finishAttempt(ctx, tx, q.AttemptID, owner, zombie, now)
		})
		wantCode(t, err, exit.StaleTransition, "found status LOST")
		if got := l.summary(q.TaskRunID); !strings.HasPrefix(got, "IN-PROGRESS|2|") {
			t.Fatalf("summary after the zombie %s", got)
		}
		if l.nullString("SELECT TASK_LOG FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = $1", q.TaskRunID).String == "zombie" {
			t.Fatal("the zombie wrote the log")
		}
	})
}

func TestForeignHostsGetTwoLeasePeriodsOfGrace(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		q, _ := l.runningAttempt(Process{Host: "elsewhere.example", PID: 42, Start: "7"})
		s := l.supervisor()
		l.expireAttempt(q.AttemptID, time.Second)
		if rec, _ := s.Reconcile(l.ctx(), Scope{}); len(rec.Lost) != 0 {
			t.Fatalf("lost 1 s after expiry: %+v", rec)
		}
		l.expireAttempt(q.AttemptID, ForeignGrace+time.Second)
		if rec, _ := s.Reconcile(l.ctx(), Scope{}); len(rec.Lost) != 1 {
			t.Fatalf("not lost %s after expiry: %+v", ForeignGrace+time.Second, rec)
		}
	})
}

func TestReconcileStopsAStuckProcessOfThisHost(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		proc, _, done := sleeper(t)
		q, _ := l.runningAttempt(proc)
		l.expireAttempt(q.AttemptID, time.Second)
		rec, err := l.supervisor().Reconcile(l.ctx(), Scope{PipelineCode: "P", TaskCode: "t1"})
		if err != nil || len(rec.Lost) != 1 || !rec.Lost[0].Stopped {
			t.Fatalf("%+v %v", rec, err)
		}
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("the stuck process was not stopped")
		}
		if got := l.summary(q.TaskRunID); !strings.Contains(got, "was stopped") {
			t.Fatalf("summary %s", got)
		}
	})
}

func TestRunLeases(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		s := l.supervisor()
		g, _, err := s.load(l.ctx(), "P")
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.bindRun(l.ctx(), g, start{req: Request{PipelineCode: "P"}, owner: NewOwner()})
		wantCode(t, err, exit.RunState, "is supervised by "+l.owner)
		// The run's lease expires while an attempt's lease is live: nothing
		// is released until that attempt is lost.
		q, _ := l.runningAttempt(Process{Host: "elsewhere.example", PID: 42, Start: "7"})
		l.exec("UPDATE AUD_PIPELINES_RUN_LOG SET LEASE_EXPIRES_AT = $1 WHERE PIPELINE_RUN_ID = $2", l.db.TimeArg(time.Now().Add(-time.Second)), l.run)
		if rec, _ := s.Reconcile(l.ctx(), Scope{}); len(rec.Released) != 0 || len(rec.Lost) != 0 {
			t.Fatalf("released with a live attempt: %+v", rec)
		}
		l.expireAttempt(q.AttemptID, ForeignGrace+time.Second)
		rec, err := s.Reconcile(l.ctx(), Scope{PipelineCode: "P"})
		if err != nil || len(rec.Released) != 1 || rec.Released[0] != l.run || len(rec.Lost) != 1 {
			t.Fatalf("%+v %v", rec, err)
		}
		owner := NewOwner()
		b, err := s.bindRun(l.ctx(), g, start{req: Request{PipelineCode: "P"}, owner: owner})
		if r := b.run; err != nil || r.ID != l.run || r.Owner != owner {
			t.Fatalf("taking the released run: %+v %v", b.run, err)
		}
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error { return renewRun(ctx, tx, l.run, owner, now) }); err != nil {
			t.Fatal(err)
		}
		wantCode(t, l.do(func(ctx context.Context, tx *wtx, now time.Time) error { return renewRun(ctx, tx, l.run, l.owner, now) }),
			exit.StaleTransition, "owner='"+owner+"'")
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error { return releaseRun(ctx, tx, l.run, owner) }); err != nil {
			t.Fatal(err)
		}
		if l.nullString("SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", l.run).Valid {
			t.Fatal("the released run kept its owner")
		}
	})
}

func TestAFencedAttemptStopsItsWork(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("P", "FULL")
		f.task("P", "slow", "sleep")
		s := f.supervisor()
		s.renewEvery = 50 * time.Millisecond
		done := make(chan Outcome)
		go func() {
			out, err := s.RunPipeline(f.ctx(), Request{PipelineCode: "P"})
			if err != nil {
				t.Error(err)
			}
			done <- out
		}()
		f.h.waitStarted(t, "slow")
		// A reconciler elsewhere fenced the attempt.
		f.exec(`UPDATE AUD_TASK_ATTEMPTS SET STATUS = 'LOST', ERROR_MESSAGE = 'fenced' WHERE STATUS = 'RUNNING'`)
		f.exec(`UPDATE AUD_TASK_RUN_LOG SET STATUS = 'FAILED', ERROR_MESSAGE = 'fenced'`)
		out := <-done
		if out.Status != RunFailed {
			t.Fatalf("%q", out.String())
		}
		if !strings.Contains(f.logs.String(), "lost its lease") {
			t.Fatalf("logs:\n%s", f.logs.String())
		}
	})
}

func TestTwoReconcilersLoseEachAttemptOnce(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		for range 3 {
			q, _ := l.runningAttempt(Process{Host: Self().Host, PID: 99999999, Start: "1"})
			l.expireAttempt(q.AttemptID, time.Second)
		}
		l.exec("UPDATE AUD_PIPELINES_RUN_LOG SET LEASE_EXPIRES_AT = $1", l.db.TimeArg(time.Now().Add(-time.Second)))
		var wg sync.WaitGroup
		recs := make([]Reconciliation, 2)
		for i := range recs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if recs[i], err = l.supervisor().Reconcile(l.ctx(), Scope{}); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if lost, released := len(recs[0].Lost)+len(recs[1].Lost), len(recs[0].Released)+len(recs[1].Released); lost != 3 || released != 1 {
			t.Fatalf("lost %d released %d: %+v", lost, released, recs)
		}
	})
}

// The soak of issue 27 saw it: a server starved of CPU and of the SQLite
// write lock renewed its run's lease after the lease had ended. Its own
// reconciler then released the run from under its live supervisor, and the
// late renewal failed, so the supervisor gave the run up and failed the
// attempt it had just started ("the run was ended or taken over by another
// process"). A run a supervisor of this process holds is never released by
// this process's reconciler, and a late renewal of a run nobody took keeps
// it; once the supervisor is gone, the ended lease is released as before.
func TestALateRenewalKeepsARunNobodyTook(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		s := l.supervisor()
		expire := func() {
			l.exec("UPDATE AUD_PIPELINES_RUN_LOG SET LEASE_EXPIRES_AT = $1 WHERE PIPELINE_RUN_ID = $2", l.db.TimeArg(time.Now().Add(-time.Minute)), l.run)
		}
		drop := hold(l.owner)
		expire()
		if rec, err := s.Reconcile(l.ctx(), Scope{}); err != nil || len(rec.Released) != 0 {
			t.Fatalf("the reconciler released a run its own process supervises: %+v %v", rec, err)
		}
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error { return renewRun(ctx, tx, l.run, l.owner, now) }); err != nil {
			t.Fatalf("a late renewal of a run nobody took: %v", err)
		}
		if got := l.nullString("SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", l.run); got.String != l.owner {
			t.Fatalf("owner %q after the late renewal", got.String)
		}
		drop()
		expire()
		rec, err := s.Reconcile(l.ctx(), Scope{})
		if err != nil || len(rec.Released) != 1 || rec.Released[0] != l.run {
			t.Fatalf("the ended lease of a supervisor that is gone: %+v %v", rec, err)
		}
		wantCode(t, l.do(func(ctx context.Context, tx *wtx, now time.Time) error { return renewRun(ctx, tx, l.run, l.owner, now) }),
			exit.StaleTransition, "found status IN-PROGRESS")
	})
}
