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
