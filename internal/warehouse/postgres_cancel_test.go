package warehouse

import (
	"context"
	"testing"
	"time"
)

// A statement whose context is cancelled is stopped on the server before
// the call returns, so a process that ends right after leaves nothing
// running in the warehouse; and the warehouse stays usable.
func TestCancelledStatementStopsOnTheServer(t *testing.T) {
	t.Parallel()
	w := openReal(t, Postgres)
	ctx, cancel := context.WithCancel(context.Background())
	tx, err := w.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	running := make(chan error, 1)
	go func() {
		_, err := tx.Exec(ctx, "SELECT pg_sleep(30) /* etl-craft cancel test */")
		running <- err
	}()
	active := func() int {
		check, err := w.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer check.Rollback()
		var n int
		rows, err := check.Query(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%etl-craft cancel test%' AND pid <> pg_backend_pid()")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); active() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the statement never started")
		}
	}
	cancel()
	if err := <-running; err == nil {
		t.Fatal("the cancelled statement returned no error")
	}
	tx.Rollback()
	// No polling: the server stopped the statement before Exec returned.
	if n := active(); n != 0 {
		t.Fatalf("%d cancelled statements still run on the server", n)
	}
}
