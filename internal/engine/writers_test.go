package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// TestSQLiteWritersQueueInTheProcess holds one SQLite write transaction
// open and begins another: the second waits on the in-process writer lock,
// holding no connection (not in SQLite's busy handler), and runs once the
// first commits. PostgreSQL has many writers and takes no such lock.
func TestSQLiteWritersQueueInTheProcess(t *testing.T) {
	if c := enginetest.Open(t, engine.Postgres).Capabilities(); c.SingleWriter || !c.CopyOut || !c.Server {
		t.Fatalf("PostgreSQL capabilities %+v", c)
	}
	db := enginetest.Open(t, engine.SQLite)
	if c := db.Capabilities(); !c.SingleWriter || c.CopyOut || c.Server {
		t.Fatalf("SQLite capabilities %+v", c)
	}
	ctx := context.Background()
	inside, hold := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- db.Tx(ctx, func(*engine.Tx) error { close(inside); <-hold; return nil })
	}()
	<-inside
	second := make(chan error, 1)
	go func() { second <- db.Tx(ctx, func(*engine.Tx) error { return nil }) }()
	time.Sleep(200 * time.Millisecond)
	if n := db.SQL().Stats().InUse; n != 1 {
		t.Errorf("%d connections in use while the second writer waits, want 1", n)
	}
	select {
	case err := <-second:
		t.Fatalf("the second write transaction ran beside the first: %v", err)
	default:
	}
	close(hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
}

// A write waits for a lock another writer holds no longer than the busy
// timeout, in this process's queue and in SQLite's own wait together, and
// then fails (exit 12, unavailable) naming who held it: another process,
// or another write transaction of this process. On PostgreSQL a bounded
// transaction's lock waits end likewise.
func TestABusyWriteNamesTheHolder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	busy := func(t *testing.T, db *engine.DB, err error, holder string) {
		t.Helper()
		if !exit.Is(err, exit.EngineDB) || !db.IsUnavailable(err) || !strings.Contains(err.Error(), holder) {
			t.Errorf("got %v, want an unavailable Engine DB error (exit 12) naming %q", err, holder)
		}
	}
	nothing := func(*engine.Tx) error { return nil }
	t.Run("sqlite", func(t *testing.T) {
		opts := enginetest.NewOptions(t, engine.SQLite)
		opts.BusyTimeout = 300 * time.Millisecond
		db := enginetest.OpenWith(t, opts)
		if db.BusyTimeout() != opts.BusyTimeout {
			t.Fatalf("busy timeout %s", db.BusyTimeout())
		}

		// This process's own transaction holds the lock.
		inside, hold := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() { first <- db.Tx(ctx, func(*engine.Tx) error { close(inside); <-hold; return nil }) }()
		<-inside
		busy(t, db, db.Tx(ctx, nothing), "another write transaction of this process")
		close(hold)
		if err := <-first; err != nil {
			t.Fatal(err)
		}

		// Another process holds it: a writer waiting for it, and one
		// queued behind that writer, both name the other process.
		release := enginetest.HoldWriteLock(t, opts)
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- db.Tx(ctx, nothing) }()
		}
		for range 2 {
			err := <-errs
			busy(t, db, err, "another process holds the Engine DB's write lock")
			if !db.IsBusy(err) && !strings.Contains(err.Error(), "queued behind it") {
				t.Errorf("neither busy nor queued: %v", err)
			}
		}
		release()
		if err := db.Tx(ctx, nothing); err != nil {
			t.Fatalf("once the other process is done: %v", err)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		opts := enginetest.NewOptions(t, engine.Postgres)
		opts.BusyTimeout = 300 * time.Millisecond
		db := enginetest.OpenWith(t, opts)
		if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE AUD_ACTIONS (X INT)"); err != nil {
			t.Fatal(err)
		}
		insert := func(tx *engine.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO AUD_ACTIONS (X) VALUES (1)")
			return err
		}
		release := enginetest.HoldWriteLock(t, opts)
		err := db.BoundedTx(ctx, insert)
		busy(t, db, err, "another session holds a lock this write needs")
		if !db.IsBusy(err) {
			t.Errorf("not busy: %v", err)
		}
		release()
		if err := db.BoundedTx(ctx, insert); err != nil {
			t.Fatalf("once the other process is done: %v", err)
		}
		// The bound ends with the transaction.
		var timeout string
		if err := db.QueryRowContext(ctx, "SHOW lock_timeout").Scan(&timeout); err != nil || timeout != "0" {
			t.Errorf("lock_timeout outside a bounded transaction: %q %v", timeout, err)
		}
	})
}
