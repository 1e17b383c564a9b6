package retention

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
)

// Daily is the server's daily purge, a background service of the overseer
// (so of the leader only): every day at Retention.Daily_at, in the
// overseer's time zone, it purges with the Retention section's policy and
// archive folder, and logs what it did. A purge that fails is logged and
// tried again the next day; it never stops the server. Without Daily_at it
// does nothing.
type Daily struct {
	DB        *engine.DB
	Retention config.Retention
	// LogDir is Orchestration.Log_dir; Zone is Orchestration.Timezone.
	LogDir string
	Zone   *time.Location
	Logger *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Name names the service.
func (d *Daily) Name() string { return "daily purge" }

// Start waits, in a goroutine of its own, for each day's purge time.
func (d *Daily) Start(ctx context.Context) error {
	if d.Retention.DailyAt == nil {
		return nil
	}
	log := d.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	zone := d.Zone
	if zone == nil {
		zone = time.UTC
	}
	at := *d.Retention.DailyAt
	ctx, d.cancel = context.WithCancel(ctx)
	d.wg.Go(func() {
		for {
			next := NextAt(time.Now(), at, zone)
			log.Info("the next daily purge is at "+next.Format(time.RFC3339), "next_purge", next.Format(time.RFC3339))
			timer := time.NewTimer(time.Until(next))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			d.purge(ctx, log)
		}
	})
	return nil
}

// purge runs one daily purge and logs its outcome.
func (d *Daily) purge(ctx context.Context, log *slog.Logger) {
	opts := Options{Policy: FromConfig(d.Retention), ArchiveDir: d.Retention.ArchiveTo, LogDir: d.LogDir, Logger: log,
		Request: audit.Request{Command: "purge", Arguments: map[string]any{"daily_at": config.ClockText(*d.Retention.DailyAt)}}}
	if _, err := Purge(ctx, d.DB, opts); err != nil {
		if ctx.Err() != nil {
			return
		}
		log.Error("the daily purge failed; it is tried again tomorrow", "error", err.Error())
	}
}

// Stop ends the service, waiting for a purge under way to stop (the
// batches it committed stay deleted).
func (d *Daily) Stop() {
	if d.cancel != nil {
		d.cancel()
		d.wg.Wait()
	}
}

// NextAt returns the first moment after now that is the time of day after
// midnight in zone: today's, or tomorrow's when today's has passed. On a
// day the clocks skip it, it is the moment the skipped time maps to.
func NextAt(now time.Time, after time.Duration, zone *time.Location) time.Time {
	local := now.In(zone)
	h, m, s := int(after/time.Hour), int(after%time.Hour/time.Minute), int(after%time.Minute/time.Second)
	for day := 0; ; day++ {
		t := time.Date(local.Year(), local.Month(), local.Day()+day, h, m, s, 0, zone)
		if t.After(now) {
			return t
		}
	}
}
