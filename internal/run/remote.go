package run

// The steps an orchestrator runs a pipeline with: run --init-only, one run
// --task_code per task (RunTask), and run --finalize-only. In remote mode
// (Options.Remote) the orchestrator is the only source of truth: its DAG
// holds every scheduling rule, so etl-craft judges no dependency and no
// gate, and init refuses the rules an orchestrator cannot express.

import (
	"context"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// NotRunByOrchestrator is why --finalize-only records a task the
// orchestrator never ran SKIPPED.
const NotRunByOrchestrator = "not run by the orchestrator"

// lostByOrchestrator is why --finalize-only records a task still
// IN-PROGRESS FAILED: the orchestrator waits for every task before it
// finalizes, so that task's process ended without recording an outcome.
const lostByOrchestrator = "still " + TaskInProgress + " when the orchestrator finalized the run: the process running the task ended without recording an outcome"

// InitRun starts or resumes the pipeline's run without running a task (run
// --init-only, an orchestrator's first step), and leaves it IN-PROGRESS with
// no owner for the task steps. In local mode a new run passes its pipeline
// gate first, and may end SKIPPED. In remote mode the rules an orchestrator
// cannot express are refused first (exit 18), no gate is judged, a run
// created with a key is an ORCHESTRATOR run, and a run selected by key that
// had ended is reopened (the orchestrator cleared an old DAG run).
func (s *Supervisor) InitRun(ctx context.Context, req Request) (Outcome, error) {
	if err := req.CheckRunDate(); err != nil {
		return Outcome{}, err
	}
	g, _, err := s.load(ctx, req.PipelineCode)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{PipelineCode: g.Pipeline.Code}
	if s.opts.Remote {
		if err := g.RemoteRefusal(s.opts.GlobalDAG); err != nil {
			return out, err
		}
	}
	if paused, err := s.beforeRun(ctx, g, g.Tasks, &out); paused || err != nil {
		return out, err
	}
	st := start{req: req, gated: !s.opts.Remote, kind: TriggerManual, key: req.RunKey, date: req.RunDate}
	if s.opts.Remote {
		st.reopen = "the orchestrator initialized its run again"
		if req.RunKey != "" {
			st.kind = TriggerOrchestrator
		}
	}
	b, err := s.bindRun(ctx, g, st)
	if err != nil {
		return out, err
	}
	if out, done := s.gateOutcome(ctx, g, b); done {
		return out, nil
	}
	out.RunID, out.Status = b.run.ID, RunInProgress
	return out, nil
}

// FinalizeRun ends the selected run from its tasks' statuses (run
// --finalize-only, an orchestrator's last step); the run must be IN-PROGRESS
// (exit 9 otherwise). In local mode a run that ended SKIPPED (as its
// pipeline gate ends one at --init-only) is reported as it is, and a paused
// pipeline without the run ends nothing (both exit 0). In remote mode the orchestrator's decisions are
// recorded first: a task it never ran is SKIPPED (NotRunByOrchestrator), a
// task still IN-PROGRESS is FAILED. In local mode the tasks that can never
// run are recorded SKIPPED as a run would, and nothing is started.
func (s *Supervisor) FinalizeRun(ctx context.Context, req Request) (Outcome, error) {
	g, policies, err := s.load(ctx, req.PipelineCode)
	if err != nil {
		return Outcome{}, err
	}
	out := Outcome{PipelineCode: g.Pipeline.Code}
	r, err := s.selectDated(ctx, g, req)
	if err != nil {
		// A paused pipeline's --init-only started no run: nothing to end.
		if paused, perr := s.paused(ctx, g, &out); paused || perr != nil {
			return out, perr
		}
		return out, err
	}
	out.RunID = r.ID
	if r.Status == RunSkipped && !s.opts.Remote {
		// Skipped before the orchestrator's steps (its pipeline gate at
		// --init-only): it has ended as they found it.
		out.Status, out.Detail = RunSkipped, "it had already ended: nothing to finalize"
		return out, nil
	}
	if r.Status != RunInProgress {
		return out, exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d is %s; expected %s to finalize", g.Pipeline.Code, r.ID, r.Status, RunInProgress)
	}
	owner := NewOwner()
	b, err := s.bindRun(ctx, g, start{req: Request{RunID: r.ID}, owner: owner})
	if err != nil {
		return out, err
	}
	if !s.opts.Remote {
		d := s.dispatcher(g, policies, b.run, owner)
		d.startNothing = true
		return d.supervise(ctx)
	}
	note, err := s.recordOrchestrated(ctx, g, b.run)
	if err == nil {
		out, err = s.finish(ctx, g, b.run, owner, note)
	}
	if err != nil {
		if rerr := inTx(context.WithoutCancel(ctx), s.opts.DB, func(tx *wtx) error { return releaseRun(ctx, tx, r.ID, owner) }); rerr != nil {
			s.log.Warn("could not release the run", "pipeline_run_id", r.ID, "error", rerr)
		}
	}
	return out, err
}

// recordOrchestrated records what the orchestrator decided about the tasks
// it left unfinished, and returns the note for the run's summary naming the
// tasks it never ran.
func (s *Supervisor) recordOrchestrated(ctx context.Context, g *pipeline.Graph, r runRow) (string, error) {
	var notRun []string
	err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
		notRun = nil
		rows, err := loadTaskRuns(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		now := time.Now()
		for _, t := range g.Tasks {
			row, ok := rows[t.ID]
			switch {
			case !ok:
				if _, err := skipTask(ctx, tx, r.ID, t.ID, NotRunByOrchestrator, now); err != nil {
					return err
				}
				notRun = append(notRun, t.Code)
			case row.attemptStatus != "":
				if err := stopAttempt(ctx, tx, row.queued.AttemptID, AttemptFailed, lostByOrchestrator, now); err != nil {
					return err
				}
				s.log.Error("task failed: "+lostByOrchestrator, "task", t.Code, "pipeline_run_id", r.ID)
			}
		}
		return nil
	})
	if err != nil || len(notRun) == 0 {
		return "", err
	}
	return NotRunByOrchestrator + ": " + strings.Join(notRun, ", "), nil
}
