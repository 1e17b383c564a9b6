package clone

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// readAll reads every row of query into memory with s, copying each row.
func readAll(t *testing.T, s rowScanner, n int) [][]any {
	t.Helper()
	defer s.close()
	var out [][]any
	for {
		row := make([]any, n)
		ok, err := s.scan(row)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, row)
	}
}

// valueKindsRead makes a PostgreSQL Engine DB holding valueKinds and the
// rows of each statement of more, and returns its db, the table's columns
// and a read snapshot of it.
func valueKindsRead(t *testing.T, more ...string) (*engine.DB, []column, *readConn) {
	t.Helper()
	ctx := context.Background()
	db := pipelinetest.DB(t, engine.Postgres)
	b := pipelinetest.New(t, db)
	b.Exec(valueKinds)
	for _, m := range more {
		b.Exec(m)
	}
	cols, err := columns(ctx, db, "AUD_Value Kinds")
	if err != nil {
		t.Fatal(err)
	}
	reads, err := beginReads(ctx, db, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { endReads(reads) })
	return db, cols, reads[0]
}

func TestPostgresNativeReadGivesEveryValueAsDatabaseSQLDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Far and fine times, and text values that repeat past what a text
	// column's scanner keeps.
	db, cols, r := valueKindsRead(t, `INSERT INTO "AUD_Value Kinds" (id, at, local_at, day, note, short) VALUES
		(4, '0001-01-01 00:00:00.000001+00', '9999-12-31 23:59:59.999999', '0001-01-01', 'é', ''),
		(5, '2262-04-12 00:00:00.000001+00', '1900-01-01 00:00:00.5', '200000-01-01', '😀', 'x'),
		(6, '0044-03-15 12:00:00+00 BC', '2000-01-01 00:00:00', '4713-11-24 BC', NULL, '')`,
		`INSERT INTO "AUD_Value Kinds" (id, note, short, flag, whole)
		SELECT 100 + i, 'note ' || (i % 1500), repeat('é', i % 3), i % 2 = 0, i FROM generate_series(1, 3000) AS i`)
	q := selectQuery(db, "AUD_Value Kinds", cols) + " ORDER BY id"
	native, err := r.read(ctx, cols, q)
	if err != nil {
		t.Fatal(err)
	}
	if reader := fmt.Sprintf("%T", native.(*scanner).rows); reader != "*engine.pgRows" {
		t.Fatalf("a PostgreSQL Engine DB is read by a %s", reader)
	}
	got := readAll(t, native, len(cols))
	rs, err := r.query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	want := readAll(t, &sqlScanner{rs: rs, cols: cols}, len(cols))
	if len(got) != 3006 || len(got) != len(want) {
		t.Fatalf("read %d rows natively, %d through database/sql", len(got), len(want))
	}
	for r := range got {
		for i, c := range cols {
			g, w := got[r][i], want[r][i]
			gt, gok := g.(time.Time)
			wt, wok := w.(time.Time)
			same := reflect.DeepEqual(g, w)
			if gok && wok {
				same = gt.Equal(wt) && gt.Location() == time.UTC && wt.Location() == time.UTC
			}
			if !same {
				t.Errorf("row %v, column %s: read %#v natively, %#v through database/sql", want[r][0], c.Name, g, w)
			}
		}
	}
	// And the values themselves.
	at := func(id int64, col string) any {
		for _, row := range got {
			if row[0] == id {
				for i, c := range cols {
					if c.Name == col {
						return row[i]
					}
				}
			}
		}
		t.Fatalf("no row %d column %s", id, col)
		return nil
	}
	for _, c := range []struct {
		id   int64
		col  string
		want any
	}{
		{1, "note", nil},
		{2, "small", int64(-32768)},
		{2, "whole", int64(2147483647)},
		{2, "big", int64(-9223372036854775808)},
		{2, "flag", true},
		{3, "flag", false},
		{2, "num", "1234567890123456789012345678.12345678915"},
		{2, "num_scaled", "-12345678.0001"},
		{2, "at", time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC)},
		{2, "local_at", time.Date(2026, 3, 2, 6, 30, 15, 123456000, time.UTC)},
		{3, "at", time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{2, "day", time.Date(1900, 2, 28, 0, 0, 0, 0, time.UTC)},
		{2, "note", "tab\there\nnew line\r\\N back\\slash \\ \"quoted\" it's é😀"},
		{3, "note", ""},
		{4, "at", time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)},
		{4, "local_at", time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)},
		{4, "day", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{5, "at", time.Date(2262, 4, 12, 0, 0, 0, 1000, time.UTC)},
		{5, "day", time.Date(200000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{6, "at", time.Date(-43, 3, 15, 12, 0, 0, 0, time.UTC)},
		{6, "day", time.Date(-4712, 11, 24, 0, 0, 0, 0, time.UTC)},
		{4, "short", ""},
		{1600, "note", "note 0"},
	} {
		g := at(c.id, c.col)
		if gt, ok := g.(time.Time); ok {
			if wt, _ := c.want.(time.Time); !gt.Equal(wt) {
				t.Errorf("row %d, column %s: read %v, want %v", c.id, c.col, gt, wt)
			}
			continue
		}
		if g != c.want {
			t.Errorf("row %d, column %s: read %#v, want %#v", c.id, c.col, g, c.want)
		}
	}
}

func TestPostgresNativeReadRefusesInfiniteTimes(t *testing.T) {
	t.Parallel()
	db, cols, r := valueKindsRead(t, `INSERT INTO "AUD_Value Kinds" (id, day) VALUES (4, 'infinity')`)
	s, err := r.read(context.Background(), cols, selectQuery(db, "AUD_Value Kinds", cols)+" WHERE id = 4")
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	row := make([]any, len(cols))
	if ok, err := s.scan(row); ok || err == nil || err.Error() != "column day: "+engine.ErrInfiniteTime.Error() {
		t.Fatalf("read an infinite date: %v, %v", ok, err)
	}
}

// sqlScanner reads a result set through database/sql, each value as the
// driver gives it and times through timeValue: the reference the native
// read is compared with.
type sqlScanner struct {
	rs   *sql.Rows
	cols []column
}

func (s *sqlScanner) scan(row []any) (bool, error) {
	if !s.rs.Next() {
		return false, s.rs.Err()
	}
	dest := make([]any, len(row))
	for i := range dest {
		dest[i] = &row[i]
	}
	if err := s.rs.Scan(dest...); err != nil {
		return false, err
	}
	for i, c := range s.cols {
		if c.typ == warehouse.Timestamp || c.typ == warehouse.Date {
			var err error
			if row[i], err = timeValue(row[i]); err != nil {
				return false, err
			}
		}
	}
	return true, nil
}

func (s *sqlScanner) close() { s.rs.Close() }
