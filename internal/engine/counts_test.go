package engine_test

import (
	"context"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

// A DB counts its write transactions, the statements run in them (the
// actor's settings on PostgreSQL among them) and the statements run
// outside any, committed or not.
func TestCountsCountTransactionsStatementsAndReads(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		before := db.Counts()
		var n int
		if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			if err := tx.ExecRaw(ctx, "CREATE TABLE counted (id INTEGER)"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO counted (id) VALUES ($1)", 1)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		db.Tx(ctx, func(tx *engine.Tx) error { return context.Canceled }) // rolled back
		scope := int64(0)
		if db.Capabilities().Server {
			scope = 1 // set_config of the actor, per transaction
		}
		want := engine.Counts{Transactions: 2, Statements: 2 + 2*scope, Reads: 1}
		if got := db.Counts().Sub(before); got != want {
			t.Fatalf("counts %+v, want %+v", got, want)
		}
	})
}
