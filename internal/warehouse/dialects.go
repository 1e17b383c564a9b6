package warehouse

import (
	"strconv"
	"strings"
)

// The SQL of each warehouse. Every dialect is a small value type; the shared
// statement builders in dialect.go call back into it for quoting, types and
// placeholders.

// timestampTZ is the standard SQL timestamp with time zone.
const timestampTZ = "TIMESTAMP WITH TIME ZONE"

// postgresDialect is PostgreSQL: lower-case folding, $N placeholders,
// transactional replaces and identity ROW_IDs.
type postgresDialect struct{}

func (postgresDialect) Name() string                     { return "postgres" }
func (postgresDialect) Quote(ident string) string        { return quoteWith('"', ident) }
func (postgresDialect) Fold(ident string) string         { return fold(FoldLower, ident) }
func (postgresDialect) TypeName(t Type) string           { return typeName(t, timestampTZ, "VARCHAR") }
func (postgresDialect) Placeholder(n int, _ Type) string { return "$" + strconv.Itoa(n) }
func (postgresDialect) Capabilities() Capabilities {
	return Capabilities{Replace: Transactional, RowID: Identity, Transactions: true, TempTables: true, PKEnforced: true, WriteGuard: true}
}
func (d postgresDialect) CreateTable(t Table, cols []Column) string {
	return createTable(d, "TABLE", t, cols)
}
func (d postgresDialect) AddColumn(t Table, c Column) string { return addColumn(d, "TABLE", t, c) }
func (d postgresDialect) Truncate(t Table) string            { return "TRUNCATE TABLE " + Qualify(d, t) }

// The connection is to one database, which is the catalog: the schema is
// looked up in pg_namespace (information_schema.schemata hides schemas the
// user does not own) by its folded name, the one the SQL uses, the columns in
// the database's information_schema.
func (d postgresDialect) schemaQuery(_, schema string) (string, []any) {
	return "SELECT COUNT(*) FROM pg_catalog.pg_namespace WHERE nspname = $1", []any{d.Fold(schema)}
}
func (postgresDialect) columnsQuery(t Table) (string, []any) {
	return "SELECT column_name, data_type FROM information_schema.columns" +
		" WHERE LOWER(table_schema) = LOWER($1) AND LOWER(table_name) = LOWER($2)" +
		" ORDER BY ordinal_position", []any{t.Schema, t.Name}
}

// duckdbDialect is a DuckDB file: names compared without case, a single
// writing process, transactional replaces and sequence ROW_IDs.
type duckdbDialect struct{}

func (duckdbDialect) Name() string                 { return "duckdb" }
func (duckdbDialect) Quote(ident string) string    { return quoteWith('"', ident) }
func (duckdbDialect) Fold(ident string) string     { return fold(FoldNone, ident) }
func (duckdbDialect) TypeName(t Type) string       { return typeName(t, timestampTZ, "VARCHAR") }
func (duckdbDialect) Placeholder(int, Type) string { return "?" }
func (duckdbDialect) Capabilities() Capabilities {
	return Capabilities{Replace: Transactional, RowID: Sequence, Transactions: true, TempTables: true, PKEnforced: true, SingleWriter: true, RowHash: true}
}
func (d duckdbDialect) CreateTable(t Table, cols []Column) string {
	return createTable(d, "TABLE", t, cols)
}
func (d duckdbDialect) AddColumn(t Table, c Column) string { return addColumn(d, "TABLE", t, c) }
func (d duckdbDialect) Truncate(t Table) string            { return "TRUNCATE TABLE " + Qualify(d, t) }
func (duckdbDialect) schemaQuery(catalog, schema string) (string, []any) {
	return "SELECT COUNT(*) FROM information_schema.schemata" +
		" WHERE LOWER(catalog_name) = LOWER(?) AND LOWER(schema_name) = LOWER(?)", []any{catalog, schema}
}
func (duckdbDialect) columnsQuery(t Table) (string, []any) {
	return "SELECT column_name, data_type FROM information_schema.columns" +
		" WHERE LOWER(table_catalog) = LOWER(?) AND LOWER(table_schema) = LOWER(?) AND LOWER(table_name) = LOWER(?)" +
		" ORDER BY ordinal_position", []any{t.Catalog, t.Schema, t.Name}
}

// trinoTimestampTZ is the zoned timestamp Trino's Iceberg connector
// stores: microseconds (a bare TIMESTAMP WITH TIME ZONE has milliseconds,
// which the connector refuses).
const trinoTimestampTZ = "TIMESTAMP(6) WITH TIME ZONE"

// trinoDialect is Trino writing Iceberg tables, whatever the table format:
// the catalog decides. It has no transactions and no temporary tables, and
// it does not coerce bound values, so every placeholder is cast.
type trinoDialect struct{}

func (trinoDialect) Name() string                       { return "trino_iceberg" }
func (trinoDialect) Quote(ident string) string          { return quoteWith('"', ident) }
func (trinoDialect) Fold(ident string) string           { return fold(FoldLower, ident) }
func (trinoDialect) TypeName(t Type) string             { return typeName(t, trinoTimestampTZ, "VARCHAR") }
func (d trinoDialect) Placeholder(_ int, t Type) string { return castPlaceholder(d, "?", t) }
func (trinoDialect) Capabilities() Capabilities {
	return Capabilities{Replace: CopyAndRestore, RowID: Computed, CatalogCheck: true, MergeUpdate: true}
}
func (d trinoDialect) CreateTable(t Table, cols []Column) string {
	return createTable(d, "TABLE", t, cols)
}
func (d trinoDialect) AddColumn(t Table, c Column) string { return addColumn(d, "TABLE", t, c) }
func (d trinoDialect) Truncate(t Table) string            { return "TRUNCATE TABLE " + Qualify(d, t) }
func (d trinoDialect) schemaQuery(catalog, schema string) (string, []any) {
	return infoSchemaSchemaQuery(d, catalog, schema)
}
func (d trinoDialect) columnsQuery(t Table) (string, []any) { return infoSchemaColumnsQuery(d, t) }

