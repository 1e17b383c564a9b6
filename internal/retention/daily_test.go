package retention_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/retention"
)

func TestNextAtIsTodaysTimeOrTomorrowsInTheZone(t *testing.T) {
	t.Parallel()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	at := 3*time.Hour + 30*time.Minute
	for _, c := range []struct {
		now, want time.Time
	}{
		{time.Date(2026, 6, 1, 1, 0, 0, 0, paris), time.Date(2026, 6, 1, 3, 30, 0, 0, paris)},
		{time.Date(2026, 6, 1, 3, 30, 0, 0, paris), time.Date(2026, 6, 2, 3, 30, 0, 0, paris)},
		{time.Date(2026, 6, 1, 23, 0, 0, 0, time.UTC), time.Date(2026, 6, 2, 3, 30, 0, 0, paris)}, // 01:00 in Paris
		// The night the clocks go forward: 02:30 does not exist.
		{time.Date(2026, 3, 29, 0, 0, 0, 0, paris), time.Date(2026, 3, 29, 3, 30, 0, 0, paris)},
	} {
		if got := retention.NextAt(c.now, at, paris); !got.Equal(c.want) {
			t.Errorf("NextAt(%s) = %s, want %s", c.now, got, c.want)
		}
	}
}

// lockedBuffer is a log sink written by the service's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A daily purge that fails is logged, and the service goes on to the next
// day; one that works is logged with what it deleted and recorded.
func TestTheDailyPurgeLogsItsOutcomeAndGoesOnAfterAFailure(t *testing.T) {
	t.Parallel()
	for _, k := range enginetest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			t.Parallel()
			db := pipelinetest.DB(t, k)
			blocker := filepath.Join(t.TempDir(), "a-file")
			if err := os.WriteFile(blocker, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				archive, want string
			}{
				{filepath.Join(blocker, "archive"), `level=ERROR msg="the daily purge failed; it is tried again tomorrow" error="could not create the archive folder`},
				{filepath.Join(t.TempDir(), "archive"), `level=INFO msg="purge `},
			} {
				var out lockedBuffer
				// Daily_at is four or five seconds away: the service purges then.
				at := time.Now().UTC().Add(5 * time.Second).Truncate(time.Second)
				after := time.Duration(at.Hour())*time.Hour + time.Duration(at.Minute())*time.Minute + time.Duration(at.Second())*time.Second
				d := &retention.Daily{DB: db, Zone: time.UTC, Logger: slog.New(slog.NewTextHandler(&out, nil)),
					Retention: config.Retention{RunsDays: 400, DailyAt: &after, ArchiveTo: c.archive}}
				if err := d.Start(acting()); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(2 * time.Minute)
				for !strings.Contains(out.String(), c.want) && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
				// It then waits for the next day's purge.
				for strings.Count(out.String(), "the next daily purge is at") < 2 && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
				d.Stop()
				if !strings.Contains(out.String(), c.want) || strings.Count(out.String(), "the next daily purge is at") != 2 {
					t.Fatalf("the service's log lacks %q, then the next day's purge:\n%s", c.want, out.String())
				}
			}
			var n int
			if err := db.QueryRowContext(acting(), "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'purge'").Scan(&n); err != nil || n != 1 {
				t.Fatalf("%d purge(s) recorded (%v), want the one that worked", n, err)
			}
		})
	}
}
