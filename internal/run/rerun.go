package run

import (
	"context"
	"fmt"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
)

// Rerun runs a task again under the selected run, as an operator asks (run
// --task_code --rerun --reason): a new attempt on its task run whatever its
// status, without judging its dependencies, consuming nothing, recorded as a
// RERUN intervention. A run that had ended is reopened for it (REOPEN, a
// pending repair) and ended again from its tasks afterwards, once every task
// has ended; a run in progress is left for run --pipeline_code to finish.
//
// When the task succeeds after having failed, the tasks its failure made the
// engine skip are reset, so that the run goes on with them. withDownstream
// runs every task downstream of it again too, in dependency order, each
// when its own pipeline's dependencies are satisfied by then; the others are
// left as they are.
func (s *Supervisor) Rerun(ctx context.Context, req Request, withDownstream bool) (Outcome, error) {
	if err := s.checkIntervention("{rerun}", req.Reason); err != nil {
		return Outcome{}, err
	}
	if req.Force || req.IgnoreDependencies {
		return Outcome{}, usage("{rerun} already runs the task past its checks: pass neither {force} nor {ignore_dependencies} with it")
	}
	out := Outcome{PipelineCode: req.PipelineCode}
	c, paused, err := s.prepareTask(ctx, req, &out)
	if paused || err != nil {
		return out, err
	}
	g, policies, t, r := c.g, c.policies, c.t, c.r
	switch {
	case r.Status == RunQueued:
		return out, exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d is QUEUED and has not been admitted yet", g.Pipeline.Code, r.ID)
	case r.Status == RunCancelled:
		return out, exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d was CANCELLED and is never reopened; start a new run with etl-craft run {pipeline} %s",
			g.Pipeline.Code, r.ID, g.Pipeline.Code)
	}
	ended := runEnded(r.Status)
	if ended {
		// The reopened run is held by this rerun until it ends it again
		// or lets it go: a server sees a run it may not take, rather than
		// a run with no owner whose queued attempt it would claim first.
		owner := NewOwner()
		r.Owner = owner
		defer hold(owner)()
		defer s.keepRun(ctx, r.ID, owner)()
	}
	var ran, left []string
	failedBefore := false
	tasks := []*pipeline.Task{t}
	if withDownstream {
		tasks = append(tasks, downstreamOf(g, t)...)
	}
	for i, x := range tasks {
		rows, err := loadTaskRuns(ctx, s.opts.DB, r.ID)
		if err != nil {
			return out, err
		}
		row, hasRow := rows[x.ID]
		switch {
		case row.attemptStatus == AttemptClaimed || row.attemptStatus == AttemptRunning:
			if i == 0 {
				out.Status, out.Code = TaskInProgress, exit.Incomplete
				out.Detail = fmt.Sprintf("%s is already %s under pipeline_run_id=%d (held by %s)", x.Code, TaskInProgress, r.ID, row.owner)
				return out, nil
			}
			left = append(left, x.Code)
			continue
		case i > 0 && !ownSatisfied(x, rows):
			left = append(left, x.Code)
			continue
		}
		if i == 0 {
			failedBefore = hasRow && row.up.Status == TaskFailed
		}
		q, err := s.queueRerun(ctx, g, &r, x, row, hasRow, req.Reason)
		if err != nil {
			return out, err
		}
		res, err := s.runAttempts(ctx, slot{run: r, g: g, task: x, policy: policies[x.ID], rerun: true, again: true, queued: q})
		if err != nil {
			return out, err
		}
		ran = append(ran, fmt.Sprintf("%s (%s)", x.Code, res.status))
		if res.retry != nil {
			s.attemptOutcome(&out, res)
			out.Detail = x.Code + ": " + out.Detail
			return out, nil
		}
		if res.status != TaskSuccess {
			out.Code = exit.Failure
			if i == 0 {
				break
			}
		}
	}
	detail := "ran again: " + strings.Join(ran, ", ")
	if len(left) > 0 {
		detail += "; not run again, their dependencies are not met: " + strings.Join(left, ", ")
	}
	if failedBefore && !withDownstream && out.Code == exit.Success {
		var reset, kept []string
		only := map[int64]bool{}
		for _, d := range downstreamOf(g, t) {
			only[d.ID] = true
		}
		err := inTx(ctx, s.opts.DB, func(tx *wtx) (err error) {
			reset, kept, err = resetSkipped(ctx, tx, g.Pipeline.ID, r.ID, req.Reason, only)
			return err
		})
		if err != nil {
			return out, err
		}
		if len(reset) > 0 {
			detail += "; reset to run again: " + strings.Join(reset, ", ")
		}
		if len(kept) > 0 {
			detail += "; kept SKIPPED: " + strings.Join(kept, ", ")
		}
	}
	if !ended {
		out.Status, out.Detail = RunInProgress, joinDetail(detail, "the run is still "+RunInProgress+": etl-craft run {pipeline} "+g.Pipeline.Code+" finishes it")
		return out, nil
	}
	fin, err := s.refinish(ctx, g, r)
	if err != nil {
		return out, err
	}
	out.Status, out.Detail = fin.Status, joinDetail(detail, fin.Detail)
	if fin.Code == exit.Failure {
		out.Code = exit.Failure
	}
	return out, nil
}

// queueRerun queues the rerun's attempt of a task, reopening the run first
// when it has ended (held by r.Owner), and records the RERUN, all in one
// transaction: a server that sees the reopened run sees the attempt queued
// with it, and never queues one of its own for the task meanwhile.
func (s *Supervisor) queueRerun(ctx context.Context, g *pipeline.Graph, r *runRow, t *pipeline.Task, row taskRunRow, hasRow bool,
	reason string) (queued, error) {
	var q queued
	reopened := runEnded(r.Status)
	err := inTx(ctx, s.opts.DB, func(tx *wtx) (err error) {
		if reopened {
			if err := s.reopenForOperator(ctx, tx, g, *r, r.Owner, reason); err != nil {
				return err
			}
		}
		q, err = queueOverrideIn(ctx, tx, g, *r, t, row, hasRow, "RERUN", reason)
		return err
	})
	if err == nil && reopened {
		r.Status = RunInProgress
	}
	return q, err
}

// downstreamOf returns the tasks downstream of t in its pipeline, in wave
// order.
func downstreamOf(g *pipeline.Graph, t *pipeline.Task) []*pipeline.Task {
	below := map[int64]bool{}
	var out []*pipeline.Task
	for _, wave := range g.Waves() {
		for _, x := range wave {
			for _, u := range g.Upstreams(x) {
				if u.ID == t.ID || below[u.ID] {
					below[x.ID] = true
				}
			}
			if below[x.ID] {
				out = append(out, x)
			}
		}
	}
	return out
}

// ownSatisfied reports whether enough of a task's dependencies on its own
// pipeline's tasks are satisfied under the run for it to run again: the
// readiness rule over those dependencies only, failures as they stand.
func ownSatisfied(t *pipeline.Task, rows map[int64]taskRunRow) bool {
	v := readiness.Decide(readiness.Question{Task: t, Upstream: rowsUpstream(rows), Failures: readiness.FailuresAsTheyStand,
		OwnOnly: true})
	return v.Decision == readiness.Start
}
