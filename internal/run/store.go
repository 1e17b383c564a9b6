package run

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// wtx is an Engine DB transaction of this package, with its database for
// the dialect's error checks.
type wtx struct {
	*engine.Tx
	db *engine.DB
}

// isUnique reports whether err is a unique-constraint violation.
func (t *wtx) isUnique(err error) bool { return t.db.IsUniqueViolation(err) }

// inTx runs fn in one Engine DB transaction carrying the context's actor
// (on SQLite, under the engine's in-process writer lock).
func inTx(ctx context.Context, db *engine.DB, fn func(tx *wtx) error) error {
	return db.Tx(ctx, func(tx *engine.Tx) error { return fn(&wtx{Tx: tx, db: db}) })
}

// transientDelays are the waits between tries of a write that failed with an
// Engine DB error, such as a dropped connection; the last one repeats while
// the database stays unavailable.
var transientDelays = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}

// inTxRetrying is inTx, tried again after an Engine DB error: an outcome
// must not be lost to a dropped connection, nor to an Engine DB gone for
// seconds. Any Engine DB error is tried again len(transientDelays) times; one
// that says the database is unavailable (DB.IsUnavailable) is tried again
// until the database is back, for up to LeaseDuration, the least time the
// work's lease lasts: past it the lease may have been taken, and the write
// then fails as stale anyway. Stale transitions and every other error are
// returned at once.
func inTxRetrying(ctx context.Context, db *engine.DB, fn func(tx *wtx) error) error {
	giveUp := time.Now().Add(LeaseDuration)
	err := inTx(ctx, db, fn)
	for try := 0; exit.Is(err, exit.EngineDB) && (try < len(transientDelays) || db.IsUnavailable(err)) &&
		time.Now().Before(giveUp); try++ {
		select {
		case <-ctx.Done():
			return err
		case <-time.After(transientDelays[min(try, len(transientDelays)-1)]):
		}
		err = inTx(ctx, db, fn)
	}
	return err
}
