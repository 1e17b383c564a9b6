package warehouse

import (
	"context"
	"errors"
	"testing"
)

// sampleParts splits the first n sample rows into k parts, row i going to
// part i mod k; the part numbered fail returns err after its rows.
func sampleParts(n, k, fail int, err error) []Part {
	parts := make([]Part, k)
	for p := range parts {
		i := p
		buf := make([]any, len(loadColumns))
		parts[p] = func() ([]any, error) {
			if i >= n {
				if p == fail {
					return nil, err
				}
				return nil, nil
			}
			copy(buf, sampleRow(i))
			i += k
			return buf, nil
		}
	}
	return parts
}

// A DuckDB load from parts stores every row of every part exactly, however
// many parts there are against DuckDB's threads, and gives the connection's
// session setting back.
func TestBulkLoadPartsRoundTrip(t *testing.T) {
	t.Parallel()
	w := openReal(t, DuckDB)
	for _, k := range []int{1, 2, 5} {
		tbl := w.Table(testSchema, "PARTS")
		mustExec(t, w, "DROP TABLE IF EXISTS "+Qualify(w, tbl), w.CreateTable(tbl, loadColumns))
		const n = 30_000
		inTx(t, w, func(ctx context.Context, tx Tx) {
			pl, ok := PartLoaderOf(tx)
			if !ok {
				t.Fatal("a DuckDB transaction has no PartLoader")
			}
			if got, err := pl.BulkLoadParts(ctx, tbl, loadColumns, sampleParts(n, k, -1, nil)); err != nil || got != n {
				t.Fatalf("%d parts: loaded %d rows, %v; want %d", k, got, err, n)
			}
		})
		checkLoaded(t, w, tbl, n)
	}
	if v := queryValue[bool](t, w, "SELECT current_setting('preserve_insertion_order')"); !v {
		t.Fatal("preserve_insertion_order is still false on a connection of the pool")
	}
}

// The first error of a part, or the context's, is the load's error, as it
// is, and the transaction rolls back to the rows the table had.
func TestBulkLoadPartsFailure(t *testing.T) {
	t.Parallel()
	w := openReal(t, DuckDB)
	tbl := w.Table(testSchema, "KEEP")
	mustExec(t, w, w.CreateTable(tbl, loadColumns))
	seed(t, w, tbl, 3)
	gone := errors.New("the Engine DB went away")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"part error", context.Background(), gone},
		{"canceled", canceled, context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx, err := w.Begin(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(context.Background(), w.Truncate(tbl)); err != nil {
				t.Fatal(err)
			}
			pl, _ := PartLoaderOf(tx)
			if _, err := pl.BulkLoadParts(c.ctx, tbl, loadColumns, sampleParts(20_000, 2, 1, gone)); !errors.Is(err, c.want) {
				t.Fatalf("load error %v, want %v", err, c.want)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			checkLoaded(t, w, tbl, 3)
		})
	}
}
