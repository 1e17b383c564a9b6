package run

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// runRow is one AUD_PIPELINES_RUN_LOG row, as this package reads it.
type runRow struct {
	ID, PipelineID int64
	Status         string
	Key            string
	TriggerKind    string
	RunDate        string
	Backfill       bool
	Owner          string
	Lease          engine.Time
	Start          engine.Time
}

// rowOf is the runRow of a run log row.
func rowOf(r records.Run) runRow {
	return runRow{ID: r.ID, PipelineID: r.PipelineID, Status: string(r.Status), Key: r.Key, TriggerKind: string(r.TriggerKind),
		RunDate: r.RunDate, Backfill: r.Backfill, Owner: r.Owner, Lease: r.Lease, Start: r.Start}
}

// runWhere returns the pipeline's runs matching a condition on columns of
// AUD_PIPELINES_RUN_LOG r, oldest first.
func runWhere(ctx context.Context, q engine.Querier, pipelineID int64, cond string, args ...any) ([]runRow, error) {
	rows, err := records.QueryRuns(ctx, q, "SELECT "+records.RunColumns+records.RunsFrom+"WHERE r.PIPELINE_ID = $1 AND "+
		cond+" ORDER BY r.PIPELINE_RUN_ID", append([]any{pipelineID}, args...)...)
	if err != nil {
		return nil, err
	}
	out := make([]runRow, len(rows))
	for i, r := range rows {
		out[i] = rowOf(r)
	}
	return out, nil
}

// selectRun returns the run a command about one run works on, chosen as
// records.SelectRun chooses (by id, by key, or the pipeline's one run that
// has not ended; anything else is exit 9, listing the candidates).
func selectRun(ctx context.Context, q engine.Querier, p pipeline.Pipeline, req Request) (runRow, error) {
	r, err := records.SelectRun(ctx, q, p.ID, p.Code, records.RunSelector{ID: req.RunID, Key: req.RunKey})
	return rowOf(r), err
}

// start says how a command binds to its run.
type start struct {
	req Request
	// owner takes the run's lease; "" leaves the run without an owner, as
	// --init-only does.
	owner string
	// gated judges the pipeline gate before a new or QUEUED run is admitted.
	gated bool
	// kind, key and date are a new run's TRIGGER_KIND, RUN_KEY ("" for a
	// generated manual:<uuid>) and RUN_DATE.
	kind, key, date string
	backfill        bool
	// bypass, when set, is recorded as the new run's GATE_BYPASS (a
	// backfill's reason).
	bypass string
	// reopen, when set, is the reason an ended run selected by id or key is
	// reopened; without it an ended run is refused.
	reopen string
	// takeLater leaves an unowned IN-PROGRESS run untaken (bound.untaken):
	// its first attempt takes it in the transaction that starts it (the
	// server's runs, see dispatcher.untaken).
	takeLater bool
}

// bound is the run a command bound to, and how its pipeline gate went.
type bound struct {
	run runRow
	// skipped is why the pipeline gate refused the new run, which ended
	// SKIPPED.
	skipped string
	// bypass names the dependencies Dependency_gates let through.
	bypass string
	// ended is the status of a QUEUED run someone else ended (SKIPPED or
	// CANCELLED) while its gate waited.
	ended string
	// interrupted is set when the command was interrupted while the gate
	// waited: the run stays QUEUED, its budget kept; nextCheck is its next
	// look.
	interrupted bool
	nextCheck   time.Time
	// untaken is set when the run, IN-PROGRESS with no owner, was bound
	// without taking it (start.takeLater).
	untaken bool
}

