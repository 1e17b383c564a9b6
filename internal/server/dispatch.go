package server

import (
	"cmp"
	"context"
	"database/sql"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/run"
)

// openRun is a QUEUED or IN-PROGRESS run of an active pipeline.
type openRun struct {
	id, pipelineID int64
	code, status   string
	trigger        string
	owner          string
}

// settle is how long a QUEUED run that another command recorded (not a
// schedule tick) stays QUEUED before the server admits it: the command that
// recorded it admits it itself at once (run, run --init-only), and the
// server must not take it from under that command.
const settle = PollEvery

// dispatch reads the runs to supervise and queues each pipeline's next run
// for execution (startQueued): its unowned IN-PROGRESS run (one made by run
// --init-only, admitted by a server, or released after its holder died),
// else its oldest QUEUED run when no sibling run is active. Runs held by
// another live process, paused pipelines and pipelines whose run this
// server executes already are left alone, and so is a QUEUED run another
// command recorded, until it has stayed QUEUED for settle. The QUEUED runs
// it queues are admitted at once, together (run.AdmitRuns): their runs
// start the moment their tick or trigger is seen, and wait IN-PROGRESS for
// a worker; the runs of a pipeline with a pipeline gate are admitted
// through it when executed.
func (s *Server) dispatch(ctx context.Context) error {
	runs, err := openRuns(ctx, s)
	if err != nil {
		return err
	}
	paused, err := records.PausedPipelines(ctx, s.db)
	if err != nil {
		return err
	}
	next := map[int64]openRun{}
	held := map[int64]bool{}
	for _, r := range runs {
		switch {
		case r.status == run.RunInProgress && r.owner != "":
			held[r.pipelineID] = true
		case r.status == run.RunInProgress:
			next[r.pipelineID] = r // the one active run takes precedence
		default:
			if cur, ok := next[r.pipelineID]; !ok || (cur.status == run.RunQueued && r.id < cur.id) {
				next[r.pipelineID] = r
			}
		}
	}
	// Oldest first.
	order := slices.SortedFunc(maps.Values(next), func(a, b openRun) int { return cmp.Compare(a.id, b.id) })
	now := time.Now()
	s.mu.Lock()
	seen := map[int64]time.Time{}
	var queue []openRun
	var admit []run.QueuedRun
	for _, r := range order {
		pid := r.pipelineID
		_, busy := s.active[pid]
		if busy || held[pid] || paused[pid] || now.Before(s.failed[r.id]) {
			continue
		}
		if r.status == run.RunQueued && r.trigger != run.TriggerSchedule {
			first, ok := s.seen[r.id]
			if !ok {
				first = now
			}
			if seen[r.id] = first; now.Sub(first) < settle {
				continue
			}
		}
		if r.status == run.RunQueued {
			admit = append(admit, run.QueuedRun{RunID: r.id, PipelineID: pid})
		}
		queue = append(queue, r)
	}
	s.seen = seen
	s.mu.Unlock()
	if len(admit) > 0 {
		// A run left QUEUED (its pipeline gated or just paused, or an
		// error) is admitted by its execution, or not at all.
		admitted, err := run.AdmitRuns(ctx, s.db, admit)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("could not admit the queued runs together; each is admitted when it is executed", "error", err)
		}
		for _, id := range admitted {
			i := slices.IndexFunc(queue, func(r openRun) bool { return r.id == id })
			queue[i].status = run.RunInProgress
		}
	}
	s.mu.Lock()
	s.queue = queue
	s.mu.Unlock()
	return nil
}

// startQueued starts the execution of the queued runs, oldest first, for as
// long as the server may get more runs going.
func (s *Server) startQueued() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) > 0 {
		r := s.queue[0]
		if _, busy := s.active[r.pipelineID]; !busy && !s.getGoing() {
			return // it waits until a run under way settles (more)
		} else if !busy {
			s.active[r.pipelineID] = r.id
			s.runs.Add(1)
			go s.execute(r)
		}
		s.queue = s.queue[1:]
	}
}

// getGoing takes a place among the runs the server gets going, false when
// they are all taken.
func (s *Server) getGoing() bool {
	select {
	case s.going <- struct{}{}:
		return true
	default:
		return false
	}
}

// execute runs one run to its end, or until the server winds down.
func (s *Server) execute(r openRun) {
	defer s.runs.Done()
	settled := sync.OnceFunc(func() {
		<-s.going
		s.more() // the next queued run may get going
	})
	out, err := s.sup.Execute(s.hard, run.Request{PipelineCode: r.code, RunID: r.id, Settled: settled}, s.wind)
	settled()
	s.mu.Lock()
	delete(s.active, r.pipelineID)
	if err != nil {
		s.failed[r.id] = time.Now().Add(retryAfter)
	} else {
		delete(s.failed, r.id)
	}
	s.mu.Unlock()
	switch {
	case err != nil && exit.Is(err, exit.RunState):
		s.log.Info("the run was not executed", "pipeline", r.code, "pipeline_run_id", r.id, "reason", err)
	case err != nil:
		s.log.Error("the run could not be executed; trying again later", "pipeline", r.code, "pipeline_run_id", r.id,
			"retry_in", retryAfter.String(), "error", err)
	default:
		s.log.Info("run", "pipeline", r.code, "pipeline_run_id", out.RunID, "status", out.Status, "detail", out.Detail)
	}
	s.Wake() // the pipeline's next run may start now
}

// openRuns reads the QUEUED and IN-PROGRESS runs of the active pipelines,
// oldest first. Backfill runs are the backfill command's own.
func openRuns(ctx context.Context, s *Server) ([]openRun, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT r.PIPELINE_RUN_ID, r.PIPELINE_ID, p.PIPELINE_CODE, r.STATUS, r.TRIGGER_KIND, r.OWNER_ID
		FROM AUD_PIPELINES_RUN_LOG r JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y'
		WHERE r.STATUS IN ($1, $2) AND r.BACKFILL = 'N' ORDER BY r.PIPELINE_RUN_ID`, run.RunQueued, run.RunInProgress)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the open runs")
	}
	defer rows.Close()
	var out []openRun
	for rows.Next() {
		var r openRun
		var owner sql.NullString
		if err := rows.Scan(&r.id, &r.pipelineID, &r.code, &r.status, &r.trigger, &owner); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read the open runs")
		}
		r.owner = owner.String
		out = append(out, r)
	}
	return out, rows.Err()
}
