package warehouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

func TestCopyTextStatementQuotesEveryName(t *testing.T) {
	t.Parallel()
	d := postgresDialect{}
	got, err := copyTextStatement(d, Table{Catalog: "analytics", Schema: "ETL_Craft", Name: `AUD_Odd "Name"`},
		[]Column{{"ID", BigInt}, {"note it's", String}})
	want := `COPY "etl_craft"."AUD_Odd ""Name""" ("ID", "note it's") FROM STDIN (FORMAT text, ENCODING 'UTF8')`
	if err != nil || got != want {
		t.Errorf("got %q, %v\nwant %q", got, err, want)
	}
	if _, err := copyTextStatement(d, Table{Schema: "s", Name: "T"}, nil); err == nil {
		t.Error("a COPY without columns was built")
	}
}

func TestOnlyPostgresTransactionsCopyText(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		tx, err := w.Begin(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, ok := TextCopierOf(tx); ok != (w.Name() == "postgres") {
			t.Errorf("%s: TextCopierOf reports %v", w.Name(), ok)
		}
	})
}

// copyText writes row as a line of COPY text format: fields separated by
// tabs, NULL as \N, backslash, tab, newline and carriage return escaped,
// times in RFC 3339 with their own offset.
func copyText(row []any) string {
	fields := make([]string, len(row))
	for i, v := range row {
		switch x := v.(type) {
		case nil:
			fields[i] = `\N`
		case time.Time:
			fields[i] = x.Format(time.RFC3339Nano)
		case bool:
			fields[i] = map[bool]string{true: "t", false: "f"}[x]
		default:
			fields[i] = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`).Replace(fmt.Sprint(x))
		}
	}
	return strings.Join(fields, "\t") + "\n"
}

// sampleText returns rows from..to-1 of the sample rows in COPY text format.
func sampleText(from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		b.WriteString(copyText(sampleRow(i)))
	}
	return b.String()
}

// COPY text loads every sample value exactly, into a table whose name
// needs quoting, leaving a column it does not name NULL.
func TestCopyTextStoresEveryValueExactly(t *testing.T) {
	t.Parallel()
	w := openReal(t, Postgres)
	tbl := w.Table(testSchema, `Odd "Copy" Name`)
	mustExec(t, w, w.CreateTable(tbl, append(loadColumns, Column{"GONE", String})))
	const n = 3_000
	inTx(t, w, func(ctx context.Context, tx Tx) {
		tc, ok := TextCopierOf(tx)
		if !ok {
			t.Fatal("a PostgreSQL transaction has no TextCopier")
		}
		loaded, err := tc.CopyText(ctx, tbl, loadColumns, strings.NewReader(sampleText(0, n)))
		if err != nil || loaded != n {
			t.Fatalf("loaded %d rows, %v; want %d", loaded, err, n)
		}
	})
	checkLoaded(t, w, tbl, n)
	if got := queryValue[int64](t, w, "SELECT COUNT(*) FROM "+Qualify(w, tbl)+` WHERE "GONE" IS NULL`); got != n {
		t.Errorf("%d rows have GONE NULL, want %d", got, n)
	}
}

// failingReader gives its text, then fails.
type failingReader struct{ r io.Reader }

func (f *failingReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err == io.EOF {
		return n, errors.New("the Engine DB went away")
	}
	return n, err
}

// A COPY that fails, because its source does or because of a value, rolls
// back with its transaction: the rows the table had are still there.
func TestCopyTextFailureRollsBack(t *testing.T) {
	t.Parallel()
	w := openReal(t, Postgres)
	ctx := context.Background()
	tbl := w.Table(testSchema, "KEEP")
	mustExec(t, w, w.CreateTable(tbl, loadColumns))
	seed(t, w, tbl, 3)
	for _, c := range []struct {
		name string
		r    io.Reader
		want string
	}{
		{"source error", &failingReader{strings.NewReader(sampleText(100, 5_000))}, "the Engine DB went away"},
		{"bad value", strings.NewReader(sampleText(100, 5_000) + "x" + copyText(sampleRow(1))[1:]), `invalid input syntax for type bigint: "x"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx, err := w.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			if _, err := tx.Exec(ctx, w.Truncate(tbl)); err != nil {
				t.Fatal(err)
			}
			tc, _ := TextCopierOf(tx)
			if _, err := tc.CopyText(ctx, tbl, loadColumns, c.r); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("COPY error %v, want %q", err, c.want)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			checkLoaded(t, w, tbl, 3)
		})
	}
}