// bindRun gives a command its run: the run named by id or key, else the
// pipeline's run in progress, else its oldest QUEUED run, else a new run (an
// unknown key names the new run). A run taken over gets st.owner's lease. A
// new gated run is recorded QUEUED on its own, so that it persists while its
// pipeline gate waits, and is admitted (or ended SKIPPED) by admitQueued; an
// ungated run is created IN-PROGRESS at once.
func (s *Supervisor) bindRun(ctx context.Context, g *pipeline.Graph, st start) (bound, error) {
	if st.gated || st.takeLater {
		// A gated command bound to a QUEUED run writes nothing before the
		// gate's first look, whose transaction reads the run again: find it
		// without taking a write transaction (SQLite has one writer). So
		// does a server's run that its first attempt takes.
		r, found, err := s.findRun(ctx, s.opts.DB, g, st)
		switch {
		case err != nil || !found:
		case r.Status == RunQueued && st.gated:
			return s.admitQueued(ctx, g, r, st)
		case r.Status == RunInProgress && r.Owner == "" && st.takeLater && st.owner != "":
			return bound{run: r, untaken: true}, nil
		}
	}
	var b bound
	queued := false
	bind := func(tx *wtx) error {
		r, found, err := s.findRun(ctx, tx, g, st)
		if err != nil {
			return err
		}
		now := time.Now()
		if !found {
			nr := newRun{PipelineID: g.Pipeline.ID, Key: st.key, TriggerKind: st.kind, RunDate: st.date, Backfill: st.backfill}
			if nr.Key == "" {
				nr.Key = "manual:" + newUUID()
			}
			if nr.RunDate == "" {
				nr.RunDate = now.In(s.opts.Location).Format(time.DateOnly)
			}
			id, err := insertRun(ctx, tx, nr)
			if err != nil {
				return err
			}
			b.run = runRow{ID: id, PipelineID: g.Pipeline.ID, Status: RunQueued, Key: nr.Key, TriggerKind: nr.TriggerKind,
				RunDate: nr.RunDate, Backfill: nr.Backfill}
			if st.gated {
				queued = true
				return nil
			}
			if err := fault.Point("pipeline.after_insert"); err != nil {
				return err
			}
			if err := gate.RecordBypass(ctx, tx.Tx, g.Pipeline.ID, id, 0, st.bypass, now); err != nil {
				return err
			}
			return s.admit(ctx, tx, g, &b.run, st.owner, now)
		}
		b.run = r
		switch {
		case r.Status == RunQueued && st.gated:
			queued = true
			return nil
		case r.Status == RunQueued:
			return s.admit(ctx, tx, g, &b.run, st.owner, now)
		case runEnded(r.Status) && st.reopen != "" && r.Status != RunCancelled:
			if err := reopenRun(ctx, tx, r.ID, 0, "", st.reopen); err != nil {
				return err
			}
			b.run.Status = RunInProgress
			return nil
		case runEnded(r.Status):
			return exit.Fieldf(exit.RunState,
				"pipeline %s: pipeline_run_id=%d (key %s) ended %s; it is not started again: run without {run_id}/{run_key} to start a new run, or rerun a task of it with {task} {rerun} {reason}",
				g.Pipeline.Code, r.ID, r.Key, r.Status)
		case st.owner == "":
			return nil
		case r.Owner != "":
			until := ""
			if r.Lease.Valid {
				until = ", lease until " + r.Lease.Time.UTC().Format(time.RFC3339)
			}
			return exit.Errorf(exit.RunState,
				"pipeline %s: pipeline_run_id=%d is supervised by %s%s; let it finish, or if that process died run etl-craft reconcile once its lease has expired",
				g.Pipeline.Code, r.ID, r.Owner, until)
		}
		if err := takeRun(ctx, tx, r.ID, st.owner, now); err != nil {
			return err
		}
		b.run.Owner = st.owner
		return nil
	}
	err := inTx(ctx, s.opts.DB, bind)
	if exit.Is(err, exit.StaleTransition) {
		// Another process created or took a run meanwhile: look again.
		err = inTx(ctx, s.opts.DB, bind)
	}
	if err != nil || !queued {
		return b, err
	}
	return s.admitQueued(ctx, g, b.run, st)
}

