package engine

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// busyTimeout is how long a SQLite write waits for the database: on the
// in-process writer lock, then on SQLite's own busy handler.
const busyTimeout = 60 * time.Second

// writerLock is the in-process lock of a SingleWriter Engine DB: every write
// transaction of the process holds it, so goroutines queue on it instead of
// on SQLite's busy handler, which sleeps between tries. A nil writerLock (a
// database with many writers) never waits.
type writerLock chan struct{}

// newWriterLock returns the lock a dialect with those capabilities needs.
func newWriterLock(c Capabilities) writerLock {
	if !c.SingleWriter {
		return nil
	}
	return make(writerLock, 1)
}

// lock waits for the lock. The wait ends with the context, or with an
// Engine DB error after busyTimeout, as SQLite's own wait would: a
// transaction begun inside another one's fn fails instead of hanging.
func (l writerLock) lock(ctx context.Context) error {
	if l == nil {
		return nil
	}
	select {
	case l <- struct{}{}:
		return nil
	default:
	}
	timer := time.NewTimer(busyTimeout)
	defer timer.Stop()
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return exit.Wrap(exit.EngineDB, ctx.Err(), "could not connect to the Engine DB")
	case <-timer.C:
		return exit.Errorf(exit.EngineDB, "the Engine DB stayed busy with another write transaction of this process for %s", busyTimeout)
	}
}

// unlock releases the lock lock took.
func (l writerLock) unlock() {
	if l != nil {
		<-l
	}
}
