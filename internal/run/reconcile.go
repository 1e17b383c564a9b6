package run

import (
	"context"
	"fmt"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// ReconcileLock is the lock reconcilers take, so two never fence the same
// work at once.
const ReconcileLock = "reconcile"

// Scope limits a reconciliation to a pipeline, or to one of its tasks;
// empty means every pipeline.
type Scope struct {
	PipelineCode string
	TaskCode     string
}

// LostAttempt is an attempt a reconciliation fenced as LOST.
type LostAttempt struct {
	AttemptID     int64
	TaskRunID     int64
	PipelineRunID int64
	PipelineCode  string
	TaskCode      string
	Number        int
	// Owner is the lease holder that was fenced: its process is gone, or it
	// stopped renewing.
	Owner string
	// Stopped is set when the owner's process was still alive on this host
	// and was stopped.
	Stopped bool
	// RetryAttemptID is the retry queued by policy, 0 when none.
	RetryAttemptID int64
}

// Reconciliation is what Reconcile did.
type Reconciliation struct {
	Lost []LostAttempt
	// Released are the runs whose expired lease was taken away, so another
	// supervisor can resume them.
	Released []int64
}

// Reconcile fences the CLAIMED and RUNNING attempts whose owner can no
// longer finish them: on this host, at once when the owner's process is
// verifiably gone, and once the lease expired when it is alive but stuck (it
// is then stopped); on another host, once the lease has been expired for two
// more lease periods. Each becomes LOST, its task's summary FAILED naming the
// lost owner, and a retry is queued when its policy allows. Runs whose
// supervisor is gone from this host, or whose lease expired, and that have
// no live attempt are released for resumption. A live owner of this host
// keeps its leases.
func (s *Supervisor) Reconcile(ctx context.Context, scope Scope) (Reconciliation, error) {
	var out Reconciliation
	cond, args, err := s.scopeFilter(ctx, scope)
	if err != nil {
		return out, err
	}
	held, err := lock.Acquire(ctx, s.opts.DB, ReconcileLock, 0)
	if err != nil {
		return out, err
	}
	defer held.Release()
	now := time.Now()
	candidates, err := s.activeAttempts(ctx, cond, args)
	if err != nil {
		return out, err
	}
	graphs := map[string]*pipeline.Graph{}
	for _, c := range candidates {
		before, ok := takeable(c.proc, c.lease, now, ForeignGrace)
		if !ok {
			continue
		}
		gone := c.proc.Gone()
		stuck := !gone && c.proc.Alive() && !c.proc.IsSelf()
		msg := fmt.Sprintf("attempt %d was lost: its owner %s stopped renewing its lease", c.lost.Number, c.lost.Owner)
		switch {
		case gone:
			msg = fmt.Sprintf("attempt %d was lost: its owner %s ended before finishing it (process %d is gone)",
				c.lost.Number, c.lost.Owner, c.proc.PID)
		case stuck:
			msg += fmt.Sprintf("; its process (pid %d) was stopped", c.proc.PID)
		}
		policy, retry := s.policyFor(ctx, graphs, c.lost.PipelineCode, c.taskID)
		err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
			c.lost.RetryAttemptID = 0
			if err := loseAttempt(ctx, tx, c.lost.AttemptID, c.lost.Owner, before, now, msg); err != nil {
				return err
			}
			if !retry {
				return nil
			}
			next, _, err := queueRetry(ctx, tx, c.lost.PipelineRunID, c.taskID,
				queued{TaskRunID: c.lost.TaskRunID, AttemptID: c.lost.AttemptID, Number: c.lost.Number}, policy, now)
			if next != nil {
				c.lost.RetryAttemptID = next.AttemptID
			}
			return err
		})
		if exit.Is(err, exit.StaleTransition) {
			continue // renewed, finished or fenced meanwhile
		}
		if err != nil {
			return out, err
		}
		if stuck {
			c.lost.Stopped = true
			if err := c.proc.stop(StopGrace); err != nil {
				s.log.Warn("could not stop the process of a lost attempt", "pid", c.proc.PID, "error", err)
			}
		}
		s.log.Warn("attempt lost", "pipeline", c.lost.PipelineCode, "task", c.lost.TaskCode,
			"attempt_id", c.lost.AttemptID, "owner", c.lost.Owner, "process_gone", gone, "stopped", c.lost.Stopped)
		out.Lost = append(out.Lost, c.lost)
	}
	released, err := s.releaseRuns(ctx, now, cond, args)
	out.Released = released
	return out, err
}

// scopeFilter turns a scope into a condition on the columns r.PIPELINE_ID
// and t.TASK_ID, with its arguments numbered from $1.
func (s *Supervisor) scopeFilter(ctx context.Context, scope Scope) (string, []any, error) {
	if scope.PipelineCode == "" {
		return "1 = 1", nil, nil
	}
	if scope.TaskCode == "" {
		p, err := pipeline.Find(ctx, s.opts.DB, scope.PipelineCode)
		if err != nil {
			return "", nil, err
		}
		return "r.PIPELINE_ID = $1", []any{p.ID}, nil
	}
	g, err := pipeline.Load(ctx, s.opts.DB, scope.PipelineCode)
	if err != nil {
		return "", nil, err
	}
	t, err := g.FindTask(scope.TaskCode)
	if err != nil {
		return "", nil, err
	}
	return "r.PIPELINE_ID = $1 AND t.TASK_ID = $2", []any{g.Pipeline.ID, t.ID}, nil
}

