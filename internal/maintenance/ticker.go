package maintenance

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/schedule"
)

// TickEvery is how often the ticker looks for due ticks.
const TickEvery = time.Second

// ScheduleActor is who records scheduled runs: the schedule.
var ScheduleActor = actor.Actor{Name: "schedule", Kind: actor.Schedule}

// Ticker records the due schedule ticks of the active, unpaused pipelines
// as runs (run.RecordTicks), planned by schedule.Timetable.Due: QUEUED, or
// SKIPPED when missed or overlapping. It rereads the pipelines' schedule
// settings whenever CFG_ rows changed (AUD_METADATA_CHANGES grew), so a new
// pipeline or a changed schedule needs no restart, and reads a pipeline's
// runs only when its next tick is due.
type Ticker struct {
	DB *engine.DB
	// Zone is Orchestration.Timezone, for schedules without
	// SCHEDULE_TIMEZONE.
	Zone   *time.Location
	Logger *slog.Logger
	// Queued is called after each commit that queued runs, so that the
	// server admits them while the pass goes on; nil for none.
	Queued func()
	// Every overrides TickEvery (tests, benchmarks); zero means TickEvery.
	Every time.Duration

	version int64
	plans   map[int64]*planned
	loop    loop
}

// planned is one scheduled pipeline in the ticker.
type planned struct {
	code string
	set  schedule.Settings // what tt was made of
	tt   schedule.Timetable
	// next is when the pipeline has its next tick; zero until its runs
	// were first read.
	next time.Time
}

// Name names the service.
func (t *Ticker) Name() string { return "schedule ticker" }

// Start runs a first pass, then one every TickEvery and at each planned
// tick, so that a tick is recorded the moment it is due.
func (t *Ticker) Start(ctx context.Context) error {
	t.version = -1
	t.loop = loop{every: t.Every, work: t.pass, next: t.earliest}
	if t.loop.every <= 0 {
		t.loop.every = TickEvery
	}
	t.loop.start(ctx)
	return nil
}

// Stop ends the ticker.
func (t *Ticker) Stop() { t.loop.stop() }

// tickBatch bounds the ticks recorded in one transaction, so that the
// server admits the first runs of a busy minute while the ticker records
// the rest.
const tickBatch = 100

// pass records the ticks due now: it reads the runs of every pipeline whose
// next tick is due in one go, plans their ticks, and records them
// tickBatch to a transaction.
func (t *Ticker) pass(ctx context.Context) {
	log := logger(t.Logger)
	if err := t.refresh(ctx); err != nil {
		if ctx.Err() == nil {
			log.Warn("could not read the pipelines' schedules; trying again", "error", err)
		}
		return
	}
	now := time.Now()
	var due []int64
	for id, p := range t.plans {
		if p.next.IsZero() || !now.Before(p.next) {
			due = append(due, id)
		}
	}
	if len(due) == 0 {
		return
	}
	slices.Sort(due)
	paused, err := records.PausedPipelines(ctx, t.DB)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("could not read the pipelines' pauses; trying again", "error", err)
		}
		return
	}
	due = slices.DeleteFunc(due, func(id int64) bool { return paused[id] })
	states, err := run.ReadTickStates(ctx, t.DB, due)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("could not read the scheduled runs; trying again", "error", err)
		}
		return
	}
	var ticks []run.PlannedTick
	next := make(map[int64]time.Time, len(due))
	for _, id := range due {
		st := states[id]
		plan := t.plans[id].tt.Due(now, st.Last, st.Busy)
		for _, tick := range plan.Ticks {
			ticks = append(ticks, run.PlannedTick{PipelineID: id, Tick: tick})
		}
		next[id] = plan.Next
	}
	done := t.record(ctx, ticks)
	// A pipeline plans its next tick once all its due ticks are recorded.
	for _, pt := range ticks[done:] {
		delete(next, pt.PipelineID)
	}
	for id, at := range next {
		t.plans[id].next = at
	}
}

