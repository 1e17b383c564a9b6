package console

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// A page left open for days holds nothing that grows on the server: its
// stream's channel keeps at most the latest change (a page slow to read
// gets the union of what changed, never a queue), and a stream that ended
// leaves nothing behind; the look-out at the change log stops with the last
// stream and starts again with the next.
func TestTheHubHoldsNothingThatGrows(t *testing.T) {
	t.Parallel()
	h := newHub(pipelinetest.DB(t, engine.SQLite), slog.New(slog.DiscardHandler))
	next := func(ch <-chan change) change {
		t.Helper()
		select {
		case c := <-ch:
			return c
		case <-time.After(time.Minute):
			t.Fatal("no change came")
		}
		return change{}
	}
	ch, cancel := h.subscribe()
	if first := next(ch); len(first.Tables) != len(watchedTables) {
		t.Errorf("the first look tells %v, not every table", first.Tables)
	}
	for range 1000 {
		h.publish([]string{"runs"})
		h.publish([]string{"pauses"})
	}
	got := next(ch)
	slices.Sort(got.Tables)
	if !slices.Equal(got.Tables, []string{"pauses", "runs"}) || len(ch) != 0 || got.Version != h.version() {
		t.Errorf("after 2,000 changes unread, the stream holds %+v and %d more", got, len(ch))
	}
	cancel()
	stopped := func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return !h.running && len(h.subs) == 0
	}
	deadline := time.Now().Add(time.Minute)
	for !stopped() {
		if time.Now().After(deadline) {
			t.Fatal("the look-out goes on without a stream")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ch, cancel = h.subscribe()
	defer cancel()
	if again := next(ch); len(again.Tables) != len(watchedTables) {
		t.Errorf("the next stream's first look tells %v", again.Tables)
	}
}