// findRun looks for the run a command binds to (see bindRun); found is false
// when a new run is to be created. A run of another date than the one asked
// for is refused, and so is a backfill's run in progress for a plain run
// that did not name it (or a plain run for a backfill).
func (s *Supervisor) findRun(ctx context.Context, tx engine.Querier, g *pipeline.Graph, st start) (runRow, bool, error) {
	code := g.Pipeline.Code
	var runs []runRow
	var err error
	explicit := st.req.RunID != 0 || st.req.RunKey != ""
	switch {
	case st.req.RunID != 0:
		var r runRow
		r, err = selectRun(ctx, tx, g.Pipeline, Request{RunID: st.req.RunID})
		runs = []runRow{r}
	case st.req.RunKey != "":
		runs, err = runWhere(ctx, tx, g.Pipeline.ID, "r.RUN_KEY = $2", st.req.RunKey)
	default:
		runs, err = runWhere(ctx, tx, g.Pipeline.ID, "r.STATUS = $2", RunInProgress)
		if err == nil && len(runs) == 0 && !st.backfill {
			runs, err = runWhere(ctx, tx, g.Pipeline.ID, "r.STATUS = $2 AND r.BACKFILL = 'N'", RunQueued)
		}
	}
	if err != nil || len(runs) == 0 {
		return runRow{}, false, err
	}
	r := runs[0]
	switch {
	case st.req.RunDate != "" && r.RunDate != st.req.RunDate && explicit:
		return r, true, exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d (key %s) has run_date=%s, not %s; a run's date cannot change",
			code, r.ID, r.Key, r.RunDate, st.req.RunDate)
	case st.req.RunDate != "" && r.RunDate != st.req.RunDate:
		step := ""
		if s.opts.Remote {
			step = " {finalize_only}"
		}
		return r, true, exit.Fieldf(exit.RunState,
			"pipeline %s has a run in progress (pipeline_run_id=%d) as of %s, not %s; finish it with etl-craft run {pipeline} %s%s, or cancel it, first",
			code, r.ID, r.RunDate, st.req.RunDate, code, step)
	case runEnded(r.Status):
	case r.Backfill && !st.backfill && !explicit:
		return r, true, exit.Fieldf(exit.RunState,
			"pipeline %s: pipeline_run_id=%d is a backfill's run in progress; a plain run does not take it over (finish the backfill, or cancel it with etl-craft cancel {pipeline} %s {reason} ...)",
			code, r.ID, code)
	case !r.Backfill && st.backfill:
		return r, true, exit.Errorf(exit.RunState,
			"pipeline %s has a run in progress (pipeline_run_id=%d); a backfill never takes it over: finish or cancel it first", code, r.ID)
	}
	return r, true, nil
}

// admit moves a QUEUED run to IN-PROGRESS under owner's lease ("" for
// none), and tells the Observer how long a run recorded before (r.Start set)
// waited. It is the last write of its transaction, so what it observes is
// what commits but for a failed commit.
func (s *Supervisor) admit(ctx context.Context, tx *wtx, g *pipeline.Graph, r *runRow, owner string, now time.Time) error {
	if err := admitRun(ctx, tx, g.Pipeline.ID, r.ID, owner, now); err != nil {
		return err
	}
	if o := s.opts.Observer; o != nil && r.Start.Valid {
		o.Admitted(g.Pipeline.Code, r.TriggerKind, now.Sub(r.Start.Time))
	}
	r.Status, r.Owner, r.Start = RunInProgress, owner, engine.Time{Time: now, Valid: true}
	return nil
}

// errNotQueued is the cause of a gate look that found its run no longer
// QUEUED: another process admitted or ended it.
type errNotQueued struct{ run runRow }

func (e errNotQueued) Error() string { return "pipeline_run_id is " + e.run.Status }

