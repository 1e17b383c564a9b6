package run

import (
	"context"
	"fmt"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/pipeline"
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
	// Owner is the lease holder that stopped renewing.
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

// Reconcile fences the CLAIMED and RUNNING attempts whose lease expired:
// on this host, when the owner's process is gone, or is alive but stuck (it
// is then stopped); on another host, once the lease has been expired for two
// more lease periods. Each becomes LOST, its task's summary FAILED naming the
// lost owner, and a retry is queued when its policy allows. Runs whose lease
// expired and that have no live attempt are released for resumption.
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
	candidates, err := s.expiredAttempts(ctx, now, cond, args)
	if err != nil {
		return out, err
	}
	graphs := map[string]*pipeline.Graph{}
	for _, c := range candidates {
		cutoff := now
		if c.proc.Host != Self().Host {
			cutoff = now.Add(-ForeignGrace)
			if !c.lease.Before(cutoff) {
				continue
			}
		}
		stuck := c.proc.Alive() && !c.proc.IsSelf()
		msg := fmt.Sprintf("attempt %d was lost: its owner %s stopped renewing its lease", c.lost.Number, c.lost.Owner)
		if stuck {
			msg += fmt.Sprintf("; its process (pid %d) was stopped", c.proc.PID)
		}
		policy, retry := s.policyFor(ctx, graphs, c.lost.PipelineCode, c.taskID)
		err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
			c.lost.RetryAttemptID = 0
			if err := loseAttempt(ctx, tx, c.lost.AttemptID, c.lost.Owner, cutoff, now, msg); err != nil {
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
			"attempt_id", c.lost.AttemptID, "owner", c.lost.Owner, "stopped", c.lost.Stopped)
		out.Lost = append(out.Lost, c.lost)
	}
	released, err := s.releaseRuns(ctx, now, cond, args)
	out.Released = released
	return out, err
}

// scopeFilter turns a scope into a condition on the columns r.PIPELINE_ID
// and t.TASK_ID, with its arguments numbered from $2.
func (s *Supervisor) scopeFilter(ctx context.Context, scope Scope) (string, []any, error) {
	if scope.PipelineCode == "" {
		return "1 = 1", nil, nil
	}
	if scope.TaskCode == "" {
		p, err := pipeline.Find(ctx, s.opts.DB, scope.PipelineCode)
		if err != nil {
			return "", nil, err
		}
		return "r.PIPELINE_ID = $2", []any{p.ID}, nil
	}
	g, err := pipeline.Load(ctx, s.opts.DB, scope.PipelineCode)
	if err != nil {
		return "", nil, err
	}
	t, err := g.FindTask(scope.TaskCode)
	if err != nil {
		return "", nil, err
	}
	return "r.PIPELINE_ID = $2 AND t.TASK_ID = $3", []any{g.Pipeline.ID, t.ID}, nil
}

// expired is an attempt whose lease expired.
type expired struct {
	lost   LostAttempt
	taskID int64
	proc   Process
	lease  time.Time
}

// expiredAttempts returns the CLAIMED and RUNNING attempts in scope whose
// lease expired before now.
func (s *Supervisor) expiredAttempts(ctx context.Context, now time.Time, cond string, args []any) ([]expired, error) {
	rows, err := s.opts.DB.QueryContext(ctx, `SELECT a.ATTEMPT_ID, a.TASK_RUN_ID, t.PIPELINE_RUN_ID, p.PIPELINE_CODE, ct.TASK_CODE,
			a.ATTEMPT_NUMBER, COALESCE(a.OWNER_ID, ''), t.TASK_ID, COALESCE(a.HOST, ''), COALESCE(a.PID, 0),
			COALESCE(a.PROCESS_START, ''), a.LEASE_EXPIRES_AT
		FROM AUD_TASK_ATTEMPTS a
		JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
		JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
		JOIN CFG_TASKS ct ON ct.TASK_ID = t.TASK_ID
		WHERE a.STATUS IN ('CLAIMED', 'RUNNING') AND a.LEASE_EXPIRES_AT < $1 AND `+cond+`
		ORDER BY a.ATTEMPT_ID`, append([]any{s.opts.DB.TimeArg(now)}, args...)...)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the attempts to reconcile")
	}
	defer rows.Close()
	var out []expired
	for rows.Next() {
		var e expired
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

// releaseRuns releases the runs in scope whose lease expired and that have
// no live attempt.
func (s *Supervisor) releaseRuns(ctx context.Context, now time.Time, cond string, args []any) ([]int64, error) {
	// The scope's task condition does not apply to runs.
	if len(args) == 2 {
		cond, args = "r.PIPELINE_ID = $2", args[:1]
	}
	rows, err := s.opts.DB.QueryContext(ctx, `SELECT r.PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG r
		WHERE r.STATUS = 'IN-PROGRESS' AND r.OWNER_ID IS NOT NULL AND r.LEASE_EXPIRES_AT < $1 AND `+cond+`
		ORDER BY r.PIPELINE_RUN_ID`, append([]any{s.opts.DB.TimeArg(now)}, args...)...)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the runs to reconcile")
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, exit.Wrap(exit.EngineDB, err, "could not read the runs to reconcile")
		}
		ids = append(ids, id)
	}
	rows.Close()
	var released []int64
	for _, id := range ids {
		err := inTx(ctx, s.opts.DB, func(tx *wtx) error { return releaseExpiredRun(ctx, tx, id, now) })
		if exit.Is(err, exit.StaleTransition) {
			continue
		}
		if err != nil {
			return released, err
		}
		s.log.Info("released the expired lease of a run", "pipeline_run_id", id)
		released = append(released, id)
	}
	return released, nil
}
