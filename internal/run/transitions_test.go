package run

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// ledger is a fixture with a pipeline and an IN-PROGRESS run held by owner,
// for driving transitions by hand.
type ledger struct {
	*fixture
	pipe  string
	run   int64
	owner string
	tasks int
}

func newLedger(t *testing.T, db *engine.DB) *ledger {
	l := &ledger{fixture: newFixture(t, db), pipe: "P", owner: NewOwner()}
	l.b.Pipeline("P", "FULL")
	l.run = l.startRun("P", l.owner)
	return l
}

// startRun inserts and admits a run of the pipeline held by owner.
func (l *ledger) startRun(pipe, owner string) int64 {
	l.t.Helper()
	var id int64
	err := l.tx(func(tx *wtx) error {
		var err error
		id, err = insertRun(context.Background(), tx, newRun{PipelineID: l.b.PipelineID(pipe), Key: "manual:" + newUUID(),
			TriggerKind: TriggerManual, RunDate: "2026-01-01"})
		if err != nil {
			return err
		}
		return admitRun(context.Background(), tx, l.b.PipelineID(pipe), id, owner, time.Now())
	})
	if err != nil {
		l.t.Fatal(err)
	}
	return id
}

// newTask registers a fresh task of the pipeline and returns its id.
func (l *ledger) newTask() int64 {
	l.tasks++
	return l.task(l.pipe, fmt.Sprintf("t%d", l.tasks), "succeed")
}

// queue queues the next attempt of the task under the run.
func (l *ledger) queue(taskID int64, notBefore *time.Time) (queued, error) {
	var q queued
	err := l.tx(func(tx *wtx) error {
		var err error
		q, err = queueAttempt(context.Background(), tx, l.run, taskID, queueing{notBefore: notBefore}, time.Now())
		return err
	})
	return q, err
}

// do runs one transition in its own transaction.
func (l *ledger) do(fn func(ctx context.Context, tx *wtx, now time.Time) error) error {
	return l.tx(func(tx *wtx) error { return fn(l.ctx(), tx, time.Now()) })
}

// expireAttempt moves an active attempt's lease into the past.
func (l *ledger) expireAttempt(id int64, ago time.Duration) {
	l.exec("UPDATE AUD_TASK_ATTEMPTS SET LEASE_EXPIRES_AT = $1 WHERE ATTEMPT_ID = $2", l.db.TimeArg(time.Now().Add(-ago)), id)
}

var okOutcome = outcome{Status: AttemptSuccess, Result: handler.Result{SourceCount: handler.Int(3), TargetCount: handler.Int(2),
	InsertCount: handler.Int(2), RowsWritten: handler.Int(2)}, Log: "TARGET_COUNT = 2\n\ndone"}

// attemptIn returns a fresh attempt in the status and its owner.
func (l *ledger) attemptIn(status string) (q queued, owner string) {
	l.t.Helper()
	q, err := l.queue(l.newTask(), nil)
	if err != nil {
		l.t.Fatal(err)
	}
	owner = NewOwner()
	steps := map[string][]func(context.Context, *wtx, time.Time) error{
		AttemptQueued: nil,
		AttemptClaimed: {func(ctx context.Context, tx *wtx, now time.Time) error {
			return claimAttempt(ctx, tx, q.AttemptID, owner, now)
		}},
	}
	claim := steps[AttemptClaimed][0]
	start := func(ctx context.Context, tx *wtx, now time.Time) error {
		return startAttempt(ctx, tx, q.AttemptID, owner, "/logs/x.log", now)
	}
	finish := func(st string) func(context.Context, *wtx, time.Time) error {
		return func(ctx context.Context, tx *wtx, now time.Time) error {
			o := okOutcome
			o.Status = st
			if st != AttemptSuccess {
				o.Error, o.Result = "it broke", handler.Result{}
			}
			return finishAttempt(ctx, tx, q.AttemptID, owner, o, now)
		}
	}
	steps[AttemptRunning] = append(steps[AttemptClaimed], start)
	steps[AttemptSuccess] = append(steps[AttemptRunning], finish(AttemptSuccess))
	steps[AttemptFailed] = append(steps[AttemptRunning], finish(AttemptFailed))
	steps[AttemptTimedOut] = append(steps[AttemptRunning], finish(AttemptTimedOut))
	steps[AttemptCancelled] = []func(context.Context, *wtx, time.Time) error{claim,
		func(ctx context.Context, tx *wtx, now time.Time) error {
			return stopAttempt(ctx, tx, q.AttemptID, AttemptCancelled, "cancelled", now)
		}}
	for _, step := range steps[status] {
		if err := l.do(step); err != nil {
			l.t.Fatalf("setting up %s: %v", status, err)
		}
	}
	if status == AttemptLost {
		for _, step := range steps[AttemptRunning] {
			if err := l.do(step); err != nil {
				l.t.Fatal(err)
			}
		}
		l.expireAttempt(q.AttemptID, time.Second)
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return loseAttempt(ctx, tx, q.AttemptID, owner, now, now, "attempt 1 was lost: its owner "+owner+" stopped renewing its lease")
		}); err != nil {
			l.t.Fatal(err)
		}
	}
	return q, owner
}

