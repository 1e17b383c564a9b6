package warehouse

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// This file holds what the SQL task actions need from a dialect beyond
// Dialect: the full declared type of each column of a table, the canonical
// text of the change hash per type, the DDL of the generated ROW_ID key and
// the few SQL forms that differ between warehouses. Every dialect has it;
// the cloud dialects' parts are in snowflake_actions.go,
// databricks_actions.go and trino_actions.go.

// Actions is a dialect the SQL task actions can write with.
type Actions interface {
	Dialect
	// DescribeTable returns the columns of the base table t (not a view)
	// with their full declared types, such as numeric(12,4) or
	// DECIMAL(12,4), in column order, as the transaction sees them; none
	// means no such table. The table name is matched as given, the schema
	// after folding.
	DescribeTable(ctx context.Context, tx Tx, t Table) ([]ColumnInfo, error)
	// CanonicalText returns the SQL expression giving the change-hash text
	// of the non-NULL value of expr, whose declared type is typ: booleans
	// true/false, dates YYYY-MM-DD, timestamps in UTC as
	// YYYY-MM-DDTHH:MM:SS.ffffff, decimals at their declared scale, integers,
	// text and UUIDs as text. Other types are refused with the reason.
	CanonicalText(expr, typ string) (string, error)
	// RowIDColumn returns the statements to run before creating table t and
	// the definition of its generated ROW_ID column named column.
	RowIDColumn(t Table, column string) (before []string, definition string)
	// DropRowID returns the statements removing what RowIDColumn created
	// beside table t, run after t is dropped.
	DropRowID(t Table) []string
	// MD5 returns the expression of the 32 lower-case hex digits of the MD5
	// of text's UTF-8 bytes.
	MD5(text string) string
	// CurrentUser returns the expression of the warehouse login.
	CurrentUser() string
	// CurrentTimestamp returns the expression of the statement's start, to
	// the microsecond where the warehouse would round it coarser.
	CurrentTimestamp() string
	// RowNumber returns a window expression numbering a query's rows from 1
	// in no particular order.
	RowNumber() string
	// TargetKeyword is the object keyword of the tables SQL tasks create
	// in CREATE, ALTER and DROP: TABLE, or ICEBERG TABLE.
	TargetKeyword() string
	// TargetOptions returns the clause following a created target's name
	// (and column list), from the task's storage parameters (by name, set
	// only when given); "" when there is none.
	TargetOptions(t Table, storage map[string]string) string
	// StorageParameters are the task storage parameters the created tables
	// take (EXTERNAL_LOCATION, EXTERNAL_VOLUME, BASE_LOCATION, CATALOG).
	StorageParameters() []string
	// TableFormats are the TABLE_FORMAT values a task may name: the table
	// format this warehouse creates (both, where they mean the same).
	TableFormats() []TableFormat
	// TablesQuery returns the query listing the names of the tables of
	// schema (any case) in the catalog whose lower-case name starts with
	// the lower-case prefix, LIKE-matched (callers check the prefix again:
	// _ matches any character).
	TablesQuery(catalog, schema, prefix string) (string, []any)
}

// The task storage parameters, as Actions.StorageParameters names them.
const (
	ExternalLocation = "EXTERNAL_LOCATION"
	ExternalVolume   = "EXTERNAL_VOLUME"
	BaseLocation     = "BASE_LOCATION"
	CatalogParameter = "CATALOG"
)

// ActionsOf returns the SQL task actions of a warehouse or dialect; a
// warehouse without them is refused as a handler error (exit 15).
func ActionsOf(d Dialect) (Actions, error) {
	if w, ok := d.(*sqlWarehouse); ok {
		d = w.Dialect
	}
	if a, ok := d.(Actions); ok {
		return a, nil
	}
	return nil, exit.Errorf(exit.Handler, "SQL tasks cannot write to a %s warehouse in this version of etl-craft", d.Name())
}

// HashColumn is one input of the change hash: an SQL expression, the
// declared type of its value, and the column name errors report.
type HashColumn struct {
	Name string
	Expr string
	Type string
}

