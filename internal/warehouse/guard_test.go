package warehouse

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// atOnce runs body n times at once, each goroutine released together, and
// returns their errors.
func atOnce(n int, body func(i int) error) []error {
	errs := make([]error, n)
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			errs[i] = body(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	return errs
}

// Eight transactions creating one table on first use and writing it, at
// once, each guarding it: every one succeeds, one after the other, each
// seeing the table the first one created — on DuckDB (where two catalog
// writes at once conflict) and on PostgreSQL (where two creations at once
// collide in pg_type), as eight in a row would.
func TestGuardedFirstUseByEightAtOnce(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		tbl := w.Table(testSchema, "ledger")
		q := Qualify(w, tbl)
		errs := atOnce(8, func(i int) error {
			ctx := context.Background()
			tx, err := w.Begin(ctx, tbl)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+q+" (n INTEGER)"); err != nil {
				return fmt.Errorf("creating: %w", err)
			}
			if _, err := tx.Exec(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%d)", q, i)); err != nil {
				return fmt.Errorf("writing: %w", err)
			}
			return tx.Commit()
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		if n := queryValue[int64](t, w, "SELECT count(DISTINCT n) FROM "+q); n != 8 {
			t.Fatalf("%d rows", n)
		}
	})
}

// A transaction guarding an object waits for the one holding it, until
// that one ends or its own context does; other objects are not held up,
// and a guard given back by a rollback is free again.
func TestAGuardWaitsForItsHolder(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		ctx := context.Background()
		a, b := w.Table(testSchema, "a"), w.Table(testSchema, "b")
		held, err := w.Begin(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		other, err := w.Begin(ctx, b)
		if err != nil {
			t.Fatalf("another object is held up: %v", err)
		}
		other.Rollback()
		waiting, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		if tx, err := w.Begin(waiting, b, a); err == nil || !errors.Is(err, context.DeadlineExceeded) {
			if tx != nil {
				tx.Rollback()
			}
			t.Fatalf("a second guard of %s while it is held: %v", a.Name, err)
		}
		got := make(chan error, 1)
		go func() {
			tx, err := w.Begin(ctx, a)
			if err == nil {
				err = tx.Rollback()
			}
			got <- err
		}()
		select {
		case err := <-got:
			t.Fatalf("the guard was taken while held: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		held.Rollback()
		if err := <-got; err != nil {
			t.Fatal(err)
		}
		guardLocks.Lock()
		defer guardLocks.Unlock()
		for _, k := range w.(*sqlWarehouse).guardKeys([]Table{a, b}) {
			if g := guardLocks.held[k]; g != nil {
				t.Fatalf("the guard of %q is left behind, %d holders", k, g.refs)
			}
		}
	})
}

// Eight parallel DuckDB loads starting together in a database just
// opened: the table function they share was registered once, when the
// database opened, so none of them fails registering it.
func TestEightPartLoadsAtOnce(t *testing.T) {
	t.Parallel()
	w := openReal(t, DuckDB)
	errs := atOnce(8, func(i int) error {
		ctx := context.Background()
		tbl := w.Table(testSchema, fmt.Sprintf("parts_%d", i))
		tx, err := w.Begin(ctx, tbl)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.Exec(ctx, w.CreateTable(tbl, loadColumns)); err != nil {
			return err
		}
		pl, _ := PartLoaderOf(tx)
		if _, err := pl.BulkLoadParts(ctx, tbl, loadColumns, sampleParts(3000, 2, -1, nil)); err != nil {
			return err
		}
		return tx.Commit()
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		checkLoaded(t, w, w.Table(testSchema, fmt.Sprintf("parts_%d", i)), 3000)
	}
}