// snapshot returns the attempt's row as text, to show it did not change.
func (l *ledger) snapshot(id int64) string {
	l.t.Helper()
	var s string
	l.scalar(&s, `SELECT STATUS || '|' || COALESCE(OWNER_ID, '') || '|' || COALESCE(CAST(LEASE_EXPIRES_AT AS VARCHAR), '') || '|' ||
		COALESCE(CAST(ENDED_AT AS VARCHAR), '') || '|' || COALESCE(ERROR_MESSAGE, '') FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = $1`, id)
	return s
}

// summary returns a task run's status, attempt count and error message.
func (l *ledger) summary(taskRunID int64) string {
	l.t.Helper()
	var s string
	l.scalar(&s, `SELECT STATUS || '|' || CAST(ATTEMPT_COUNT AS VARCHAR) || '|' || COALESCE(ERROR_MESSAGE, '')
		FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = $1`, taskRunID)
	return s
}

var allAttemptStatuses = []string{AttemptQueued, AttemptClaimed, AttemptRunning, AttemptSuccess, AttemptFailed,
	AttemptTimedOut, AttemptCancelled, AttemptLost}

func TestAttemptStateMatrix(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		ops := []struct {
			name    string
			allowed []string
			do      func(l *ledger, q queued, owner string) func(context.Context, *wtx, time.Time) error
		}{
			{"claim", []string{AttemptQueued}, func(l *ledger, q queued, _ string) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return claimAttempt(ctx, tx, q.AttemptID, NewOwner(), now)
				}
			}},
			{"start", []string{AttemptClaimed, AttemptRunning}, func(l *ledger, q queued, o string) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return startAttempt(ctx, tx, q.AttemptID, o, "x.log", now)
				}
			}},
			{"finish", []string{AttemptClaimed, AttemptRunning}, func(l *ledger, q queued, o string) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return finishAttempt(ctx, tx, q.AttemptID, o, okOutcome, now)
				}
			}},
			{"time out", []string{AttemptRunning}, func(l *ledger, q queued, o string) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return finishAttempt(ctx, tx, q.AttemptID, o, outcome{Status: AttemptTimedOut, Error: "timed out"}, now)
				}
			}},
			{"cancel", []string{AttemptQueued, AttemptClaimed, AttemptRunning}, func(l *ledger, q queued, _ string) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return stopAttempt(ctx, tx, q.AttemptID, AttemptCancelled, "stop", now)
				}
			}},
			{"lose", []string{AttemptClaimed, AttemptRunning}, func(l *ledger, q queued, o string) func(context.Context, *wtx, time.Time) error {
				if s := l.snapshot(q.AttemptID); strings.HasPrefix(s, AttemptClaimed+"|") || strings.HasPrefix(s, AttemptRunning+"|") {
					l.expireAttempt(q.AttemptID, time.Second)
				}
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return loseAttempt(ctx, tx, q.AttemptID, o, now, now, "lost")
				}
			}},
			{"renew", []string{AttemptClaimed, AttemptRunning}, func(l *ledger, q queued, o string) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return renewAttempt(ctx, tx, q.AttemptID, o, now)
				}
			}},
		}
		for _, op := range ops {
			for _, from := range allAttemptStatuses {
				q, owner := l.attemptIn(from)
				fn := op.do(l, q, owner)
				before := l.snapshot(q.AttemptID)
				err := l.do(fn)
				allowed := false
				for _, a := range op.allowed {
					allowed = allowed || a == from
				}
				if allowed {
					if err != nil {
						t.Errorf("%s from %s: %v", op.name, from, err)
					}
					continue
				}
				if exit.CodeOf(err) != exit.StaleTransition {
					t.Errorf("%s from %s: %v, want a stale transition", op.name, from, err)
					continue
				}
				msg := err.Error()
				if !strings.Contains(msg, fmt.Sprintf("row_id=%d", q.AttemptID)) || !strings.Contains(msg, "expected") ||
					!strings.Contains(msg, "found status "+from) {
					t.Errorf("%s from %s: message %q", op.name, from, msg)
				}
				if after := l.snapshot(q.AttemptID); after != before {
					t.Errorf("%s from %s changed the row: %s -> %s", op.name, from, before, after)
				}
			}
		}
	})
}

