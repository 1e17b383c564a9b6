package run

import (
	"context"
	"slices"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// QueuedRun is a QUEUED run for AdmitRuns: its pipeline's next run.
type QueuedRun struct {
	RunID, PipelineID int64
}

// admitBatch bounds the runs AdmitRuns admits in one transaction.
const admitBatch = 100

// AdmitRuns admits QUEUED runs together, admitBatch to a transaction, for a
// server that supervises each when a worker of its pool is free: a run
// whose pipeline depends on no other pipeline (pipeline.Gated: its
// pipeline gate passes without a look) and is not paused becomes
// IN-PROGRESS with no owner (admitRun), as a command leaves a run it does
// not supervise itself (run --init-only), and is then taken by whoever
// supervises it (bindRun). Each run must be the oldest QUEUED run of its
// pipeline, which has no run IN-PROGRESS. A run of a gated or paused
// pipeline is left QUEUED, for its supervisor to admit through its gate
// (admitQueued) or not at all. It returns the runs admitted, in order.
//
// A transaction admits all of its runs or none: a crash before its commit
// leaves them QUEUED, as admitting them one by one would have if the crash
// came before the first. When another process admitted, ended or started a
// run of one of the pipelines meanwhile (a stale transition), the runs of
// that transaction are admitted one transaction each instead, as
// RecordTicks records ticks.
func AdmitRuns(ctx context.Context, db *engine.DB, runs []QueuedRun) ([]int64, error) {
	ids := make([]int64, len(runs))
	for i, r := range runs {
		ids[i] = r.PipelineID
	}
	gated, err := pipeline.Gated(ctx, db, ids)
	if err != nil {
		return nil, err
	}
	runs = slices.DeleteFunc(slices.Clone(runs), func(r QueuedRun) bool { return gated[r.PipelineID] })
	var out []int64
	for batch := range slices.Chunk(runs, admitBatch) {
		admitted, err := admitTogether(ctx, db, batch)
		if exit.Is(err, exit.StaleTransition) && len(batch) > 1 {
			admitted, err = nil, nil
			for _, r := range batch {
				one, oerr := admitTogether(ctx, db, []QueuedRun{r})
				if admitted = append(admitted, one...); oerr != nil && !exit.Is(oerr, exit.StaleTransition) {
					err = oerr
					break
				}
			}
		}
		if out = append(out, admitted...); err != nil && !exit.Is(err, exit.StaleTransition) {
			return out, err
		}
	}
	return out, nil
}

// admitTogether admits the runs of unpaused pipelines in one transaction,
// with one statement (startRuns), and returns them.
func admitTogether(ctx context.Context, db *engine.DB, runs []QueuedRun) ([]int64, error) {
	var out []int64
	err := inTx(ctx, db, func(tx *wtx) error {
		out = out[:0]
		paused, err := records.PausedPipelines(ctx, tx)
		if err != nil {
			return err
		}
		for _, r := range runs {
			if !paused[r.PipelineID] {
				out = append(out, r.RunID)
			}
		}
		if len(out) == 0 {
			return nil
		}
		if err := startRuns(ctx, tx, out, time.Now()); err != nil {
			return err
		}
		// The batch's runs are admitted, not committed.
		if err := fault.Point("admission.mid_batch"); err != nil {
			return err
		}
		return tx.Notify(ctx, engine.EventQueued) // once for the batch
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