// databricksDialect is Databricks SQL: Delta tables, or Delta with UniForm
// so Iceberg readers see them. Backtick quoting, STRING text, TIMESTAMP
// (always UTC), named :pN markers in the Statement Execution API.
type databricksDialect struct {
	iceberg      bool
	baseLocation string // external table root; empty means managed tables
}

func (d databricksDialect) Name() string {
	if d.iceberg {
		return "databricks_iceberg"
	}
	return "databricks"
}
func (databricksDialect) Quote(ident string) string { return quoteWith('`', ident) }
func (databricksDialect) Fold(ident string) string  { return fold(FoldLower, ident) }
func (databricksDialect) TypeName(t Type) string    { return typeName(t, "TIMESTAMP", "STRING") }
func (d databricksDialect) Placeholder(n int, t Type) string {
	return castPlaceholder(d, ":p"+strconv.Itoa(n), t)
}
func (databricksDialect) Capabilities() Capabilities {
	return Capabilities{Replace: CopyAndRestore, RowID: Identity, MergeUpdate: true}
}

// CreateTable makes a Delta table, external under Base_location when one is
// set, with UniForm's Iceberg metadata for the iceberg table format.
func (d databricksDialect) CreateTable(t Table, cols []Column) string {
	s := createTable(d, "TABLE", t, cols) + " USING DELTA"
	if d.baseLocation != "" {
		s += " LOCATION " + d.literal(strings.TrimRight(d.baseLocation, "/")+"/"+t.Full())
	}
	if d.iceberg {
		s += " TBLPROPERTIES ('delta.enableIcebergCompatV2'='true', 'delta.universalFormat.enabledFormats'='iceberg')"
	}
	return s
}
func (d databricksDialect) AddColumn(t Table, c Column) string { return addColumn(d, "TABLE", t, c) }
func (d databricksDialect) Truncate(t Table) string            { return "TRUNCATE TABLE " + Qualify(d, t) }
func (d databricksDialect) schemaQuery(catalog, schema string) (string, []any) {
	return infoSchemaSchemaQuery(d, catalog, schema)
}
func (d databricksDialect) columnsQuery(t Table) (string, []any) { return infoSchemaColumnsQuery(d, t) }

// literal quotes a Databricks string literal, where a backslash escapes.
func (databricksDialect) literal(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// snowflakeDialect is Snowflake: upper-case folding, ordinary tables, or
// Snowflake-managed Iceberg tables on an external volume.
type snowflakeDialect struct {
	iceberg        bool
	externalVolume string
	baseLocation   string
}

func (d snowflakeDialect) Name() string {
	if d.iceberg {
		return "snowflake_iceberg"
	}
	return "snowflake"
}
func (snowflakeDialect) Quote(ident string) string { return quoteWith('"', ident) }
func (snowflakeDialect) Fold(ident string) string  { return fold(FoldUpper, ident) }

// TypeName gives Iceberg tables TIMESTAMP_NTZ(6), which holds the UTC wall
// clock: Snowflake Iceberg tables have no zoned timestamp of that precision.
func (d snowflakeDialect) TypeName(t Type) string {
	if d.iceberg {
		return typeName(t, "TIMESTAMP_NTZ(6)", "VARCHAR")
	}
	return typeName(t, timestampTZ, "VARCHAR")
}
func (snowflakeDialect) Placeholder(int, Type) string { return "?" }
func (d snowflakeDialect) Capabilities() Capabilities {
	if d.iceberg {
		return Capabilities{Replace: CopyAndRestore, RowID: Computed, Transactions: true, TempTables: true, DDLCommits: true}
	}
	return Capabilities{Replace: CreateOrReplace, RowID: Identity, Transactions: true, TempTables: true, DDLCommits: true}
}

// CreateTable makes an ordinary table, or an Iceberg table in the Snowflake
// catalog under <Base_location>/<catalog.schema.table> on the external volume.
func (d snowflakeDialect) CreateTable(t Table, cols []Column) string {
	if !d.iceberg {
		return createTable(d, "TABLE", t, cols)
	}
	return createTable(d, "ICEBERG TABLE", t, cols) +
		" EXTERNAL_VOLUME = " + d.literal(d.externalVolume) +
		" CATALOG = 'SNOWFLAKE'" +
		" BASE_LOCATION = " + d.literal(strings.TrimRight(d.baseLocation, "/")+"/"+t.Full())
}
func (d snowflakeDialect) AddColumn(t Table, c Column) string {
	if d.iceberg {
		return addColumn(d, "ICEBERG TABLE", t, c)
	}
	return addColumn(d, "TABLE", t, c)
}
func (d snowflakeDialect) Truncate(t Table) string { return "TRUNCATE TABLE " + Qualify(d, t) }
func (d snowflakeDialect) schemaQuery(catalog, schema string) (string, []any) {
	return infoSchemaSchemaQuery(d, catalog, schema)
}
func (d snowflakeDialect) columnsQuery(t Table) (string, []any) { return infoSchemaColumnsQuery(d, t) }

// literal quotes a Snowflake string literal: a quote is doubled and a
// backslash, which escapes in Snowflake literals, is doubled too.
func (snowflakeDialect) literal(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}
