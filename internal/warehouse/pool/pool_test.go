package pool_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// TestAFileRemovedWhileUnusedIsOpenedAgain: a DuckDB file removed while its
// handle lingered unused is opened again at the next Acquire, so the next
// writer writes a file that exists.
func TestAFileRemovedWhileUnusedIsOpenedAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "w.duckdb")
	p := pool.New(enginetest.Open(t, engine.SQLite), warehouse.Options{Kind: warehouse.DuckDB, Path: path, Schema: "main"})
	defer p.Close()
	w, release, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if w.Verify() == nil {
		t.Fatal("the removed file verifies")
	}
	again, release, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if err := again.Verify(); err != nil {
		t.Fatalf("the warehouse acquired again: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file was not made again: %v", err)
	}
}
