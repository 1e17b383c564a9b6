package run

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// runRow is one AUD_PIPELINES_RUN_LOG row.
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

const runColumns = `PIPELINE_RUN_ID, PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND, RUN_DATE, BACKFILL,
	OWNER_ID, LEASE_EXPIRES_AT, START_DATE`

func scanRun(s interface{ Scan(...any) error }) (runRow, error) {
	var r runRow
	var date engine.Time
	var backfill string
	var owner sql.NullString
	err := s.Scan(&r.ID, &r.PipelineID, &r.Status, &r.Key, &r.TriggerKind, &date, &backfill, &owner, &r.Lease, &r.Start)
	if date.Valid {
		r.RunDate = date.Time.Format(time.DateOnly)
	}
	r.Backfill, r.Owner = backfill == "Y", owner.String
	return r, err
}

// describe names the run for messages: id=<id> key=<key> kind=<kind> run_date=<d> status=<s>.
func (r runRow) describe() string {
	return fmt.Sprintf("id=%d key=%s kind=%s run_date=%s status=%s", r.ID, r.Key, r.TriggerKind, r.RunDate, r.Status)
}

// runWhere returns the pipeline's runs matching a condition on columns of
// AUD_PIPELINES_RUN_LOG, oldest first.
func runWhere(ctx context.Context, q engine.Querier, pipelineID int64, cond string, args ...any) ([]runRow, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+runColumns+" FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 AND "+
		cond+" ORDER BY PIPELINE_RUN_ID", append([]any{pipelineID}, args...)...)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read %s", runsTable)
	}
	defer rows.Close()
	var out []runRow
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read %s", runsTable)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// selectRun finds the run a task binds to: the one with the id or key, or
// else the pipeline's one run that has not ended. Anything else is a
// run-state error (exit 9) that lists the candidates.
func selectRun(ctx context.Context, q engine.Querier, p pipeline.Pipeline, req Request) (runRow, error) {
	var runs []runRow
	var err error
	var what string
	switch {
	case req.RunID != 0:
		runs, err = runWhere(ctx, q, p.ID, "PIPELINE_RUN_ID = $2", req.RunID)
		what = fmt.Sprintf("pipeline_run_id=%d", req.RunID)
	case req.RunKey != "":
		runs, err = runWhere(ctx, q, p.ID, "RUN_KEY = $2", req.RunKey)
		what = fmt.Sprintf("run key %q", req.RunKey)
	default:
		runs, err = runWhere(ctx, q, p.ID, "STATUS IN ($2, $3)", RunQueued, RunInProgress)
		what = "a run that has not ended"
	}
	if err != nil {
		return runRow{}, err
	}
	if len(runs) == 1 {
		return runs[0], nil
	}
	if len(runs) == 0 {
		return runRow{}, exit.Errorf(exit.RunState,
			"pipeline %s: %s matched 0 runs; start a run with etl-craft run --pipeline_code %s, or find its id with history --all",
			p.Code, what, p.Code)
	}
	list := make([]string, len(runs))
	for i, r := range runs {
		list[i] = r.describe()
	}
	return runRow{}, exit.Errorf(exit.RunState, "pipeline %s: %s matched %d runs; choose one with --run-id or --run-key: %s",
		p.Code, what, len(runs), strings.Join(list, "; "))
}