// ChangeHash returns the SQL expression of change hash version 2 over cols,
// in order: the 32-digit MD5 of the concatenated encodings of each value, N
// for NULL and otherwise V<length in characters>:<canonical text>. The same
// values give the same hash on every warehouse and in every session time
// zone. A column whose type has no canonical text is refused, naming it.
func ChangeHash(a Actions, cols []HashColumn) (string, error) {
	if len(cols) == 0 {
		return a.MD5("''"), nil
	}
	parts := make([]string, len(cols))
	for i, c := range cols {
		text, err := a.CanonicalText(c.Expr, c.Type)
		if err != nil {
			return "", fmt.Errorf("column %s (%s): %w", c.Name, c.Type, err)
		}
		parts[i] = "CASE WHEN " + c.Expr + " IS NULL THEN 'N' ELSE 'V' || CAST(LENGTH(" + text + ") AS " + a.TypeName(String) + ") || ':' || " + text + " END"
	}
	return a.MD5(strings.Join(parts, " || ")), nil
}

// The reasons a compare column's type is refused.
var (
	errFloat    = errors.New("floats have no stable text form; cast to DECIMAL with a scale")
	errUnscaled = errors.New("a decimal without a declared scale has no stable text form; cast to DECIMAL(p, s)")
	errComplex  = errors.New("only text, integer, decimal, boolean, date, timestamp and UUID columns can be compared; cast it to VARCHAR")
)

// hashCategory is how a declared type is written as canonical text.
type hashCategory int

const (
	hashRefused   hashCategory = iota
	hashText                   // integers, scaled decimals, text, UUIDs: CAST AS VARCHAR
	hashBoolean                // true / false
	hashDate                   // YYYY-MM-DD
	hashTimestamp              // wall clock as stored
	hashZoned                  // converted to UTC first
)

// temporalText is how a dialect writes the canonical text of a date, a
// timestamp as stored, and a zoned timestamp converted to UTC.
type temporalText struct{ date, timestamp, zoned func(expr string) string }

// canonicalText returns the SQL of expr's canonical text for its hash
// category c, or err (why its type is refused) when it has none.
func canonicalText(c hashCategory, err error, expr string, t temporalText) (string, error) {
	switch c {
	case hashText:
		return castText(expr), nil
	case hashBoolean:
		return booleanText(expr), nil
	case hashDate:
		return t.date(expr), nil
	case hashTimestamp:
		return t.timestamp(expr), nil
	case hashZoned:
		return t.zoned(expr), nil
	}
	return "", err
}

// castText is the canonical text of types whose VARCHAR cast already is.
func castText(expr string) string { return "CAST(" + expr + " AS VARCHAR)" }

// booleanText is the canonical text of a boolean.
func booleanText(expr string) string {
	return "CASE WHEN " + expr + " THEN 'true' ELSE 'false' END"
}

// scaledDecimal matches a decimal type with its declared precision and scale.
var scaledDecimal = regexp.MustCompile(`^(numeric|decimal)\(\d+,\s*\d+\)$`)

// postgresHashCategory classifies a PostgreSQL format_type() name.
func postgresHashCategory(typ string) (hashCategory, error) {
	t := strings.ToLower(strings.TrimSpace(typ))
	switch {
	case t == "smallint", t == "integer", t == "bigint", t == "text", t == "uuid", t == "name", t == "citext",
		strings.HasPrefix(t, "character"), scaledDecimal.MatchString(t):
		return hashText, nil
	case t == "numeric":
		return hashRefused, errUnscaled
	case t == "real", t == "double precision":
		return hashRefused, errFloat
	case t == "boolean":
		return hashBoolean, nil
	case t == "date":
		return hashDate, nil
	case strings.HasPrefix(t, "timestamp") && strings.HasSuffix(t, "without time zone"):
		return hashTimestamp, nil
	case strings.HasPrefix(t, "timestamp") && strings.HasSuffix(t, "with time zone"):
		return hashZoned, nil
	}
	return hashRefused, errComplex
}

