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
// Engine DB error, such as a dropped connection.
var transientDelays = []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second}

// inTxRetrying is inTx, tried again after an Engine DB error: an outcome
// must not be lost to one dropped connection. Stale transitions and every
// other error are returned at once.
func inTxRetrying(ctx context.Context, db *engine.DB, fn func(tx *wtx) error) error {
	err := inTx(ctx, db, fn)
	for _, d := range transientDelays {
		if !exit.Is(err, exit.EngineDB) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d):
		}
		err = inTx(ctx, db, fn)
	}
	return err
}
