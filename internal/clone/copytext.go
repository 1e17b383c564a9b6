package clone

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The direct path between two PostgreSQL servers: the Engine DB's
// COPY (SELECT …) TO STDOUT streams straight into the warehouse's
// COPY … FROM STDIN, both in text format, so no value is decoded or
// encoded on the way. The SELECT is the one the row-by-row path runs, and
// each server writes or reads a field's text with the same functions that
// path's casts and binds use, so the mirror receives the same values.

// copyTextBuffer is how many bytes of COPY text gather before they are
// handed to the warehouse: the Engine DB sends one message per row.
const copyTextBuffer = 64 << 10

// errLoadEnded stops an Engine DB read whose warehouse load has ended.
var errLoadEnded = errors.New("the warehouse load ended")

// copyText loads the rows of query into cols of mirror through tc, reading
// them from the Engine DB's CopyOut on a goroutine of its own, and returns how
// many the warehouse loaded. progress is called with the rows read so far
// after every batchRows rows. A failure of the Engine DB read is returned
// as such (the warehouse then aborts its COPY); otherwise the warehouse's.
func copyText(ctx context.Context, db *engine.DB, query string,
	tc warehouse.TextCopier, mirror warehouse.Table, cols []warehouse.Column, progress func(rows int64)) (int64, error) {
	pr, pw := io.Pipe()
	read := make(chan error, 1)
	go func() {
		buf := bufio.NewWriterSize(pw, copyTextBuffer)
		err := db.CopyOut(ctx, query, &rowCounter{w: buf, progress: progress})
		if err == nil {
			err = buf.Flush()
		}
		pw.CloseWithError(err) // nil: the warehouse reads the end of the rows
		read <- err
	}()
	n, err := tc.CopyText(ctx, mirror, cols, pr)
	// A read still writing fails at its next row and gives its Engine DB
	// connection up.
	pr.CloseWithError(errLoadEnded)
	if rerr := <-read; rerr != nil && !errors.Is(rerr, errLoadEnded) {
		return 0, fmt.Errorf("reading the Engine DB table: %w", rerr)
	}
	return n, err
}

// rowCounter passes COPY text through to w and counts its rows: each ends
// with a newline, and a newline inside a value is written as \n.
type rowCounter struct {
	w        io.Writer
	rows     int64
	progress func(rows int64)
}

func (c *rowCounter) Write(p []byte) (int, error) {
	before := c.rows
	c.rows += int64(bytes.Count(p, []byte{'\n'}))
	if c.progress != nil && c.rows/batchRows != before/batchRows {
		c.progress(c.rows)
	}
	return c.w.Write(p)
}
