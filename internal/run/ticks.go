package run

import (
	"context"
	"database/sql"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/schedule"
)

// TickState is what planning a pipeline's due ticks needs from its runs.
type TickState struct {
	// Last is the latest tick already recorded, the zero time when none is.
	Last time.Time
	// Busy says the pipeline has a QUEUED or IN-PROGRESS run.
	Busy bool
}

// ReadTickState reads the pipeline's latest scheduled run and whether it
// has queued or active work. RUN_KEYs of scheduled runs are fixed-width
// UTC instants, so the greatest key is the latest tick.
func ReadTickState(ctx context.Context, db *engine.DB, pipelineID int64) (TickState, error) {
	var key sql.NullString
	var busy int
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT max(RUN_KEY) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 AND TRIGGER_KIND = $2),
		(SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 AND STATUS IN ($3, $4))`,
		pipelineID, TriggerSchedule, RunQueued, RunInProgress).Scan(&key, &busy)
	if err != nil {
		return TickState{}, exit.Wrap(exit.EngineDB, err, "could not read the scheduled runs of pipeline id %d", pipelineID)
	}
	st := TickState{Busy: busy > 0}
	if key.Valid {
		if st.Last, err = schedule.ParseRunKey(key.String); err != nil {
			return TickState{}, exit.Wrap(exit.Metadata, err, "%s: pipeline id %d", runsTable, pipelineID)
		}
	}
	return st, nil
}

// RecordTick records one schedule tick of the pipeline in a transaction of
// its own, as the context's actor (the schedule): a QUEUED run, or a SKIPPED
// one, with TRIGGER_KIND SCHEDULE, the tick's RUN_KEY and RUN_DATE, and a
// NEW_RUN intervention giving the tick's reason. A tick recorded before (its
// RUN_KEY exists: another server, or this one before a restart) is left as
// it is, and created is false. A queued tick is announced on the events
// channel.
func RecordTick(ctx context.Context, db *engine.DB, pipelineID int64, t schedule.Tick) (id int64, created bool, err error) {
	err = inTx(ctx, db, func(tx *wtx) error {
		nr := newRun{PipelineID: pipelineID, Key: t.RunKey, TriggerKind: TriggerSchedule, RunDate: t.RunDate}
		var err error
		to := RunQueued
		if t.Skipped {
			to = RunSkipped
			id, err = insertEndedRun(ctx, tx, nr, RunSkipped, time.Now())
		} else {
			id, err = insertRun(ctx, tx, nr)
		}
		if err != nil {
			return err
		}
		if err := recordIntervention(ctx, tx, intervention{PipelineID: pipelineID, RunID: id, Action: "NEW_RUN", To: to, Reason: t.Reason}); err != nil {
			return err
		}
		if t.Skipped {
			return nil
		}
		return tx.Notify(ctx, engine.EventQueued)
	})
	if exit.Is(err, exit.StaleTransition) {
		return 0, false, nil // the key exists
	}
	return id, err == nil, err
}