// postgresTimestamp is the to_char pattern of a canonical timestamp.
const postgresTimestamp = `'YYYY-MM-DD"T"HH24:MI:SS.US'`

// postgresTemporal writes dates and timestamps as canonical text.
var postgresTemporal = temporalText{
	date:      func(expr string) string { return "to_char(" + expr + ", 'YYYY-MM-DD')" },
	timestamp: func(expr string) string { return "to_char(" + expr + ", " + postgresTimestamp + ")" },
	zoned:     func(expr string) string { return "to_char(" + expr + " AT TIME ZONE 'UTC', " + postgresTimestamp + ")" },
}

func (postgresDialect) CanonicalText(expr, typ string) (string, error) {
	c, err := postgresHashCategory(typ)
	return canonicalText(c, err, expr, postgresTemporal)
}

// DescribeTable reads pg_catalog. The table's own connection is to one
// database: the catalog is left out and the schema and name are matched
// exactly, as PostgreSQL stores them.
func (d postgresDialect) DescribeTable(ctx context.Context, tx Tx, t Table) ([]ColumnInfo, error) {
	rows, err := tx.Query(ctx, `SELECT a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`, d.Fold(t.Schema), t.Name)
	if err != nil {
		return nil, err
	}
	return scanColumns(rows)
}

// RowIDColumn makes ROW_ID an identity column.
func (d postgresDialect) RowIDColumn(_ Table, column string) ([]string, string) {
	return nil, d.Quote(column) + " BIGINT GENERATED BY DEFAULT AS IDENTITY"
}

// DropRowID has nothing to drop: the identity goes with its table.
func (postgresDialect) DropRowID(Table) []string { return nil }

// The forms PostgreSQL and DuckDB share: standard SQL.
func (postgresDialect) MD5(text string) string                        { return "MD5(" + text + ")" }
func (postgresDialect) CurrentTimestamp() string                      { return "CURRENT_TIMESTAMP" }
func (postgresDialect) CurrentUser() string                           { return "current_user" }
func (postgresDialect) RowNumber() string                             { return "row_number() OVER ()" }
func (postgresDialect) TargetKeyword() string                         { return "TABLE" }
func (postgresDialect) TargetOptions(Table, map[string]string) string { return "" }
func (postgresDialect) StorageParameters() []string                   { return nil }
func (postgresDialect) TableFormats() []TableFormat                   { return []TableFormat{Native} }
func (d postgresDialect) TablesQuery(_, schema, prefix string) (string, []any) {
	return "SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace" +
		" WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND LOWER(c.relname) LIKE $2", []any{d.Fold(schema), strings.ToLower(prefix) + "%"}
}

// duckdbIntegers are DuckDB's integer type names.
var duckdbIntegers = map[string]bool{
	"TINYINT": true, "SMALLINT": true, "INTEGER": true, "BIGINT": true, "HUGEINT": true,
	"UTINYINT": true, "USMALLINT": true, "UINTEGER": true, "UBIGINT": true, "UHUGEINT": true,
}

// duckdbHashCategory classifies a DuckDB information_schema data_type.
func duckdbHashCategory(typ string) (hashCategory, error) {
	t := strings.ToUpper(strings.TrimSpace(typ))
	switch {
	case duckdbIntegers[t], t == "VARCHAR", t == "UUID", scaledDecimal.MatchString(strings.ToLower(t)):
		return hashText, nil
	case t == "FLOAT", t == "DOUBLE", t == "REAL":
		return hashRefused, errFloat
	case t == "BOOLEAN":
		return hashBoolean, nil
	case t == "DATE":
		return hashDate, nil
	case t == "TIMESTAMP", t == "TIMESTAMP_S", t == "TIMESTAMP_MS", t == "TIMESTAMP_NS":
		return hashTimestamp, nil
	case t == "TIMESTAMP WITH TIME ZONE":
		return hashZoned, nil
	}
	return hashRefused, errComplex
}

// duckdbTimestamp is the strftime pattern of a canonical timestamp.
const duckdbTimestamp = `'%Y-%m-%dT%H:%M:%S.%f'`