func TestTaskRunSummaryFollowsItsAttempt(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		want := map[string]string{
			AttemptQueued: TaskInProgress, AttemptClaimed: TaskInProgress, AttemptRunning: TaskInProgress,
			AttemptSuccess: TaskSuccess, AttemptFailed: TaskFailed, AttemptTimedOut: TaskFailed,
			AttemptCancelled: TaskCancelled, AttemptLost: TaskFailed,
		}
		for _, st := range allAttemptStatuses {
			q, owner := l.attemptIn(st)
			got := l.summary(q.TaskRunID)
			if !strings.HasPrefix(got, want[st]+"|1|") {
				t.Errorf("attempt %s: summary %s", st, got)
			}
			if st == AttemptLost && !strings.Contains(got, "attempt 1 was lost: its owner "+owner) {
				t.Errorf("a lost attempt's summary does not name its owner: %s", got)
			}
		}
		q, _ := l.attemptIn(AttemptSuccess)
		var log string
		var target, rows int64
		l.scalar(&log, "SELECT TASK_LOG FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = $1", q.TaskRunID)
		l.scalar(&target, "SELECT TARGET_COUNT FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = $1", q.TaskRunID)
		l.scalar(&rows, "SELECT ROWS_WRITTEN FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = $1", q.TaskRunID)
		if log != okOutcome.Log || target != 2 || rows != 2 {
			t.Fatalf("finishing did not copy the outcome: %q %d %d", log, target, rows)
		}
	})
}

func TestWrongOwnerIsStale(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		ops := map[string]func(q queued) func(context.Context, *wtx, time.Time) error{
			"start": func(q queued) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return startAttempt(ctx, tx, q.AttemptID, "wrong", "x", now)
				}
			},
			"finish": func(q queued) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return finishAttempt(ctx, tx, q.AttemptID, "wrong", okOutcome, now)
				}
			},
			"time out": func(q queued) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return finishAttempt(ctx, tx, q.AttemptID, "wrong", outcome{Status: AttemptTimedOut}, now)
				}
			},
			"lose": func(q queued) func(context.Context, *wtx, time.Time) error {
				l.expireAttempt(q.AttemptID, time.Second)
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return loseAttempt(ctx, tx, q.AttemptID, "wrong", now, now, "x")
				}
			},
			"renew": func(q queued) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return renewAttempt(ctx, tx, q.AttemptID, "wrong", now)
				}
			},
		}
		for name, op := range ops {
			from := AttemptRunning
			if name == "start" {
				from = AttemptClaimed
			}
			q, _ := l.attemptIn(from)
			fn := op(q)
			before := l.snapshot(q.AttemptID)
			err := l.do(fn)
			wantCode(t, err, exit.StaleTransition, "owner='wrong'")
			if !strings.Contains(err.Error(), "found status "+from+" owner=") {
				t.Errorf("%s: %v", name, err)
			}
			if l.snapshot(q.AttemptID) != before {
				t.Errorf("%s by the wrong owner changed the row", name)
			}
		}
	})
}

