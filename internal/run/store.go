package run

import (
	"context"
	"sync"
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

// sqliteWriters holds one mutex per SQLite Engine DB of this process. SQLite
// has one writer at a time; goroutines of one process queue on the mutex
// instead of on SQLite's busy handler, which sleeps between tries.
var sqliteWriters sync.Map // *engine.DB -> *sync.Mutex

// inTx runs fn in one Engine DB transaction carrying the context's actor.
func inTx(ctx context.Context, db *engine.DB, fn func(tx *wtx) error) error {
	if db.Kind() == engine.SQLite {
		m, _ := sqliteWriters.LoadOrStore(db, &sync.Mutex{})
		mu := m.(*sync.Mutex)
		mu.Lock()
		defer mu.Unlock()
	}
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
