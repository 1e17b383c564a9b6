package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// DefaultBusyTimeout is how long a write waits for a lock another writer
// holds when Options.BusyTimeout is zero.
const DefaultBusyTimeout = 60 * time.Second

// BusyTimeout returns how long a write waits for a lock another writer
// holds (see Options.BusyTimeout).
func (db *DB) BusyTimeout() time.Duration { return db.opts.busyTimeout() }

func (o Options) busyTimeout() time.Duration {
	if o.BusyTimeout <= 0 {
		return DefaultBusyTimeout
	}
	return o.BusyTimeout
}

// writerLock is the in-process lock of a SingleWriter Engine DB: every write
// transaction of the process holds it, so goroutines queue on it instead of
// on SQLite's busy handler, which sleeps between tries. A nil writerLock (a
// database with many writers) never waits.
type writerLock struct {
	slot    chan struct{}
	timeout time.Duration
	// blocked is set while the holder waits for the database's own write
	// lock, which another process holds.
	blocked atomic.Bool
}

// newWriterLock returns the lock a dialect with those capabilities needs.
func newWriterLock(c Capabilities, timeout time.Duration) *writerLock {
	if !c.SingleWriter {
		return nil
	}
	return &writerLock{slot: make(chan struct{}, 1), timeout: timeout}
}

// lock waits for the lock and returns how long it waited. The wait ends
// with the context, or with an Engine DB error after the busy timeout,
// naming who held the lock: this process's writer, or (when that writer
// was itself waiting for the database) another process. A transaction
// begun inside another one's fn fails instead of hanging.
func (l *writerLock) lock(ctx context.Context) (time.Duration, error) {
	if l == nil {
		return 0, nil
	}
	select {
	case l.slot <- struct{}{}:
		return 0, nil
	default:
	}
	start := time.Now()
	timer := time.NewTimer(l.timeout)
	defer timer.Stop()
	select {
	case l.slot <- struct{}{}:
		return time.Since(start), nil
	case <-ctx.Done():
		return 0, exit.Wrap(exit.EngineDB, ctx.Err(), "could not connect to the Engine DB")
	case <-timer.C:
		if l.blocked.Load() {
			return 0, busy(nil, "%s: this process's writes queued behind it for %s, the busy timeout", anotherProcess, l.timeout)
		}
		return 0, busy(nil, "the Engine DB stayed busy with another write transaction of this process for %s, the busy timeout", l.timeout)
	}
}

// busyWait is a write that waited the whole busy timeout for a lock
// another writer held; its message names the holder.
type busyWait struct {
	msg string
	err error // the database's own error, if it gave one
}

func (e *busyWait) Error() string {
	if e.err == nil {
		return e.msg
	}
	return e.msg + ": " + e.err.Error()
}

func (e *busyWait) Unwrap() error { return e.err }

// busy returns the Engine DB error (exit 12) of a write that waited the
// whole busy timeout, wrapping the database's error err (nil: none).
func busy(err error, format string, args ...any) error {
	return &exit.Error{Code: exit.EngineDB, Err: &busyWait{msg: fmt.Sprintf(format, args...), err: err}}
}

// anotherProcess says who holds a SQLite Engine DB's write lock when this
// process's writers have none.
const anotherProcess = "another process holds the Engine DB's write lock"

// waiting runs begin, which waits for the database's own write lock, with
// the lock marked blocked.
func (l *writerLock) waiting(begin func()) {
	if l == nil {
		begin()
		return
	}
	l.blocked.Store(true)
	defer l.blocked.Store(false)
	begin()
}

// unlock releases the lock lock took.
func (l *writerLock) unlock() {
	if l != nil {
		<-l.slot
	}
}

// beginWait is how long the BEGIN of a write transaction may wait for the
// database after waiting for the in-process lock: what is left of the busy
// timeout, and at least a millisecond.
func beginWait(timeout, waited time.Duration) time.Duration {
	return max(timeout-waited, time.Millisecond)
}

// isBusyWait reports whether err is a write that waited the whole busy
// timeout (see busy).
func isBusyWait(err error) bool {
	var b *busyWait
	return errors.As(err, &b)
}
