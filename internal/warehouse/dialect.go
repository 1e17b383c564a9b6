package warehouse

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Kind names a warehouse product, as the Warehouse section's Name does.
type Kind string

// The warehouse products etl-craft writes to.
const (
	DuckDB     Kind = "duckdb"
	Postgres   Kind = "postgres"
	Trino      Kind = "trino"
	Databricks Kind = "databricks"
	Snowflake  Kind = "snowflake"
)

// TableFormat is how a warehouse stores the tables etl-craft creates.
type TableFormat string

// The table formats. The zero value means Native.
const (
	Native  TableFormat = "native"
	Iceberg TableFormat = "iceberg"
)

// Type is a portable column type; each dialect names it in its own SQL.
type Type int

// The portable column types of mirrors and engine-added columns.
const (
	Boolean   Type = iota + 1 // BOOLEAN
	BigInt                    // BIGINT
	Decimal                   // DECIMAL(38, 10)
	Date                      // DATE
	Timestamp                 // the dialect's timestamp with time zone, always UTC
	String                    // the dialect's text type
)

// Types lists every portable type, in declaration order.
var Types = []Type{Boolean, BigInt, Decimal, Date, Timestamp, String}

// DecimalScale is the scale of the Decimal type: DECIMAL(38, 10).
const DecimalScale = 10

// String returns the type's portable name, such as BIGINT or TIMESTAMP.
func (t Type) String() string {
	switch t {
	case Boolean:
		return "BOOLEAN"
	case BigInt:
		return "BIGINT"
	case Decimal:
		return "DECIMAL"
	case Date:
		return "DATE"
	case Timestamp:
		return "TIMESTAMP"
	case String:
		return "STRING"
	}
	return "TYPE_" + strconv.Itoa(int(t))
}

// Column is a column of a table etl-craft writes: its name, exactly as it is
// to be quoted, and its portable type.
type Column struct {
	Name string
	Type Type
}

// Table names a table by catalog, schema and table name, each unquoted.
type Table struct {
	Catalog string
	Schema  string
	Name    string
}

// Full returns the unquoted catalog.schema.table form, as reports and
// storage paths show it.
func (t Table) Full() string { return t.Catalog + "." + t.Schema + "." + t.Name }

// Folding is how a warehouse stores an unquoted identifier.
type Folding int

// The identifier foldings.
const (
	FoldNone  Folding = iota // kept as written (DuckDB compares without case)
	FoldLower                // PostgreSQL, Trino, Databricks
	FoldUpper                // Snowflake
)

// ReplaceStrategy is how a warehouse replaces a table's rows safely.
type ReplaceStrategy string

// The replace strategies.
const (
	// Transactional replaces inside one transaction that rolls back on failure.
	Transactional ReplaceStrategy = "transactional"
	// CreateOrReplace uses one atomic CREATE OR REPLACE … AS SELECT or INSERT OVERWRITE.
	CreateOrReplace ReplaceStrategy = "create_or_replace"
	// CopyAndRestore keeps a recovery copy and restores it when the write fails.
	CopyAndRestore ReplaceStrategy = "copy_and_restore"
)

// RowIDStrategy is how a warehouse generates the ROW_ID surrogate key.
type RowIDStrategy string

// The ROW_ID strategies.
const (
	// Identity is a GENERATED … AS IDENTITY column.
	Identity RowIDStrategy = "identity"
	// Sequence is a column defaulting to a sequence's next value.
	Sequence RowIDStrategy = "sequence"
	// Computed is MAX(ROW_ID) + ROW_NUMBER() under the target mutation lock.
	Computed RowIDStrategy = "computed"
)

// Capabilities are what a dialect can and cannot do; domain code branches on
// these flags, never on a dialect's name.
type Capabilities struct {
	Replace      ReplaceStrategy
	RowID        RowIDStrategy
	Transactions bool // statements run in a transaction that can roll back
	TempTables   bool // CREATE TEMPORARY TABLE exists (stages are ordinary tables otherwise)
	PKEnforced   bool // PRIMARY KEY and UNIQUE constraints are enforced
	SingleWriter bool // one writing process at a time (the Engine-DB warehouse lock)
	CatalogCheck bool // the catalog must be checked to hold etl-craft's tables (CheckTrinoCatalog)
	// MergeUpdate: an UPDATE or DELETE joined to another table is written as
	// MERGE INTO … USING (there is no UPDATE … FROM, or no alias on its target).
	MergeUpdate bool
	// DDLCommits: a DDL statement commits the open transaction, so the
	// statements changing rows run in a transaction begun after the last DDL.
	DDLCommits bool
	// RowHash: hash() of a row's values exists, so a table's rows sum into
	// a fingerprint in one columnar pass (DuckDB).
	RowHash bool
	// WriteGuard: statement-level PL/pgSQL triggers can count every write
	// made to a table (PostgreSQL).
	WriteGuard bool
}

