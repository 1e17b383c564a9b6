// Package maintenance holds the background services of the server, each
// started and stopped on its own: the leader lock (one overseer per Engine
// DB), the overseer heartbeat (its AUD_OVERSEERS row), the reconciler of
// expired leases, and the schedule ticker that records each due tick as a
// run. A service never prints; it logs, and reports what it could not do as
// an error from Start.
package maintenance

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Service is a background service of the server.
type Service interface {
	// Name names the service in logs.
	Name() string
	// Start begins the service's work, in goroutines of its own when it
	// has any; an error means the service could not start.
	Start(ctx context.Context) error
	// Stop ends the work and waits for it; it does nothing when the
	// service did not start.
	Stop()
}

// loop calls work every period, and once at once, in a goroutine of its
// own, until stopped: the shape of the periodic services.
type loop struct {
	every time.Duration
	work  func(ctx context.Context)
	// next, when set, returns when work is next due, if that is sooner
	// than every: the loop wakes then. The zero time means not sooner.
	next   func() time.Time
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start begins the loop; ctx's values (the actor) reach work, its end stops
// the loop too.
func (l *loop) start(ctx context.Context) {
	ctx, l.cancel = context.WithCancel(ctx)
	l.wg.Go(func() {
		timer := time.NewTimer(l.every)
		defer timer.Stop()
		for {
			l.work(ctx)
			wait := l.every
			if l.next != nil {
				if at := l.next(); !at.IsZero() {
					wait = max(min(wait, time.Until(at)), 0)
				}
			}
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
	})
}

// stop ends the loop and waits for the work under way.
func (l *loop) stop() {
	if l.cancel != nil {
		l.cancel()
		l.wg.Wait()
	}
}

// logger returns log, or a logger that discards when it is nil.
func logger(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