// admitQueued judges the pipeline gate of a QUEUED run and admits it, or ends
// it SKIPPED when the gate does not pass. Each look is one transaction that
// evaluates the gate (gate.Evaluate) and, once it has settled, records its
// decisions and admits or skips the run; between looks the process sleeps
// until the next look is due (gate.Await, on the supervisor's clock), so the
// wait and its budget survive a restart in AUD_GATE_WAITS.
func (s *Supervisor) admitQueued(ctx context.Context, g *pipeline.Graph, r runRow, st start) (bound, error) {
	b := bound{run: r}
	gt := gate.PipelineGate(r.ID, g, s.opts.GatePolicy, s.opts.GateWait)
	db := context.WithoutCancel(ctx)
	var lookErr error
	settled := st.req.Settled
	o, err := gate.Await(ctx, s.clock(), func(_ context.Context, now time.Time) (gate.Outcome, error) {
		var o gate.Outcome
		lookErr = inTx(db, s.opts.DB, func(tx *wtx) error {
			cur, err := runWhere(db, tx, g.Pipeline.ID, "r.PIPELINE_RUN_ID = $2", r.ID)
			if err != nil {
				return err
			}
			if len(cur) == 0 {
				return stale(runsTable, r.ID, "admit", "status QUEUED", "missing")
			}
			if cur[0].Status != RunQueued {
				return errNotQueued{cur[0]}
			}
			if o, err = gate.Evaluate(db, tx.Tx, gt, now); err != nil || o.Waiting() {
				if o.Waiting() && settled != nil {
					settled()
				}
				return err
			}
			if err := gate.Record(db, tx.Tx, r.ID, 0, o.Decisions); err != nil {
				return err
			}
			if err := fault.Point("pipeline.after_insert"); err != nil {
				return err
			}
			if !o.Pass {
				// A run of the pipeline started meanwhile keeps this one
				// QUEUED, as admitting it would.
				other, err := activeRunOf(db, tx, g.Pipeline.ID)
				if err != nil {
					return exit.Wrap(exit.EngineDB, err, "could not read %s", runsTable)
				}
				if other != 0 {
					return stale(runsTable, r.ID, "end", "no other "+RunInProgress+" run of the pipeline",
						fmt.Sprintf("another process started pipeline_run_id=%d", other))
				}
				return endQueuedRun(db, tx, r.ID, RunSkipped, time.Now())
			}
			if err := gate.RecordBypass(db, tx.Tx, g.Pipeline.ID, r.ID, 0, o.BypassReason(), now); err != nil {
				return err
			}
			b.run.Start = cur[0].Start // when it was recorded QUEUED
			return s.admit(db, tx, g, &b.run, st.owner, time.Now())
		})
		return o, lookErr
	})
	var nq errNotQueued
	if exit.Is(err, exit.StaleTransition) {
		// Another process admitted, or ended, the run meanwhile; or it
		// started another run of the pipeline.
		if cur, rerr := runWhere(db, s.opts.DB, g.Pipeline.ID, "r.PIPELINE_RUN_ID = $2", r.ID); rerr == nil && len(cur) == 1 && cur[0].Status != RunQueued {
			nq.run, err = cur[0], nq
		}
	}
	switch {
	case errors.As(err, &nq) && (nq.run.Status == RunSkipped || nq.run.Status == RunCancelled):
		b.ended = nq.run.Status
		return b, nil
	case errors.As(err, &nq):
		return b, exit.Errorf(exit.RunState,
			"pipeline %s: another process started pipeline_run_id=%d while this one was checking the pipeline's dependencies; that run is left as it is",
			g.Pipeline.Code, r.ID)
	case exit.Is(err, exit.StaleTransition):
		other, _ := activeRunOf(db, s.opts.DB, g.Pipeline.ID)
		return b, exit.Fieldf(exit.RunState,
			"pipeline %s: another process started pipeline_run_id=%d while this one was checking the pipeline's dependencies; pipeline_run_id=%d stays QUEUED: select it with {run_id} to resume it",
			g.Pipeline.Code, other, r.ID)
	case err != nil && lookErr == nil:
		// The sleep between two looks was interrupted.
		b.interrupted, b.nextCheck = true, o.NextCheckAt
		return b, nil
	case err != nil:
		return b, err
	case !o.Pass:
		b.skipped = o.Reason()
		b.run.Status = RunSkipped
	default:
		b.bypass = o.BypassReason()
	}
	return b, nil
}

// clock is the supervisor's clock for gate waits.
func (s *Supervisor) clock() gate.Clock {
	if s.opts.Clock != nil {
		return s.opts.Clock
	}
	return gate.WallClock
}

// gateOutcome turns how binding a run went, when it did not end with an
// admitted run, into the command's outcome: the gate refused the new run
// (SKIPPED, exit 0, the after-run hooks called), someone ended the QUEUED run
// while its gate waited, or the command was interrupted during the wait
// (exit 22). ok is false when the run was admitted.
func (s *Supervisor) gateOutcome(ctx context.Context, g *pipeline.Graph, b bound) (Outcome, bool) {
	out := Outcome{PipelineCode: g.Pipeline.Code, RunID: b.run.ID, Status: b.run.Status}
	switch {
	case b.skipped != "":
		out.Detail = b.skipped
		s.log.Info("run skipped: its pipeline gate was not satisfied", "pipeline", g.Pipeline.Code,
			"pipeline_run_id", b.run.ID, "reason", b.skipped)
		s.runHooks(context.WithoutCancel(ctx), Ended{PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code, RunID: b.run.ID,
			Status: RunSkipped})
	case b.ended != "":
		out.Status, out.Detail = b.ended, "the run was ended by another process while its pipeline gate waited"
		if b.ended == RunFailed || b.ended == RunCancelled {
			out.Code = exit.Failure
		}
	case b.interrupted:
		out.Status, out.Code = RunQueued, exit.Incomplete
		out.Detail = fmt.Sprintf("interrupted while its pipeline gate waited (next look at %s); run again to go on with the same wait",
			b.nextCheck.UTC().Format(time.RFC3339))
	default:
		return out, false
	}
	return out, true
}
