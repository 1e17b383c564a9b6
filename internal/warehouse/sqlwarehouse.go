package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"iter"
	"os"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/span"
)

// bulkLoader loads rows into t on the connection of an open transaction. The
// default is insertRows; PostgreSQL and DuckDB have faster paths.
type bulkLoader func(ctx context.Context, tx *sqlTx, t Table, cols []Column, rows Rows) (int64, error)

// sqlWarehouse is a Warehouse over database/sql: every warehouse here has a
// database/sql driver (Databricks through this package's own).
type sqlWarehouse struct {
	Dialect
	db      *sql.DB
	catalog string
	desc    string     // String(), without secrets
	bulk    bulkLoader // nil means insertRows
	// file is the database file as it was opened; nil for a server.
	file  *openedFile
	close func() error // nil means db.Close
	// guard locks a transaction's guarded objects for other processes;
	// nil means they are guarded in this process only (see guard.go).
	guard func(ctx context.Context, tx *sqlTx, objects []Table) error
}

func (w *sqlWarehouse) String() string  { return w.desc }
func (w *sqlWarehouse) Catalog() string { return w.catalog }
func (w *sqlWarehouse) Table(schema, name string) Table {
	return Table{Catalog: w.catalog, Schema: schema, Name: name}
}

func (w *sqlWarehouse) Ping(ctx context.Context) error {
	if err := w.db.PingContext(ctx); err != nil {
		return exit.Wrap(exit.ConnectionTest, err, "could not connect to the warehouse %s", w.desc)
	}
	return nil
}

func (w *sqlWarehouse) SchemaExists(ctx context.Context, schema string) (bool, error) {
	q, args := w.schemaQuery(w.catalog, schema)
	var n int64
	if err := w.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return false, exit.Wrap(exit.ConnectionTest, err, "could not look up schema %s in the warehouse %s", schema, w.desc)
	}
	return n > 0, nil
}

func (w *sqlWarehouse) Columns(ctx context.Context, schema, table string) ([]ColumnInfo, error) {
	q, args := w.columnsQuery(w.Table(schema, table))
	rows, err := w.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, exit.Wrap(exit.ConnectionTest, err, "could not read the columns of %s.%s", schema, table)
	}
	return scanColumns(rows)
}

// scanColumns reads (name, type) rows into ColumnInfo values and closes rows.
func scanColumns(rows *sql.Rows) ([]ColumnInfo, error) {
	defer rows.Close()
	var cols []ColumnInfo
	for rows.Next() {
		var c ColumnInfo
		if err := rows.Scan(&c.Name, &c.Type); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

func (w *sqlWarehouse) Begin(ctx context.Context, guard ...Table) (Tx, error) {
	unguard := func() {}
	if len(guard) > 0 {
		var err error
		if unguard, err = holdGuards(ctx, w.guardKeys(guard)); err != nil {
			return nil, err
		}
	}
	conn, err := w.db.Conn(ctx)
	if err != nil {
		unguard()
		return nil, exit.Wrap(exit.ConnectionTest, err, "could not connect to the warehouse %s", w.desc)
	}
	t := &sqlTx{w: w, conn: conn, q: conn, unguard: unguard}
	if w.Capabilities().Transactions {
		if t.tx, err = conn.BeginTx(ctx, nil); err != nil {
			conn.Close()
			unguard()
			return nil, err
		}
		t.q = t.tx
	}
	if w.guard != nil && len(guard) > 0 {
		if err := w.guard(ctx, t, guard); err != nil {
			t.Rollback()
			return nil, fmt.Errorf("waiting for another process writing %s: %w", guard[0].Full(), err)
		}
	}
	return t, nil
}

// openedFile is a database file as a warehouse opened it.
type openedFile struct {
	path string
	info os.FileInfo
}

func (w *sqlWarehouse) Verify() error {
	if w.file == nil {
		return nil
	}
	info, err := os.Stat(w.file.path)
	switch {
	case err != nil:
		return exit.Wrap(exit.ConnectionTest, err,
			"the warehouse file %s is gone: it was removed while it was open, and what was written to it since is lost", w.file.path)
	case !os.SameFile(info, w.file.info):
		return exit.Errorf(exit.ConnectionTest,
			"the warehouse file %s is not the file that was opened: it was replaced while it was open, and what was written to it since is lost", w.file.path)
	}
	return nil
}

func (w *sqlWarehouse) Close() error {
	if w.close != nil {
		return w.close()
	}
	return w.db.Close()
}

// querier is what *sql.Tx and *sql.Conn share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// sqlTx is a transaction pinned to one connection; tx is nil where the
// warehouse has no transactions and each statement commits on its own.
type sqlTx struct {
	w    *sqlWarehouse
	conn *sql.Conn
	tx   *sql.Tx
	q    querier
	done bool
	// after puts the connection's session back once the transaction ends,
	// before the connection serves anything else.
	after []string
	// unguard gives back this process's guards of the transaction's objects.
	unguard func()
}

func (t *sqlTx) Exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx, sp := t.statement(ctx, query)
	res, err := t.q.ExecContext(ctx, query, args...)
	endStatement(sp, err)
	return res, err
}

func (t *sqlTx) Query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx, sp := t.statement(ctx, query)
	rows, err := t.q.QueryContext(ctx, query, args...)
	endStatement(sp, err)
	return rows, err
}