// active is a CLAIMED or RUNNING attempt, the process that runs it and when
// its lease ends.
type active struct {
	lost   LostAttempt
	taskID int64
	proc   Process
	lease  time.Time
}

// activeAttempts returns the CLAIMED and RUNNING attempts in scope.
func (s *Supervisor) activeAttempts(ctx context.Context, cond string, args []any) ([]active, error) {
	rows, err := s.opts.DB.QueryContext(ctx, `SELECT a.ATTEMPT_ID, a.TASK_RUN_ID, t.PIPELINE_RUN_ID, p.PIPELINE_CODE, ct.TASK_CODE,
			a.ATTEMPT_NUMBER, COALESCE(a.OWNER_ID, ''), t.TASK_ID, COALESCE(a.HOST, ''), COALESCE(a.PID, 0),
			COALESCE(a.PROCESS_START, ''), a.LEASE_EXPIRES_AT
		FROM AUD_TASK_ATTEMPTS a
		JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
		JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
		JOIN CFG_TASKS ct ON ct.TASK_ID = t.TASK_ID
		WHERE a.STATUS IN (`+records.SQL(records.AttemptClaimed, records.AttemptRunning)+`) AND `+cond+`
		ORDER BY a.ATTEMPT_ID`, args...)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the attempts to reconcile")
	}
	defer rows.Close()
	var out []active
	for rows.Next() {
		var e active
		var lease engine.Time
		if err := rows.Scan(&e.lost.AttemptID, &e.lost.TaskRunID, &e.lost.PipelineRunID, &e.lost.PipelineCode,
			&e.lost.TaskCode, &e.lost.Number, &e.lost.Owner, &e.taskID, &e.proc.Host, &e.proc.PID,
			&e.proc.Start, &lease); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read the attempts to reconcile")
		}
		e.lease = lease.Time
		out = append(out, e)
	}
	return out, rows.Err()
}

// policyFor returns the retry policy of a task of an active pipeline; ok is
// false when the task or pipeline is no longer active, or its policy is
// malformed, and the lost attempt is then not retried.
func (s *Supervisor) policyFor(ctx context.Context, graphs map[string]*pipeline.Graph, code string, taskID int64) (Policy, bool) {
	g, seen := graphs[code]
	if !seen {
		g, _ = pipeline.Load(ctx, s.opts.DB, code)
		graphs[code] = g
	}
	if g == nil || g.TaskByID(taskID) == nil {
		return Policy{}, false
	}
	p, err := s.policyOf(g, g.TaskByID(taskID))
	return p, err == nil
}

// releaseRuns releases the runs in scope whose supervisor's lease may be
// taken (see takeable: its process is gone from this host, or the lease
// expired) and that have no live attempt, but never a run a supervisor of
// this process holds (see held).
func (s *Supervisor) releaseRuns(ctx context.Context, now time.Time, cond string, args []any) ([]int64, error) {
	// The scope's task condition does not apply to runs.
	if len(args) == 2 {
		cond, args = "r.PIPELINE_ID = $1", args[:1]
	}
	rows, err := s.opts.DB.QueryContext(ctx, `SELECT r.PIPELINE_RUN_ID, r.OWNER_ID, r.LEASE_EXPIRES_AT FROM AUD_PIPELINES_RUN_LOG r
		WHERE r.STATUS = `+records.SQL(records.RunInProgress)+` AND r.OWNER_ID IS NOT NULL AND `+cond+`
		ORDER BY r.PIPELINE_RUN_ID`, args...)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the runs to reconcile")
	}
	type held struct {
		id     int64
		owner  string
		before time.Time
	}
	var runs []held
	for rows.Next() {
		var h held
		var lease engine.Time
		if err := rows.Scan(&h.id, &h.owner, &lease); err != nil {
			rows.Close()
			return nil, exit.Wrap(exit.EngineDB, err, "could not read the runs to reconcile")
		}
		var ok bool
		if h.before, ok = takeable(ownerProcess(h.owner), lease.Time, now, 0); ok && !holding(h.owner) {
			runs = append(runs, h)
		}
	}
	rows.Close()
	var released []int64
	for _, h := range runs {
		err := inTx(ctx, s.opts.DB, func(tx *wtx) error { return releaseAbandonedRun(ctx, tx, h.id, h.owner, h.before, now) })
		if exit.Is(err, exit.StaleTransition) {
			continue
		}
		if err != nil {
			return released, err
		}
		s.log.Info("released the lease of a run whose supervisor is gone", "pipeline_run_id", h.id, "owner", h.owner)
		released = append(released, h.id)
	}
	return released, nil
}
