package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
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