// Dialect is the SQL one warehouse speaks. It connects to nothing: the clone
// pre-flight and golden tests use it as it is, and every Warehouse has one.
type Dialect interface {
	// Name is the dialect's name, such as postgres or snowflake_iceberg.
	Name() string
	// Quote returns ident as a quoted identifier, quotes inside doubled.
	Quote(ident string) string
	// Fold returns ident as the warehouse stores it unquoted.
	Fold(ident string) string
	// TypeName returns the SQL name of a portable type.
	TypeName(t Type) string
	// Capabilities returns the dialect's flags.
	Capabilities() Capabilities
	// Placeholder returns the n-th (from 1) bound-value marker of a
	// statement, for a value of type t.
	Placeholder(n int, t Type) string
	// CreateTable returns the statement creating a table with these columns.
	CreateTable(t Table, cols []Column) string
	// AddColumn returns the statement adding a nullable column to a table.
	AddColumn(t Table, c Column) string
	// Truncate returns the statement removing every row of a table.
	Truncate(t Table) string

	// schemaQuery returns the query counting schemas named schema (any
	// case) in the catalog.
	schemaQuery(catalog, schema string) (string, []any)
	// columnsQuery returns the query listing a table's column names and
	// types, matched without case, in ordinal order.
	columnsQuery(t Table) (string, []any)
}

// MaxBoundValues is the most values one multi-row INSERT binds: far below
// every driver's parameter limit, and still many rows to a statement.
const MaxBoundValues = 250

// RowsPerInsert returns how many rows of ncols columns one INSERT carries:
// MaxBoundValues ÷ ncols, at least one.
func RowsPerInsert(ncols int) int {
	if ncols <= 0 || ncols >= MaxBoundValues {
		return 1
	}
	return MaxBoundValues / ncols
}

// Qualify returns the quoted catalog.schema.table name of t; an empty
// catalog is left out. The catalog and schema come from the configuration as
// plain identifiers, so they are folded the way the warehouse folds unquoted
// names; the table name is quoted exactly as given.
func Qualify(d Dialect, t Table) string {
	name := quoteFolded(d, t.Schema) + "." + d.Quote(t.Name)
	if t.Catalog != "" {
		name = quoteFolded(d, t.Catalog) + "." + name
	}
	return name
}

// quoteFolded quotes a configured plain identifier after folding it.
func quoteFolded(d Dialect, ident string) string { return d.Quote(d.Fold(ident)) }

