package run

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// TestEveryEngineWriterSharesTheSQLiteWriterLock writes to one SQLite Engine
// DB at once from pipeline runs, audit records, pauses and resumes, and a
// handler's hash versions: every write lands, and none fails with
// "database is locked".
func TestEveryEngineWriterSharesTheSQLiteWriterLock(t *testing.T) {
	f := newFixture(t, pipelinetest.DB(t, engine.SQLite))
	const runs, rounds = 4, 15
	for i := range runs {
		f.b.Pipeline(fmt.Sprintf("P%d", i), "FULL")
		for j := range 3 {
			f.task(fmt.Sprintf("P%d", i), fmt.Sprintf("t%d", j), "succeed")
		}
	}
	paused := f.b.Pipeline("PAUSED", "FULL")
	ctx := f.ctx()
	var wg sync.WaitGroup
	errs := make(chan error, runs*rounds+3*rounds)
	for i := range runs {
		wg.Go(func() {
			for range rounds / 5 {
				out, err := f.supervisor().RunPipeline(ctx, Request{PipelineCode: fmt.Sprintf("P%d", i)})
				if err == nil && out.Status != RunSuccess {
					err = fmt.Errorf("P%d ended %s: %s", i, out.Status, out.Detail)
				}
				errs <- err
			}
		})
	}
	wg.Go(func() {
		for r := range rounds {
			_, err := audit.Record(ctx, f.db, audit.Request{Command: "status", Arguments: map[string]any{"round": r}})
			errs <- err
		}
	})
	wg.Go(func() {
		for r := range rounds {
			_, err := gate.Pause(ctx, f.db, paused, fmt.Sprintf("round %d", r))
			if err == nil {
				_, err = gate.Resume(ctx, f.db, paused, fmt.Sprintf("round %d", r))
			}
			errs <- err
		}
	})
	wg.Go(func() {
		state := sqltask.NewEngineState(f.db, 0, 0)
		for r := range rounds {
			errs <- state.SetHashVersion(ctx, fmt.Sprintf("lake.sales.t%d", r), 2)
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			if strings.Contains(err.Error(), "locked") || strings.Contains(err.Error(), "busy") {
				t.Errorf("a write met the lock: %v (exit %d)", err, exit.CodeOf(err))
			} else {
				t.Error(err)
			}
		}
	}
	if n := f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'"); n != runs*(rounds/5) {
		t.Errorf("%d runs succeeded, want %d", n, runs*(rounds/5))
	}
	if n := f.count("SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'status'"); n != rounds {
		t.Errorf("%d audit records, want %d", n, rounds)
	}
	if n := f.count("SELECT count(*) FROM AUD_PIPELINE_PAUSES WHERE PIPELINE_ID = $1 AND RESUMED_AT IS NOT NULL", paused); n != rounds {
		t.Errorf("%d pauses resumed, want %d", n, rounds)
	}
	if n := f.count("SELECT count(*) FROM AUD_TARGET_HASH_VERSION"); n != rounds {
		t.Errorf("%d hash versions, want %d", n, rounds)
	}
}

// TestATransactionInsideAnotherOnSQLiteFails shows the writer lock does not
// hang a transaction begun inside another's: it ends with the context.
func TestATransactionInsideAnotherOnSQLiteFails(t *testing.T) {
	db := pipelinetest.DB(t, engine.SQLite)
	ctx, cancel := context.WithCancel(context.Background())
	err := db.Tx(ctx, func(*engine.Tx) error {
		cancel()
		return db.Tx(ctx, func(*engine.Tx) error { return nil })
	})
	wantCode(t, err, exit.EngineDB, "could not connect to the Engine DB")
}