func TestOneActiveAttemptPerTaskRunAndRetries(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		taskID := l.newTask()
		first, err := l.queue(taskID, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.queue(taskID, nil)
		wantCode(t, err, exit.StaleTransition, "expected no active attempt, found an active attempt")
		owner := NewOwner()
		for _, step := range []func(context.Context, *wtx, time.Time) error{
			func(ctx context.Context, tx *wtx, now time.Time) error {
				return claimAttempt(ctx, tx, first.AttemptID, owner, now)
			},
			func(ctx context.Context, tx *wtx, now time.Time) error {
				return finishAttempt(ctx, tx, first.AttemptID, owner, outcome{Status: AttemptFailed, Error: "boom"}, now)
			},
		} {
			if err := l.do(step); err != nil {
				t.Fatal(err)
			}
		}
		due := time.Now().Add(time.Hour)
		retry, err := l.queue(taskID, &due)
		if err != nil {
			t.Fatal(err)
		}
		if retry.Number != 2 || retry.TaskRunID != first.TaskRunID || l.summary(first.TaskRunID) != "IN-PROGRESS|2|boom" {
			t.Fatalf("retry %+v, summary %s", retry, l.summary(first.TaskRunID))
		}
		err = l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return finishAttempt(ctx, tx, first.AttemptID, owner, okOutcome, now)
		})
		wantCode(t, err, exit.StaleTransition, "found status FAILED")
		var by, kind string
		l.scalar(&by, "SELECT REQUESTED_BY FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = $1", retry.AttemptID)
		l.scalar(&kind, "SELECT REQUESTED_BY_KIND FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = $1", retry.AttemptID)
		if by != "tester@host" || kind != "HUMAN" {
			t.Fatalf("requested by %s %s", by, kind)
		}
		// A retry cannot be claimed before it is due.
		err = l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return claimAttempt(ctx, tx, retry.AttemptID, owner, now)
		})
		wantCode(t, err, exit.StaleTransition, "expected status QUEUED and due")
		// A QUEUED attempt has no process: cancel it, then the run can end.
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return stopAttempt(ctx, tx, retry.AttemptID, AttemptCancelled, "not needed", now)
		}); err != nil {
			t.Fatal(err)
		}
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return endErr(finishRun(ctx, tx, l.run, l.owner, runEnding{Status: RunCancelled}, now))
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestLiveLeasesAreNotLostAndExpiredOnesNotRenewed(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		q, owner := l.attemptIn(AttemptRunning)
		err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return loseAttempt(ctx, tx, q.AttemptID, owner, now, now, "x")
		})
		wantCode(t, err, exit.StaleTransition, "with a lease expired before")
		l.expireAttempt(q.AttemptID, time.Second)
		for name, fn := range map[string]func(context.Context, *wtx, time.Time) error{
			"renew": func(ctx context.Context, tx *wtx, now time.Time) error {
				return renewAttempt(ctx, tx, q.AttemptID, owner, now)
			},
			"finish": func(ctx context.Context, tx *wtx, now time.Time) error {
				return finishAttempt(ctx, tx, q.AttemptID, owner, okOutcome, now)
			},
			"time out": func(ctx context.Context, tx *wtx, now time.Time) error {
				return finishAttempt(ctx, tx, q.AttemptID, owner, outcome{Status: AttemptTimedOut}, now)
			},
		} {
			err := l.do(fn)
			if exit.CodeOf(err) != exit.StaleTransition || !strings.Contains(err.Error(), "live lease") {
				t.Errorf("%s with an expired lease: %v", name, err)
			}
		}
	})
}

