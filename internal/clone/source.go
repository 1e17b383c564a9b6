package clone

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The Engine DB side of a clone: each table's columns and their mirror types
// from the live catalog, and the rows, read in batches by a goroutine of
// their own while the warehouse writes the batch before.

// batchRows is how many rows are read from the Engine DB at a time.
const batchRows = 1000

// batchesInFlight is how many batches exist per table: one being read, one
// being written, one waiting between them.
const batchesInFlight = 3

// column is a column of an Engine DB table, with the portable type its
// mirror gives it.
type column struct {
	engine.Column
	typ warehouse.Type
}

// columns returns a table's columns in order, typed from the Engine DB's
// catalog.
func columns(ctx context.Context, db *engine.DB, table string) ([]column, error) {
	cols, err := db.Columns(ctx, table)
	if err != nil {
		return nil, err
	}
	out := make([]column, len(cols))
	for i, c := range cols {
		out[i] = column{Column: c, typ: mirrorType(c.Type)}
	}
	return out, nil
}

// mirrorType is the warehouse type that mirrors an Engine DB column type:
// integers BIGINT, other numbers DECIMAL, TIMESTAMP, DATE and BOOLEAN as
// themselves, and text as text.
func mirrorType(t engine.ColumnType) warehouse.Type {
	switch t {
	case engine.IntegerColumn:
		return warehouse.BigInt
	case engine.NumberColumn:
		return warehouse.Decimal
	case engine.TimestampColumn:
		return warehouse.Timestamp
	case engine.DateColumn:
		return warehouse.Date
	case engine.BooleanColumn:
		return warehouse.Boolean
	}
	return warehouse.String
}

// selectQuery returns the query reading every column of the table, each
// as the Engine DB reads it for an exact copy.
func selectQuery(db *engine.DB, table string, cols []column) string {
	ec := make([]engine.Column, len(cols))
	for i, c := range cols {
		ec[i] = c.Column
	}
	return db.ReadQuery(table, ec)
}

// timeValue gives a bulk load the time.Time of a timestamp or date read
// from the Engine DB: a time value as it is, text in the Engine DB's fixed
// UTC form parsed directly, any other text through engine.Time's layouts.
// Text that is no time is an error naming it, never a zero time.
func timeValue(v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case time.Time:
		return x.UTC(), nil
	case string:
		if t, ok := parseEngineTime(x); ok {
			return t, nil
		}
	}
	var t engine.Time
	if err := t.Scan(v); err != nil {
		return nil, err
	}
	return t.Time, nil
}