// bindRun gives the supervisor the run a whole-pipeline run works on, under
// its owner's lease: the run named by id or key, else the pipeline's run in
// progress, else a new MANUAL run (an unknown key names the new run). A new
// run is inserted QUEUED and admitted in the same transaction, so a failed
// admission leaves no row.
func (s *Supervisor) bindRun(ctx context.Context, g *pipeline.Graph, req Request, owner string) (runRow, error) {
	var bound runRow
	attempt := func() error {
		return inTx(ctx, s.opts.DB, func(tx *wtx) error {
			var runs []runRow
			var err error
			switch {
			case req.RunID != 0:
				if runs, err = runWhere(ctx, tx, g.Pipeline.ID, "PIPELINE_RUN_ID = $2", req.RunID); err == nil && len(runs) == 0 {
					return exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d matched 0 runs", g.Pipeline.Code, req.RunID)
				}
			case req.RunKey != "":
				runs, err = runWhere(ctx, tx, g.Pipeline.ID, "RUN_KEY = $2", req.RunKey)
			default:
				runs, err = runWhere(ctx, tx, g.Pipeline.ID, "STATUS = $2", RunInProgress)
				if err == nil && len(runs) > 0 && runs[0].Backfill {
					return exit.Errorf(exit.RunState,
						"pipeline %s: pipeline_run_id=%d is a backfill's run in progress; a plain run does not take it over",
						g.Pipeline.Code, runs[0].ID)
				}
			}
			if err != nil {
				return err
			}
			now := time.Now()
			if len(runs) > 0 {
				bound = runs[0]
				return s.resume(ctx, tx, g, &bound, owner, now)
			}
			key := req.RunKey
			if key == "" {
				key = "manual:" + newUUID()
			}
			nr := newRun{PipelineID: g.Pipeline.ID, Key: key, TriggerKind: TriggerManual,
				RunDate: now.In(s.opts.Location).Format(time.DateOnly)}
			id, err := insertRun(ctx, tx, nr)
			if err != nil {
				return err
			}
			if err := fault.Point("pipeline.after_insert"); err != nil {
				return err
			}
			bound = runRow{ID: id, PipelineID: g.Pipeline.ID, Status: RunQueued, Key: key, TriggerKind: TriggerManual, RunDate: nr.RunDate}
			return s.admit(ctx, tx, g, &bound, owner, now)
		})
	}
	err := attempt()
	if exit.Is(err, exit.StaleTransition) {
		// Another process created or took a run meanwhile: look again.
		err = attempt()
	}
	return bound, err
}

// resume takes an existing run for a whole-pipeline run: an IN-PROGRESS run
// nobody holds, or a QUEUED one, which is admitted.
func (s *Supervisor) resume(ctx context.Context, tx *wtx, g *pipeline.Graph, r *runRow, owner string, now time.Time) error {
	switch {
	case r.Status == RunQueued:
		return s.admit(ctx, tx, g, r, owner, now)
	case runEnded(r.Status):
		return exit.Errorf(exit.RunState,
			"pipeline %s: pipeline_run_id=%d (key %s) ended %s; a whole-pipeline run does not reopen it: run without --run-id/--run-key to start a new run",
			g.Pipeline.Code, r.ID, r.Key, r.Status)
	case r.Owner != "":
		until := ""
		if r.Lease.Valid {
			until = ", lease until " + r.Lease.Time.UTC().Format(time.RFC3339)
		}
		return exit.Errorf(exit.RunState,
			"pipeline %s: pipeline_run_id=%d is supervised by %s%s; let it finish, or if that process died run etl-craft reconcile once its lease has expired",
			g.Pipeline.Code, r.ID, r.Owner, until)
	}
	if err := takeRun(ctx, tx, r.ID, owner, now); err != nil {
		return err
	}
	r.Owner = owner
	return nil
}

// admit moves a QUEUED run to IN-PROGRESS under owner's lease. This is where
// a run is admitted; the pipeline gate of cross-pipeline dependencies is
// judged here.
func (s *Supervisor) admit(ctx context.Context, tx *wtx, g *pipeline.Graph, r *runRow, owner string, now time.Time) error {
	if err := admitRun(ctx, tx, g.Pipeline.ID, r.ID, owner, now); err != nil {
		return err
	}
	r.Status, r.Owner, r.Start = RunInProgress, owner, engine.Time{Time: now, Valid: true}
	return nil
}

// pause is an open AUD_PIPELINE_PAUSES row.
type pause struct {
	By, Kind, Reason string
	At               engine.Time
}

// openPause returns the pipeline's open pause, nil when it is not paused.
func openPause(ctx context.Context, q engine.Querier, pipelineID int64) (*pause, error) {
	var p pause
	var kind sql.NullString
	err := q.QueryRowContext(ctx, `SELECT PAUSED_BY, PAUSED_BY_KIND, REASON, PAUSED_AT FROM AUD_PIPELINE_PAUSES
		WHERE PIPELINE_ID = $1 AND RESUMED_AT IS NULL`, pipelineID).Scan(&p.By, &kind, &p.Reason, &p.At)
	if engine.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read AUD_PIPELINE_PAUSES")
	}
	p.Kind = kind.String
	return &p, nil
}

// String says who paused the pipeline, when and why.
func (p *pause) String() string {
	return fmt.Sprintf("paused by %s (%s) at %s: %s", p.By, p.Kind, p.At.Time.UTC().Format(time.RFC3339), p.Reason)
}
