// Package pooltest reads and writes a warehouse through its pool in tests.
package pooltest

import (
	"context"
	"testing"

	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// With runs fn in a transaction of the pool's warehouse and commits it.
func With(t testing.TB, p *pool.Pool, fn func(w warehouse.Warehouse, tx warehouse.Tx) error) {
	t.Helper()
	ctx := context.Background()
	w, release, err := p.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	tx, err := w.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := fn(w, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// Value runs a query on the pool's warehouse and returns its last row's
// one value as text.
func Value(t testing.TB, p *pool.Pool, query string) string {
	t.Helper()
	var v string
	With(t, p, func(_ warehouse.Warehouse, tx warehouse.Tx) error {
		rows, err := tx.Query(context.Background(), query)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := rows.Scan(&v); err != nil {
				t.Fatalf("%s: %v", query, err)
			}
		}
		return rows.Err()
	})
	return v
}
