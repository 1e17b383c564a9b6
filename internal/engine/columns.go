package engine

import (
	"context"
	"database/sql"
	"io"
	"strings"
)

// ColumnType is the portable type of an Engine DB column, as the dialect's
// catalog gives it.
type ColumnType int

// The portable column types. Anything the catalog names otherwise is Text.
const (
	TextColumn ColumnType = iota
	IntegerColumn
	NumberColumn
	TimestampColumn
	DateColumn
	BooleanColumn
)

// Column is a column of an Engine DB table: its name as the catalog spells
// it and its portable type.
type Column struct {
	Name string
	Type ColumnType
}

// Columns returns the columns of a table of the Engine DB's schema, in
// order, typed from the live catalog: SQLite's declared types, PostgreSQL's
// information_schema data types.
func (db *DB) Columns(ctx context.Context, table string) ([]Column, error) {
	return columns(ctx, db, db.d, table)
}

// Columns returns the columns of a table as the transaction sees them.
func (tx *Tx) Columns(ctx context.Context, table string) ([]Column, error) {
	return columns(ctx, tx, tx.d, table)
}

func columns(ctx context.Context, q Querier, d dialect, table string) ([]Column, error) {
	rows, err := q.QueryContext(ctx, d.columnsQuery(), table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var name string
		var declared sql.NullString
		if err := rows.Scan(&name, &declared); err != nil {
			return nil, err
		}
		cols = append(cols, Column{Name: name, Type: d.columnType(declared.String)})
	}
	return cols, rows.Err()
}

// ReadQuery returns the query that reads the columns of a table of the
// Engine DB's schema for a copy elsewhere, each column in the form that
// copies exactly: on SQLite timestamps and dates as their stored text (the
// driver would parse them itself, slowly, and give a zero time for text it
// cannot parse), on PostgreSQL text and numbers as their text (so JSON keeps
// its text and numerics their exact digits).
func (db *DB) ReadQuery(table string, cols []Column) string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		q := quoteIdent(c.Name)
		if db.d.readsAsText(c.Type) {
			q = "CAST(" + q + " AS TEXT)"
		}
		b.WriteString(q)
	}
	b.WriteString(" FROM ")
	b.WriteString(db.d.from(table))
	return b.String()
}

// CopyOut writes the rows of query to w in PostgreSQL's COPY text format,
// with UTF-8 text, timestamps in UTC and dates in ISO form, from a read-only
// transaction of its own. Only a dialect with Capabilities().CopyOut
// (PostgreSQL) has it; the others return an error.
func (db *DB) CopyOut(ctx context.Context, query string, w io.Writer) error {
	return db.d.copyOut(ctx, db, query, w)
}

// CopyOutStatement returns the COPY that CopyOut runs for query.
func CopyOutStatement(query string) string {
	return "COPY (" + query + ") TO STDOUT (FORMAT text, ENCODING 'UTF8')"
}

// RowReader reads the rows of one query, one at a time, each value as the
// dialect reads it most cheaply: integers as int64, booleans, text as
// strings, and, on PostgreSQL, timestamps and dates as UTC time values.
type RowReader interface {
	// Next reads the next row into row, which holds one value per column,
	// and reports whether there was one; at the end, the read's error.
	Next(row []any) (bool, error)
	// Close ends the read; it may be called again, and then does nothing.
	Close()
}

// ReadRows runs the query q on conn, in the transaction conn holds, for a
// reader of many rows (a clone's copy): natively through pgx on
// PostgreSQL, through database/sql on SQLite. The connection is the
// reader's until it is closed.
func (db *DB) ReadRows(ctx context.Context, conn *sql.Conn, q string, args ...any) (RowReader, error) {
	return db.d.readRows(ctx, conn, q, args...)
}

// sqlRows reads a database/sql result set: each value as the driver gives it.
type sqlRows struct {
	rs   *sql.Rows
	dest []any
	raw  []any
}

func (r *sqlRows) Next(row []any) (bool, error) {
	if !r.rs.Next() {
		return false, r.rs.Err()
	}
	if r.dest == nil {
		r.raw = make([]any, len(row))
		r.dest = make([]any, len(row))
		for i := range r.raw {
			r.dest[i] = &r.raw[i]
		}
	}
	if err := r.rs.Scan(r.dest...); err != nil {
		return false, err
	}
	copy(row, r.raw)
	return true, nil
}

func (r *sqlRows) Close() { r.rs.Close() }

func (sqliteDialect) readRows(ctx context.Context, conn *sql.Conn, q string, args ...any) (RowReader, error) {
	rs, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return &sqlRows{rs: rs}, nil
}