// Insert returns a multi-row INSERT of rows rows into cols of t, with the
// dialect's placeholders numbered row by row.
func Insert(d Dialect, t Table, cols []Column, rows int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(Qualify(d, t))
	writeColumns(&b, d, cols, false)
	b.WriteString(" VALUES ")
	n := 0
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			n++
			b.WriteString(d.Placeholder(n, c.Type))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// NewDialect returns the dialect of a warehouse product in a table format.
// Storage settings are checked here, before anything connects: see Storage.
func NewDialect(kind Kind, format TableFormat, storage Storage) (Dialect, error) {
	if format == "" {
		format = Native
	}
	if format != Native && format != Iceberg {
		return nil, exit.Errorf(exit.Configuration, "table format %q is not native or iceberg", string(format))
	}
	if err := storage.check(); err != nil {
		return nil, err
	}
	iceberg := format == Iceberg
	switch kind {
	case DuckDB:
		if iceberg {
			return nil, exit.Errorf(exit.Configuration,
				"DuckDB over an Iceberg REST catalog is not supported by this etl-craft build: use Table_format: native, or Trino, Databricks or Snowflake for Iceberg tables")
		}
		return duckdbDialect{}, nil
	case Postgres:
		if iceberg {
			return nil, exit.Errorf(exit.Configuration,
				"PostgreSQL has no Iceberg table format: use Table_format: native")
		}
		return postgresDialect{}, nil
	case Trino:
		return trinoDialect{}, nil
	case Databricks:
		return databricksDialect{iceberg: iceberg, baseLocation: storage.BaseLocation}, nil
	case Snowflake:
		if iceberg {
			if storage.ExternalVolume == "" || storage.BaseLocation == "" {
				return nil, exit.Errorf(exit.Configuration,
					"Snowflake Iceberg mirrors need both Cloning.External_volume and Cloning.Base_location")
			}
			return snowflakeDialect{iceberg: true, externalVolume: storage.ExternalVolume, baseLocation: storage.BaseLocation}, nil
		}
		return snowflakeDialect{}, nil
	}
	return nil, exit.Errorf(exit.Configuration,
		"%q is not a warehouse etl-craft supports (duckdb, postgres, trino, databricks, snowflake)", string(kind))
}

// Storage is where cloud warehouses put the tables etl-craft creates: the
// Cloning section's External_volume and Base_location. Neither may contain a
// single quote, because each is written into the DDL as a string literal.
type Storage struct {
	ExternalVolume string // Snowflake Iceberg external volume
	BaseLocation   string // Snowflake Iceberg base location; Databricks external table root
}

func (s Storage) check() error {
	for _, f := range []struct{ key, value string }{
		{"External_volume", s.ExternalVolume}, {"Base_location", s.BaseLocation},
	} {
		if strings.Contains(f.value, "'") {
			return exit.Errorf(exit.Configuration,
				"Cloning.%s %q must not contain a quote: remove the ' from it", f.key, f.value)
		}
	}
	return nil
}

// quoteWith quotes ident between q characters, doubling any q inside.
func quoteWith(q byte, ident string) string {
	s := string(q)
	return s + strings.ReplaceAll(ident, s, s+s) + s
}

// fold applies a folding to ident.
func fold(f Folding, ident string) string {
	switch f {
	case FoldLower:
		return strings.ToLower(ident)
	case FoldUpper:
		return strings.ToUpper(ident)
	}
	return ident
}

// typeName names a portable type with the dialect's timestamp and string
// types; BOOLEAN, BIGINT and DATE are standard SQL everywhere.
func typeName(t Type, timestamp, text string) string {
	switch t {
	case Boolean, BigInt, Date:
		return t.String()
	case Decimal:
		return fmt.Sprintf("DECIMAL(38, %d)", DecimalScale)
	case Timestamp:
		return timestamp
	case String:
		return text
	}
	panic(fmt.Sprintf("warehouse: unknown column type %d", int(t)))
}

// createTable returns CREATE <kind> <table> (<columns>), the part every
// dialect shares.
func createTable(d Dialect, keyword string, t Table, cols []Column) string {
	var b strings.Builder
	b.WriteString("CREATE ")
	b.WriteString(keyword)
	b.WriteByte(' ')
	b.WriteString(Qualify(d, t))
	writeColumns(&b, d, cols, true)
	return b.String()
}

// writeColumns writes " (<quoted names>)", each name followed by its type
// when typed is true.
func writeColumns(b *strings.Builder, d Dialect, cols []Column, typed bool) {
	b.WriteString(" (")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Quote(c.Name))
		if typed {
			b.WriteByte(' ')
			b.WriteString(d.TypeName(c.Type))
		}
	}
	b.WriteByte(')')
}

// addColumn returns ALTER <kind> <table> ADD COLUMN <column> <type>.
func addColumn(d Dialect, keyword string, t Table, c Column) string {
	return "ALTER " + keyword + " " + Qualify(d, t) + " ADD COLUMN " + d.Quote(c.Name) + " " + d.TypeName(c.Type)
}

// castPlaceholder wraps a marker in a CAST to the dialect's type, for
// warehouses that do not coerce a bound value to the column's type.
func castPlaceholder(d Dialect, marker string, t Type) string {
	return "CAST(" + marker + " AS " + d.TypeName(t) + ")"
}

// infoSchemaSchemaQuery counts the schemas named schema (any case) in a
// catalog's own information_schema.
func infoSchemaSchemaQuery(d Dialect, catalog, schema string) (string, []any) {
	q := "SELECT COUNT(*) FROM " + quoteFolded(d, catalog) + ".information_schema.schemata" +
		" WHERE LOWER(schema_name) = LOWER(" + d.Placeholder(1, String) + ")"
	return q, []any{schema}
}

// infoSchemaColumnsQuery lists a table's columns from its catalog's own
// information_schema, matching names without case.
func infoSchemaColumnsQuery(d Dialect, t Table) (string, []any) {
	q := "SELECT column_name, data_type FROM " + quoteFolded(d, t.Catalog) + ".information_schema.columns" +
		" WHERE LOWER(table_schema) = LOWER(" + d.Placeholder(1, String) + ")" +
		" AND LOWER(table_name) = LOWER(" + d.Placeholder(2, String) + ")" +
		" ORDER BY ordinal_position"
	return q, []any{t.Schema, t.Name}
}