func (t *sqlTx) BulkLoad(ctx context.Context, tbl Table, cols []Column, rows Rows) (n int64, err error) {
	if len(cols) == 0 {
		return 0, errors.New("a bulk load needs at least one column")
	}
	if span.On() {
		var sp span.Span
		ctx, sp = span.Start(ctx, "bulk load "+tbl.Full(), span.String("db.system.name", t.w.Name()),
			span.String("db.collection.name", tbl.Full()))
		defer func() {
			sp.Set(span.Int("etl_craft.rows", n))
			endStatement(sp, err)
		}()
	}
	if t.w.bulk != nil {
		return t.w.bulk(ctx, t, tbl, cols, rows)
	}
	return insertRows(ctx, t.q, t.w, tbl, cols, rows)
}

// statement starts the span of a statement the transaction sends: its text
// cut to span.MaxText, never its bound arguments.
func (t *sqlTx) statement(ctx context.Context, query string) (context.Context, span.Span) {
	if !span.On() {
		return ctx, nil
	}
	return span.Start(ctx, "statement", span.String("db.system.name", t.w.Name()), span.String("db.query.text", span.Text(query)))
}

// endStatement ends a statement's span, if any, failed when err is set (the
// database's message is not kept: it may quote a value).
func endStatement(sp span.Span, err error) {
	if sp == nil {
		return
	}
	if err != nil {
		sp.Fail("the statement failed")
	}
	sp.End()
}

func (t *sqlTx) Commit() error {
	if t.done {
		return sql.ErrTxDone
	}
	t.done = true
	var err error
	if t.tx != nil {
		err = t.tx.Commit()
	}
	t.release()
	return err
}

func (t *sqlTx) Rollback() error {
	if t.done {
		return nil
	}
	t.done = true
	var err error
	if t.tx != nil {
		err = t.tx.Rollback()
	}
	t.release()
	return err
}

// release runs the after statements and gives the connection back to the
// pool; a connection whose session could not be put back is closed instead.
func (t *sqlTx) release() {
	for _, s := range t.after {
		if _, err := t.conn.ExecContext(context.Background(), s); err != nil {
			t.conn.Raw(func(any) error { return driver.ErrBadConn })
			break
		}
	}
	t.conn.Close()
	t.unguard()
}

// insertRows loads rows with multi-row INSERTs of at most MaxBoundValues
// bound values each, reusing one statement text for every full batch.
func insertRows(ctx context.Context, q querier, d Dialect, t Table, cols []Column, rows Rows) (int64, error) {
	per := RowsPerInsert(len(cols))
	full := Insert(d, t, cols, per)
	args := make([]any, 0, per*len(cols))
	var loaded int64
	flush := func() error {
		n := len(args) / len(cols)
		if n == 0 {
			return nil
		}
		stmt := full
		if n < per {
			stmt = Insert(d, t, cols, n)
		}
		if _, err := q.ExecContext(ctx, stmt, args...); err != nil {
			return err
		}
		loaded += int64(n)
		args = args[:0]
		return nil
	}
	for row, err := range rows {
		if err != nil {
			return loaded, err
		}
		if args, err = canonicalRow(args, cols, row); err != nil {
			return loaded, err
		}
		if len(args) == per*len(cols) {
			if err := flush(); err != nil {
				return loaded, err
			}
		}
	}
	return loaded, flush()
}

// pull turns rows into a pull iterator of canonical rows, for loaders whose
// driver asks for one row at a time. stop must be called.
func pull(cols []Column, rows Rows) (next func() ([]any, error), stop func()) {
	it, stop := iter.Pull2(rows)
	buf := make([]any, 0, len(cols))
	return func() ([]any, error) {
		row, err, ok := it()
		if !ok {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		buf, err = canonicalRow(buf[:0], cols, row)
		return buf, err
	}, stop
}