// parseEngineTime parses the two text forms a SQLite Engine DB stores,
// YYYY-MM-DD HH:MM:SS.ffffff+00:00 and YYYY-MM-DD, without the general
// layout machinery: a clone reads millions of them.
func parseEngineTime(s string) (time.Time, bool) {
	if len(s) != len("2006-01-02") && (len(s) != len("2006-01-02 15:04:05.000000+00:00") || s[10] != ' ' ||
		s[13] != ':' || s[16] != ':' || s[19] != '.' || s[26:] != "+00:00") {
		return time.Time{}, false
	}
	if s[4] != '-' || s[7] != '-' {
		return time.Time{}, false
	}
	num := func(i, j int) int {
		n := 0
		for _, c := range []byte(s[i:j]) {
			if c < '0' || c > '9' {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	y, mo, d := num(0, 4), num(5, 7), num(8, 10)
	h, mi, sec, us := 0, 0, 0, 0
	if len(s) > 10 {
		h, mi, sec, us = num(11, 13), num(14, 16), num(17, 19), num(20, 26)
	}
	if y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 || us < 0 {
		return time.Time{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, us*1000, time.UTC)
	if t.Day() != d {
		return time.Time{}, false // such as February 30
	}
	return t, true
}

// batch is up to batchRows rows, their values one after another.
type batch struct {
	vals []any
	n    int
	err  error
}

// rowScanner reads the rows of one query in a read snapshot as a bulk load
// takes them, one at a time.
type rowScanner interface {
	// scan reads the next row into row and reports whether there was one;
	// at the end, the read's error.
	scan(row []any) (bool, error)
	// close ends the read and gives its connection back to the snapshot;
	// it may be called again, and then does nothing. A read must be closed
	// before its snapshot ends.
	close()
}

// read runs the query q, whose columns are cols, on the snapshot's
// connection (engine.ReadRows).
func (r *readConn) read(ctx context.Context, cols []column, q string, args ...any) (rowScanner, error) {
	rows, err := r.snap.ReadRows(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return &scanner{rows: rows, cols: cols}, nil
}

// stream returns the rows of sets, one after another in the order their
// batches are read, as a bulk load's row iterator. A goroutine per set reads
// it in batches of batchRows, with at most batchesInFlight batches per set
// at a time, so the Engine DB is read while the warehouse writes, and no
// more than those batches are ever held. progress is called with the rows
// handed over so far after each batch. Each set is closed when the
// iteration ends.
func stream(ctx context.Context, sets []rowScanner, n int, progress func(rows int64)) warehouse.Rows {
	return func(yield func([]any, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		batches := batchesInFlight * len(sets)
		full := make(chan *batch, batches)
		free := make(chan *batch, batches)
		for range batches {
			free <- &batch{vals: make([]any, n*batchRows)}
		}
		var readers sync.WaitGroup
		for _, s := range sets {
			readers.Go(func() {
				defer s.close()
				readBatches(ctx, s, n, free, full)
			})
		}
		go func() {
			readers.Wait()
			close(full)
		}()
		defer func() {
			cancel()
			for range full {
			}
		}()
		var handed int64
		for b := range full {
			if b.err != nil {
				yield(nil, b.err)
				return
			}
			for i := range b.n {
				if !yield(b.vals[i*n:(i+1)*n:(i+1)*n], nil) {
					return
				}
			}
			handed += int64(b.n)
			if progress != nil {
				progress(handed)
			}
			free <- b
		}
	}
}

// scanner reads the rows of one Engine DB read: each value as the Engine
// DB reads it (the warehouse brings it to its column's type), except
// timestamps and dates, which become time values.
type scanner struct {
	rows engine.RowReader
	cols []column
}

func (s *scanner) scan(row []any) (bool, error) {
	if ok, err := s.rows.Next(row); !ok || err != nil {
		return ok, err
	}
	for i, c := range s.cols {
		if c.typ == warehouse.Timestamp || c.typ == warehouse.Date {
			v, err := timeValue(row[i])
			if err != nil {
				return false, &ValueError{KeyColumn: s.cols[0].Name, Key: keyText(row[0]), Column: c.Name, Err: err}
			}
			row[i] = v
		}
	}
	return true, nil
}

// ValueError is a value of one row of an Engine DB table that a clone
// cannot read as its column's type. The row is named by its first column,
// the table's id.
type ValueError struct {
	KeyColumn, Key string
	Column         string
	Err            error
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("the row with %s %s: column %s: %v", e.KeyColumn, e.Key, e.Column, e.Err)
}

func (e *ValueError) Unwrap() error { return e.Err }

// keyText writes a row's key as a message names it.
func keyText(v any) string {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case nil:
		return "NULL"
	}
	return fmt.Sprint(v)
}

func (s *scanner) close() { s.rows.Close() }

// readBatches scans s, whose rows have n values, into free batches and
// sends each full one, and the last, on full; a batch with err set ends the
// stream. It stops when ctx ends.
func readBatches(ctx context.Context, s rowScanner, n int, free <-chan *batch, full chan<- *batch) {
	for {
		var b *batch
		select {
		case b = <-free:
		case <-ctx.Done():
			return
		}
		b.n = 0
		for b.n < batchRows {
			ok, err := s.scan(b.vals[b.n*n : (b.n+1)*n])
			if err != nil || !ok {
				b.err = err
				if b.n > 0 || err != nil {
					full <- b
				}
				return
			}
			b.n++
		}
		full <- b
	}
}

// parts returns sets, whose rows have n values, as the parts of a parallel
// bulk load, whose threads read them (see warehouse.PartLoader). progress is
// called with the rows read so far after every batchRows rows of a part, and
// at its end; never twice at once. The caller closes the sets.
func parts(sets []rowScanner, n int, progress func(rows int64)) []warehouse.Part {
	var mu sync.Mutex
	var read int64
	add := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		read += int64(n)
		if progress != nil {
			progress(read)
		}
	}
	out := make([]warehouse.Part, len(sets))
	for i, s := range sets {
		row := make([]any, n)
		rows := 0
		out[i] = func() ([]any, error) {
			ok, err := s.scan(row)
			if err != nil || !ok {
				if rows > 0 {
					add(rows)
					rows = 0
				}
				return nil, err
			}
			if rows++; rows == batchRows {
				add(rows)
				rows = 0
			}
			return row, nil
		}
	}
	return out
}
