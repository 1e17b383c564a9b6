package clone

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// clonesLogged counts the clones a logger saw end ("cloned N table(s) …").
type clonesLogged struct {
	mu sync.Mutex
	n  int
}

func (h *clonesLogged) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *clonesLogged) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *clonesLogged) WithGroup(string) slog.Handler                { return h }

func (h *clonesLogged) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "cloned ") {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}

// Seven runs end while a clone waits for the clone lock (another process
// clones): their after-run clones share one clone after it, not seven one
// after the other, and the mirror holds every run's records.
func TestRunsEndingTogetherShareTheNextClone(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.SQLite)
	tg := newTarget(t, db, warehouse.DuckDB)
	b := pipelinetest.New(t, db)
	logged := &clonesLogged{}
	opts := tg.options("cfg")
	opts.Logger = slog.New(logged)
	hook := Hook(db, tg.src, opts)
	held, err := lock.Acquire(context.Background(), db, lock.Clone, 0)
	if err != nil {
		t.Fatal(err)
	}
	const runs = 7
	var calling sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		b.Pipeline(fmt.Sprintf("P%d", i), "FULL") // the run's records, committed before its clone
		calling.Add(1)
		go func() {
			calling.Done()
			errs <- hook(context.Background())
		}()
	}
	calling.Wait()
	time.Sleep(200 * time.Millisecond) // every hook is waiting
	held.Release()
	for range runs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if logged.n > 2 {
		t.Errorf("%d runs ending together made %d clones, want at most 2", runs, logged.n)
	}
	got := tg.strings(t, `SELECT "PIPELINE_CODE" FROM `+tg.mirror("CFG_PIPELINES")+` ORDER BY 1`)
	if want := []string{"P0", "P1", "P2", "P3", "P4", "P5", "P6"}; !slices.Equal(got, want) {
		t.Errorf("the mirror holds %v, want %v", got, want)
	}
}
