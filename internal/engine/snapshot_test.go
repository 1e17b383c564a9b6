package engine_test

import (
	"context"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

// Only a snapshot's connection maps the SQLite Engine DB file, and only
// while the snapshot lasts: every mapping counts the file's pages again in
// the process's resident memory, which grew with the history when each of a
// server's pooled connections mapped it.
func TestOnlyASnapshotMapsTheSQLiteFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enginetest.Open(t, engine.SQLite)
	db.SQL().SetMaxOpenConns(1) // the snapshot's connection is the one the pool gives next
	var before, during, after int64
	if err := db.SQL().QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&before); err != nil {
		t.Fatal(err)
	}
	snap, err := db.BeginSnapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&during); err != nil {
		t.Fatal(err)
	}
	snap.End()
	if err := db.SQL().QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if before != 0 || during != 1<<30 || after != 0 {
		t.Fatalf("mmap_size %d before the snapshot, %d in it, %d after it; want 0, %d, 0", before, during, after, 1<<30)
	}
}