func TestRunStateMatrix(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		statuses := []string{RunInProgress, RunSuccess, RunFailed, RunSkipped, RunCancelled}
		ops := []struct {
			name    string
			allowed []string
			do      func(id int64, owner string) func(context.Context, *wtx, time.Time) error
		}{
			{"finish", []string{RunInProgress}, func(id int64, owner string) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return endErr(finishRun(ctx, tx, id, owner, runEnding{Status: RunSuccess}, now))
				}
			}},
			{"supervise", []string{RunInProgress}, func(id int64, owner string) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					if err := releaseRun(ctx, tx, id, owner); err != nil {
						return err
					}
					return takeRun(ctx, tx, id, NewOwner(), now)
				}
			}},
			{"reopen", []string{RunSuccess, RunFailed, RunSkipped}, func(id int64, _ string) func(context.Context, *wtx, time.Time) error {
				return func(ctx context.Context, tx *wtx, now time.Time) error {
					return reopenRun(ctx, tx, id, 0, "", "repair")
				}
			}},
		}
		n := 0
		for _, op := range ops {
			for _, st := range statuses {
				n++
				pipe := fmt.Sprintf("R%d", n)
				l.b.Pipeline(pipe, "FULL")
				owner := NewOwner()
				id := l.startRun(pipe, owner)
				if st != RunInProgress {
					if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
						return endErr(finishRun(ctx, tx, id, owner, runEnding{Status: st}, now))
					}); err != nil {
						t.Fatal(err)
					}
				}
				err := l.do(op.do(id, owner))
				allowed := false
				for _, a := range op.allowed {
					allowed = allowed || a == st
				}
				switch {
				case allowed && err != nil:
					t.Errorf("%s from %s: %v", op.name, st, err)
				case !allowed && exit.CodeOf(err) != exit.StaleTransition:
					t.Errorf("%s from %s: %v, want stale", op.name, st, err)
				case !allowed && !strings.Contains(err.Error(), fmt.Sprintf("row_id=%d", id)):
					t.Errorf("%s from %s: %v", op.name, st, err)
				}
			}
		}
	})
}

func TestRunGuards(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return endErr(finishRun(ctx, tx, l.run, "wrong", runEnding{Status: RunSuccess}, now))
		})
		wantCode(t, err, exit.StaleTransition, "owner='wrong'")
		q, _ := l.attemptIn(AttemptClaimed)
		err = l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return endErr(finishRun(ctx, tx, l.run, l.owner, runEnding{Status: RunSuccess}, now))
		})
		wantCode(t, err, exit.StaleTransition, "with 1 claimed or running attempt(s)")
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return stopAttempt(ctx, tx, q.AttemptID, AttemptCancelled, "x", now)
		}); err != nil {
			t.Fatal(err)
		}
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return endErr(finishRun(ctx, tx, l.run, l.owner, runEnding{Status: RunCancelled}, now))
		}); err != nil {
			t.Fatal(err)
		}
		// A second active run of the pipeline: the first insert is admitted,
		// the second is stale and leaves no row.
		other := l.startRun("P", NewOwner())
		before := l.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG")
		err = l.tx(func(tx *wtx) error {
			id, err := insertRun(context.Background(), tx, newRun{PipelineID: l.b.PipelineID("P"), Key: "k2", TriggerKind: TriggerManual})
			if err != nil {
				return err
			}
			return admitRun(context.Background(), tx, l.b.PipelineID("P"), id, NewOwner(), time.Now())
		})
		wantCode(t, err, exit.StaleTransition, fmt.Sprintf("another process started pipeline_run_id=%d", other))
		if after := l.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); after != before {
			t.Fatalf("%d runs, want %d", after, before)
		}
		// The ended run cannot be reopened while the other is active, and
		// nothing can be queued under it.
		err = l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return endErr(finishRun(ctx, tx, l.run, l.owner, runEnding{Status: RunFailed}, now))
		})
		wantCode(t, err, exit.StaleTransition, "found status CANCELLED")
		attempts := l.count("SELECT count(*) FROM AUD_TASK_ATTEMPTS")
		_, err = l.queue(l.newTask(), nil)
		wantCode(t, err, exit.StaleTransition, "expected status IN-PROGRESS, found status CANCELLED")
		if l.count("SELECT count(*) FROM AUD_TASK_ATTEMPTS") != attempts {
			t.Fatal("queueing under an ended run inserted an attempt")
		}
		// Reopening a FAILED run while another run of the pipeline is active.
		l.b.Pipeline("Q", "FULL")
		failedRun := l.startRun("Q", "o1")
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return endErr(finishRun(ctx, tx, failedRun, "o1", runEnding{Status: RunFailed}, now))
		}); err != nil {
			t.Fatal(err)
		}
		active := l.startRun("Q", "o2")
		err = l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return reopenRun(ctx, tx, failedRun, 0, "", "repair")
		})
		wantCode(t, err, exit.StaleTransition, fmt.Sprintf("pipeline_run_id=%d IN-PROGRESS", active))
		var status string
		l.scalar(&status, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", active)
		if status != RunInProgress {
			t.Fatalf("the other run is %s", status)
		}
	})
}

