// Package inspecttest records execution history — runs, task summaries,
// attempts, interventions and pauses — straight into an Engine DB through
// engine transactions, so tests of what reads that history can set up exact
// rows (fixed times included) without running anything.
package inspecttest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
)

// Recorder writes history rows as one actor.
type Recorder struct {
	t   testing.TB
	db  *engine.DB
	ctx context.Context
}

// New returns a recorder whose rows are written by the actor.
func New(t testing.TB, db *engine.DB, a actor.Actor) *Recorder {
	return &Recorder{t: t, db: db, ctx: actor.With(context.Background(), a)}
}

// Run is an AUD_PIPELINES_RUN_LOG row to record. An empty Key is a random
// manual key, an empty TriggerKind MANUAL, a zero Start now; other zero
// fields stay NULL.
type Run struct {
	Key, Status, TriggerKind, SLAStatus string
	// RunDate is YYYY-MM-DD.
	RunDate    string
	Start, End time.Time
	Backfill   bool
}

// Run records a run of the pipeline and returns its PIPELINE_RUN_ID.
func (r *Recorder) Run(pipelineID int64, run Run) int64 {
	r.t.Helper()
	backfill := "N"
	if run.Backfill {
		backfill = "Y"
	}
	return r.insert(`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND, RUN_DATE,
			START_DATE, END_DATE, SLA_STATUS, BACKFILL)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		RETURNING PIPELINE_RUN_ID`,
		pipelineID, run.Status, or(run.Key, "manual:"+random()), or(run.TriggerKind, "MANUAL"), text(run.RunDate),
		r.time(or(run.Start, time.Now())), r.time(run.End), text(run.SLAStatus), backfill)
}

// TaskRun is an AUD_TASK_RUN_LOG row to record. A zero Start is now, zero
// Attempts is 1; nil counts, a zero End and an empty message stay NULL.
type TaskRun struct {
	Status       string
	Start, End   time.Time
	Attempts     int
	RowsWritten  *int64
	TargetCount  *int64
	ErrorMessage string
}

// TaskRun records a task's summary under a run and returns its TASK_RUN_ID.
func (r *Recorder) TaskRun(runID, taskID int64, tr TaskRun) int64 {
	r.t.Helper()
	return r.insert(`INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS, START_DATE, END_DATE,
			ATTEMPT_COUNT, ROWS_WRITTEN, TARGET_COUNT, ERROR_MESSAGE)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING TASK_RUN_ID`,
		taskID, runID, tr.Status, r.time(or(tr.Start, time.Now())), r.time(tr.End), max(tr.Attempts, 1), tr.RowsWritten,
		tr.TargetCount, text(tr.ErrorMessage))
}

// Attempt records a terminal attempt of a task run and returns its ATTEMPT_ID.
func (r *Recorder) Attempt(taskRunID int64, number int, status, errorMessage string) int64 {
	r.t.Helper()
	return r.insert(`INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, ERROR_MESSAGE)
		VALUES ($1, $2, $3, $4) RETURNING ATTEMPT_ID`, taskRunID, number, status, text(errorMessage))
}

// Intervention records an operator change to a run (taskID 0: to the run
// itself) at the time, and returns its INTERVENTION_ID.
func (r *Recorder) Intervention(pipelineID, runID, taskID int64, action, from, to, reason string, at time.Time) int64 {
	r.t.Helper()
	var task any
	if taskID > 0 {
		task = taskID
	}
	return r.insert(`INSERT INTO AUD_RUN_INTERVENTIONS (PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, ACTION, FROM_STATUS,
			TO_STATUS, REASON, REQUESTED_BY, REQUESTED_AT)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING INTERVENTION_ID`,
		pipelineID, runID, task, action, text(from), text(to), reason, actor.From(r.ctx).Name, r.time(at))
}

// Pause records an open pause of the pipeline since the time.
func (r *Recorder) Pause(pipelineID int64, reason string, at time.Time) {
	r.t.Helper()
	r.insert(`INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_BY, REASON, PAUSED_AT)
		VALUES ($1, $2, $3, $4) RETURNING PIPELINE_PAUSE_ID`, pipelineID, actor.From(r.ctx).Name, reason, r.time(at))
}

// insert runs an INSERT … RETURNING id in an engine transaction.
func (r *Recorder) insert(query string, args ...any) int64 {
	r.t.Helper()
	var id int64
	err := r.db.Tx(r.ctx, func(tx *engine.Tx) error {
		return tx.QueryRowContext(r.ctx, query, args...).Scan(&id)
	})
	if err != nil {
		r.t.Fatalf("%s: %v", query, err)
	}
	return id
}

// time binds a timestamp; the zero time binds NULL.
func (r *Recorder) time(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return r.db.TimeArg(t)
}

// or returns v, or fallback when v is the zero value.
func or[T comparable](v, fallback T) T {
	var zero T
	if v == zero {
		return fallback
	}
	return v
}

// random returns 16 random hex digits, for run keys.
func random() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// text binds a string; "" binds NULL.
func text(s string) any {
	if s == "" {
		return nil
	}
	return s
}