// duckdbTemporal writes dates and timestamps as canonical text.
var duckdbTemporal = temporalText{
	date:      func(expr string) string { return "strftime(" + expr + ", '%Y-%m-%d')" },
	timestamp: func(expr string) string { return "strftime(CAST(" + expr + " AS TIMESTAMP), " + duckdbTimestamp + ")" },
	zoned:     func(expr string) string { return "strftime(timezone('UTC', " + expr + "), " + duckdbTimestamp + ")" },
}

func (duckdbDialect) CanonicalText(expr, typ string) (string, error) {
	c, err := duckdbHashCategory(typ)
	return canonicalText(c, err, expr, duckdbTemporal)
}

// DescribeTable reads the table's own catalog entry with pragma_table_info,
// which costs the same however many tables the file holds (the
// information_schema views list every column of every table before
// filtering, tens of milliseconds once a file holds a thousand tables). A
// name the catalog does not know is a catalog error, which leaves the
// transaction usable: no such table. Views are left out by name; DuckDB
// compares names without case.
func (d duckdbDialect) DescribeTable(ctx context.Context, tx Tx, t Table) ([]ColumnInfo, error) {
	rows, err := tx.Query(ctx, `SELECT name, type FROM pragma_table_info(?)
WHERE NOT EXISTS (SELECT 1 FROM duckdb_views() v WHERE NOT v.internal
  AND LOWER(v.database_name) = LOWER(?) AND LOWER(v.schema_name) = LOWER(?) AND LOWER(v.view_name) = LOWER(?))
ORDER BY cid`, Qualify(d, t), t.Catalog, t.Schema, t.Name)
	var unknown *duckdb.Error
	if errors.As(err, &unknown) && unknown.Type == duckdb.ErrorTypeCatalog {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return scanColumns(rows)
}

// rowIDSequence is the sequence numbering a DuckDB table's ROW_ID.
func rowIDSequence(d Dialect, t Table) string {
	return Qualify(d, Table{Catalog: t.Catalog, Schema: t.Schema, Name: t.Name + "_row_id_seq"})
}

// RowIDColumn numbers ROW_ID from a sequence of the table's own, made
// afresh: a leftover of a table dropped outside etl-craft is replaced.
func (d duckdbDialect) RowIDColumn(t Table, column string) ([]string, string) {
	seq := rowIDSequence(d, t)
	literal := "'" + strings.ReplaceAll(seq, "'", "''") + "'"
	return []string{"DROP SEQUENCE IF EXISTS " + seq, "CREATE SEQUENCE " + seq},
		d.Quote(column) + " BIGINT DEFAULT nextval(" + literal + ")"
}

// DropRowID drops the table's ROW_ID sequence.
func (d duckdbDialect) DropRowID(t Table) []string {
	return []string{"DROP SEQUENCE IF EXISTS " + rowIDSequence(d, t)}
}

func (duckdbDialect) MD5(text string) string                        { return "MD5(" + text + ")" }
func (duckdbDialect) CurrentTimestamp() string                      { return "CURRENT_TIMESTAMP" }
func (duckdbDialect) CurrentUser() string                           { return "current_user" }
func (duckdbDialect) RowNumber() string                             { return "row_number() OVER ()" }
func (duckdbDialect) TargetKeyword() string                         { return "TABLE" }
func (duckdbDialect) TargetOptions(Table, map[string]string) string { return "" }
func (duckdbDialect) StorageParameters() []string                   { return nil }
func (duckdbDialect) TableFormats() []TableFormat                   { return []TableFormat{Native} }
func (d duckdbDialect) TablesQuery(catalog, schema, prefix string) (string, []any) {
	return "SELECT table_name FROM information_schema.tables WHERE LOWER(table_catalog) = LOWER(?)" +
			" AND LOWER(table_schema) = LOWER(?) AND table_type = 'BASE TABLE' AND LOWER(table_name) LIKE ?",
		[]any{catalog, schema, strings.ToLower(prefix) + "%"}
}