func TestAttemptAndSummaryCommitTogether(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		q, owner := l.attemptIn(AttemptRunning)
		for _, point := range []string{"attempt.after_status", "attempt.before_summary"} {
			t.Setenv(fault.Variable, point)
			err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
				return finishAttempt(ctx, tx, q.AttemptID, owner, okOutcome, now)
			})
			wantCode(t, err, exit.InjectedFault, point)
			if s := l.snapshot(q.AttemptID); !strings.HasPrefix(s, AttemptRunning+"|") {
				t.Fatalf("%s: attempt %s", point, s)
			}
			if s := l.summary(q.TaskRunID); s != "IN-PROGRESS|1|" {
				t.Fatalf("%s: summary %s", point, s)
			}
		}
	})
}

func TestTwoQueuersOfTheFirstAttemptOneWins(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		taskID := l.newTask()
		var barrier, wg sync.WaitGroup
		barrier.Add(2)
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				barrier.Done()
				barrier.Wait()
				_, errs[i] = l.queue(taskID, nil)
			}()
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case exit.CodeOf(err) != exit.StaleTransition:
				t.Fatalf("the loser failed with %v", err)
			}
		}
		if won != 1 || l.count("SELECT count(*) FROM AUD_TASK_ATTEMPTS") != 1 || l.count("SELECT count(*) FROM AUD_TASK_RUN_LOG") != 1 {
			t.Fatalf("%d winners, errors %v", won, errs)
		}
	})
}

func TestStartIsIdempotentOnlyForTheSameProcess(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		q, owner := l.attemptIn(AttemptRunning)
		start := func(ctx context.Context, tx *wtx, now time.Time) error {
			return startAttempt(ctx, tx, q.AttemptID, owner, "x.log", now)
		}
		if err := l.do(start); err != nil {
			t.Fatalf("a second start from the same process: %v", err)
		}
		l.exec("UPDATE AUD_TASK_ATTEMPTS SET PID = 1 WHERE ATTEMPT_ID = $1", q.AttemptID)
		wantCode(t, l.do(start), exit.StaleTransition, "found status RUNNING")
		l.exec("UPDATE AUD_TASK_ATTEMPTS SET PID = $2 WHERE ATTEMPT_ID = $1", q.AttemptID, Self().PID)
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return finishAttempt(ctx, tx, q.AttemptID, owner, okOutcome, now)
		}); err != nil {
			t.Fatal(err)
		}
		wantCode(t, l.do(start), exit.StaleTransition, "found status SUCCESS")
	})
}

func TestReopenRecordsItsIntervention(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return endErr(finishRun(ctx, tx, l.run, l.owner, runEnding{Status: RunFailed}, now))
		}); err != nil {
			t.Fatal(err)
		}
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return reopenRun(ctx, tx, l.run, 0, "", "fix the feed")
		}); err != nil {
			t.Fatal(err)
		}
		var row string
		l.scalar(&row, `SELECT ACTION || '|' || FROM_STATUS || '|' || TO_STATUS || '|' || REASON || '|' || REQUESTED_BY || '|' || REQUESTED_BY_KIND
			FROM AUD_RUN_INTERVENTIONS WHERE PIPELINE_RUN_ID = $1`, l.run)
		if row != "REOPEN|FAILED|IN-PROGRESS|fix the feed|tester@host|HUMAN" {
			t.Fatalf("intervention %s", row)
		}
		var status, pending string
		l.scalar(&status, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", l.run)
		l.scalar(&pending, "SELECT REPAIR_PENDING FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", l.run)
		if status != RunInProgress || pending != "Y" {
			t.Fatalf("%s %s", status, pending)
		}
		if err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return endErr(finishRun(ctx, tx, l.run, "", runEnding{Status: RunSuccess}, now))
		}); err != nil {
			t.Fatal(err)
		}
		var rev int
		l.scalar(&rev, "SELECT OUTPUT_REVISION FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", l.run)
		l.scalar(&pending, "SELECT REPAIR_PENDING FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", l.run)
		if rev != 2 || pending != "N" {
			t.Fatalf("a published repair: revision %d pending %s", rev, pending)
		}
	})
}

