package retention_test

import (
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/retention"
)

// A purge with Vacuum gives the freed space back: on SQLite the file has
// no free page left and fewer pages than before the purge.
func TestAPurgeWithVacuumGivesTheSpaceBack(t *testing.T) {
	t.Parallel()
	for _, k := range enginetest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			db := pipelinetest.DB(t, k)
			logDir := t.TempDir()
			h := newHistory(t, db, uint64(time.Now().UnixNano()), logDir)
			now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
			for range 40 {
				now = now.Add(retention.Day)
				h.day(now)
			}
			pages := func(pragma string) int64 { return h.one("SELECT * FROM pragma_" + pragma + "()") }
			var before int64
			if k == engine.SQLite {
				before = pages("page_count")
			}
			res, err := retention.Purge(acting(), db, retention.Options{Policy: retention.Policy{retention.Runs: 5 * retention.Day},
				Now: now, LogDir: logDir, Vacuum: true})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Vacuumed || res.Rows() == 0 {
				t.Fatalf("the purge deleted %d row(s), vacuumed %v", res.Rows(), res.Vacuumed)
			}
			if k == engine.SQLite {
				if free, after := pages("freelist_count"), pages("page_count"); free != 0 || after >= before {
					t.Errorf("after the vacuum: %d free page(s), %d pages, %d before the purge", free, after, before)
				}
			}
		})
	}
}
