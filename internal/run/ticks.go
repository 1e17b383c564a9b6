package run

import (
	"context"
	"database/sql"
	"slices"
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

// ReadTickStates reads, for each of the pipelines, its latest scheduled run
// and whether it has queued or active work, in one statement per
// engine.InListMax pipelines. RUN_KEYs of scheduled runs are fixed-width UTC
// instants, so the greatest key is the latest tick. A pipeline without runs
// has the zero TickState.
func ReadTickStates(ctx context.Context, db *engine.DB, pipelineIDs []int64) (map[int64]TickState, error) {
	out := make(map[int64]TickState, len(pipelineIDs))
	for ids := range slices.Chunk(pipelineIDs, engine.InListMax) {
		args, in := engine.InList([]any{TriggerSchedule, RunQueued, RunInProgress}, ids)
		rows, err := db.QueryContext(ctx, `SELECT PIPELINE_ID,
			max(CASE WHEN TRIGGER_KIND = $1 THEN RUN_KEY END),
			sum(CASE WHEN STATUS IN ($2, $3) THEN 1 ELSE 0 END)
			FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID IN (`+in+`) GROUP BY PIPELINE_ID`, args...)
		if err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read the scheduled runs of %d pipelines", len(ids))
		}
		err = scanTickStates(rows, out)
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanTickStates adds the rows of ReadTickStates' statement to out.
func scanTickStates(rows *sql.Rows, out map[int64]TickState) error {
	for rows.Next() {
		var id, busy int64
		var key sql.NullString
		if err := rows.Scan(&id, &key, &busy); err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not read the scheduled runs")
		}
		st := TickState{Busy: busy > 0}
		if key.Valid {
			last, err := schedule.ParseRunKey(key.String)
			if err != nil {
				return exit.Wrap(exit.Metadata, err, "%s: pipeline id %d", runsTable, id)
			}
			st.Last = last
		}
		out[id] = st
	}
	return exit.Wrap(exit.EngineDB, rows.Err(), "could not read the scheduled runs")
}

// PlannedTick is one schedule tick of a pipeline, to record.
type PlannedTick struct {
	PipelineID int64
	Tick       schedule.Tick
}

// RecordedTick is a PlannedTick once recorded: Created is false when a run
// of the pipeline had its RUN_KEY already (another server, or this one
// before a restart), and it was left as it is.
type RecordedTick struct {
	PlannedTick
	RunID   int64
	Created bool
}

// RecordTicks records schedule ticks in one transaction, as the context's
// actor (the schedule): each a QUEUED run, or a SKIPPED one, with
// TRIGGER_KIND SCHEDULE, the tick's RUN_KEY and RUN_DATE, and a NEW_RUN
// intervention giving the tick's reason. A tick whose RUN_KEY exists is
// left as it is. Queued ticks are announced on the events channel. When
// another process records one of the keys meanwhile, the ticks are recorded
// one transaction each instead. It returns the ticks recorded so far, in
// order, with the error that stopped it.
func RecordTicks(ctx context.Context, db *engine.DB, ticks []PlannedTick) ([]RecordedTick, error) {
	out := make([]RecordedTick, 0, len(ticks))
	err := inTx(ctx, db, func(tx *wtx) error {
		var err error
		out, err = recordTicks(ctx, tx, ticks, out[:0])
		return err
	})
	if !exit.Is(err, exit.StaleTransition) {
		if err != nil {
			out = out[:0]
		}
		return out, err
	}
	if len(ticks) == 1 {
		return []RecordedTick{{PlannedTick: ticks[0]}}, nil // the key exists
	}
	out = out[:0]
	for i := range ticks {
		one, err := RecordTicks(ctx, db, ticks[i:i+1])
		if out = append(out, one...); err != nil {
			return out, err
		}
	}
	return out, nil
}

// tickBatch bounds the runs one statement of recordTicks inserts.
const tickBatch = 100

// recordTicks inserts the runs of the ticks, in order, the QUEUED ones of
// each stretch between two SKIPPED ones tickBatch to a statement, then
// their NEW_RUN interventions, and announces the queued ones. A key a
// pipeline has already makes it stale: a key is never recorded twice.
func recordTicks(ctx context.Context, tx *wtx, ticks []PlannedTick, out []RecordedTick) ([]RecordedTick, error) {
	var queued []newRun
	flush := func() error {
		if len(queued) == 0 {
			return nil
		}
		ids, err := insertRuns(ctx, tx, queued)
		if err != nil {
			return err
		}
		for i, id := range ids {
			out[len(out)-len(ids)+i].RunID = id
		}
		queued = queued[:0]
		return nil
	}
	announce := false
	for _, pt := range ticks {
		t := pt.Tick
		nr := newRun{PipelineID: pt.PipelineID, Key: t.RunKey, TriggerKind: TriggerSchedule, RunDate: t.RunDate}
		if !t.Skipped {
			queued = append(queued, nr)
			out = append(out, RecordedTick{PlannedTick: pt, Created: true})
			announce = true
			if len(queued) == tickBatch {
				if err := flush(); err != nil {
					return out, err
				}
			}
			continue
		}
		if err := flush(); err != nil {
			return out, err
		}
		id, err := insertEndedRun(ctx, tx, nr, RunSkipped, time.Now())
		if err != nil {
			return out, err
		}
		out = append(out, RecordedTick{PlannedTick: pt, RunID: id, Created: true})
	}
	if err := flush(); err != nil {
		return out, err
	}
	for batch := range slices.Chunk(out, tickBatch) {
		ivs := make([]intervention, len(batch))
		for i, rt := range batch {
			to := RunQueued
			if rt.Tick.Skipped {
				to = RunSkipped
			}
			ivs[i] = intervention{PipelineID: rt.PipelineID, RunID: rt.RunID, Action: "NEW_RUN", To: to, Reason: rt.Tick.Reason}
		}
		if err := recordInterventions(ctx, tx, ivs); err != nil {
			return out, err
		}
	}
	if !announce {
		return out, nil
	}
	return out, tx.Notify(ctx, engine.EventQueued)
}