func TestAnOperatorsChangeBeatsARunningAttempt(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		q, owner := l.attemptIn(AttemptRunning)
		l.exec(`UPDATE AUD_TASK_RUN_LOG SET STATUS = 'SUCCESS', TARGET_COUNT = 12, ERROR_MESSAGE = 'loaded by hand' WHERE TASK_RUN_ID = $1`, q.TaskRunID)
		err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return finishAttempt(ctx, tx, q.AttemptID, owner, okOutcome, now)
		})
		wantCode(t, err, exit.StaleTransition, "found status SUCCESS at attempt 1")
		var target int
		l.scalar(&target, "SELECT TARGET_COUNT FROM AUD_TASK_RUN_LOG WHERE TASK_RUN_ID = $1", q.TaskRunID)
		if target != 12 || l.summary(q.TaskRunID) != "SUCCESS|1|loaded by hand" || !strings.HasPrefix(l.snapshot(q.AttemptID), AttemptRunning) {
			t.Fatalf("summary %s target %d attempt %s", l.summary(q.TaskRunID), target, l.snapshot(q.AttemptID))
		}
	})
}

func TestMissingRowsAndInvalidTargetsAreRefused(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		for name, fn := range map[string]func(context.Context, *wtx, time.Time) error{
			"claim": func(ctx context.Context, tx *wtx, now time.Time) error { return claimAttempt(ctx, tx, 9999, "o", now) },
			"finish": func(ctx context.Context, tx *wtx, now time.Time) error {
				return finishAttempt(ctx, tx, 9999, "o", okOutcome, now)
			},
			"cancel": func(ctx context.Context, tx *wtx, now time.Time) error {
				return stopAttempt(ctx, tx, 9999, AttemptCancelled, "x", now)
			},
			"run": func(ctx context.Context, tx *wtx, now time.Time) error {
				return endErr(finishRun(ctx, tx, 9999, "o", runEnding{Status: RunSuccess}, now))
			},
			"reopen": func(ctx context.Context, tx *wtx, now time.Time) error { return reopenRun(ctx, tx, 9999, 0, "", "x") },
		} {
			err := l.do(fn)
			if exit.CodeOf(err) != exit.StaleTransition || !strings.Contains(err.Error(), "row_id=9999") || !strings.Contains(err.Error(), "found missing") {
				t.Errorf("%s of a missing row: %v", name, err)
			}
		}
		err := l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return endErr(finishRun(ctx, tx, l.run, l.owner, runEnding{Status: RunInProgress}, now))
		})
		wantCode(t, err, exit.StaleTransition, "expected an ending status")
		q, owner := l.attemptIn(AttemptRunning)
		err = l.do(func(ctx context.Context, tx *wtx, now time.Time) error {
			return finishAttempt(ctx, tx, q.AttemptID, owner, outcome{Status: TaskSkipped}, now)
		})
		wantCode(t, err, exit.StaleTransition, "expected an ending status SUCCESS, FAILED or TIMED_OUT")
	})
}

func TestAttemptNumbersContinueLegacyCounts(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		cases := []struct {
			status string
			count  int
			next   int
		}{{TaskSuccess, 4, 5}, {TaskFailed, 2, 3}, {TaskSkipped, 1, 1}, {TaskInProgress, 0, 1}}
		for _, c := range cases {
			taskID := l.newTask()
			l.exec(`INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS, ATTEMPT_COUNT) VALUES ($1, $2, $3, $4)`,
				taskID, l.run, c.status, c.count)
			q, err := l.queue(taskID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if q.Number != c.next || !strings.HasPrefix(l.summary(q.TaskRunID), fmt.Sprintf("IN-PROGRESS|%d|", c.next)) {
				t.Errorf("%s/%d: next attempt %d, summary %s; want %d", c.status, c.count, q.Number, l.summary(q.TaskRunID), c.next)
			}
		}
	})
}

// endErr is the error of finishRun, its SLA status aside.
func endErr(_ string, err error) error { return err }