// earliest returns the first of the plans' next ticks still to come, the
// zero time when none is known. A tick already due that a pass could not
// record is not among them: it is tried again at the next pass, not at
// once.
func (t *Ticker) earliest() time.Time {
	var first time.Time
	now := time.Now()
	for _, p := range t.plans {
		if p.next.After(now) && (first.IsZero() || p.next.Before(first)) {
			first = p.next
		}
	}
	return first
}

// record records the ticks, tickBatch to a commit, and returns how many it
// recorded before an error, which it logs.
func (t *Ticker) record(ctx context.Context, ticks []run.PlannedTick) int {
	ctx = actor.With(ctx, ScheduleActor)
	log := logger(t.Logger)
	done := 0
	for batch := range slices.Chunk(ticks, tickBatch) {
		if ctx.Err() != nil {
			return done
		}
		recorded, err := run.RecordTicks(ctx, t.DB, batch)
		done += len(recorded)
		queued := false
		for _, rt := range recorded {
			if !rt.Created {
				continue
			}
			status := run.RunQueued
			if rt.Tick.Skipped {
				status = run.RunSkipped
			} else {
				queued = true
			}
			log.Info("schedule tick", "pipeline", t.plans[rt.PipelineID].code, "pipeline_run_id", rt.RunID, "run_key", rt.Tick.RunKey,
				"status", status, "reason", rt.Tick.Reason)
		}
		if queued && t.Queued != nil {
			t.Queued()
		}
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("could not record schedule ticks; trying again", "error", err)
			}
			return done
		}
	}
	return done
}

// refresh rereads the schedule settings when the CFG_ tables changed since
// the last read. A pipeline whose settings do not check is logged and left
// out; one whose settings did not change keeps its next tick.
func (t *Ticker) refresh(ctx context.Context) error {
	var version int64
	if err := t.DB.QueryRowContext(ctx, "SELECT coalesce(max(CHANGE_ID), 0) FROM AUD_METADATA_CHANGES").Scan(&version); err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not read AUD_METADATA_CHANGES")
	}
	if version == t.version {
		return nil
	}
	all, err := pipeline.List(ctx, t.DB)
	if err != nil {
		return err
	}
	created, err := createDates(ctx, t.DB)
	if err != nil {
		return err
	}
	plans := map[int64]*planned{}
	for _, p := range all {
		if p.RunSchedule == "" {
			continue
		}
		set := schedule.Settings{RunSchedule: p.RunSchedule, Timezone: p.ScheduleTimezone,
			StartDate: p.ScheduleStartDate, Catchup: p.Catchup, MaxCatchupRuns: p.MaxCatchupRuns,
			OverlapPolicy: p.OverlapPolicy, Created: created[p.ID]}
		if old := t.plans[p.ID]; old != nil && old.code == p.Code && sameSettings(old.set, set) {
			plans[p.ID] = old // its next tick stands: one change does not plan 10,000 pipelines again
			continue
		}
		tt, err := schedule.NewTimetable(set, t.Zone)
		if err != nil {
			logger(t.Logger).Warn("the pipeline's schedule is not valid; it is not scheduled until it is fixed",
				"pipeline", p.Code, "error", err)
			continue
		}
		plans[p.ID] = &planned{code: p.Code, set: set, tt: tt}
	}
	t.plans, t.version = plans, version
	return nil
}

// sameSettings reports whether two readings of a pipeline's schedule
// settings are the same.
func sameSettings(a, b schedule.Settings) bool {
	created := a.Created.Equal(b.Created)
	a.Created, b.Created = time.Time{}, time.Time{}
	return created && a == b
}

// createDates returns the CREATE_DATE of every active pipeline.
func createDates(ctx context.Context, db *engine.DB) (map[int64]time.Time, error) {
	rows, err := db.QueryContext(ctx, "SELECT PIPELINE_ID, CREATE_DATE FROM CFG_PIPELINES WHERE ACTIVE_FLAG = 'Y'")
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINES")
	}
	defer rows.Close()
	out := map[int64]time.Time{}
	for rows.Next() {
		var id int64
		var at engine.Time
		if err := rows.Scan(&id, &at); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read CFG_PIPELINES")
		}
		out[id] = at.Time
	}
	return out, rows.Err()
}
