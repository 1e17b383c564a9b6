package warehouse

import "context"

// The SQL task actions on Snowflake, native and Snowflake-managed Iceberg
// tables. Documentation of each form, under https://docs.snowflake.com/en/:
// sql-reference/functions/md5, sql-reference/functions/to_char,
// sql-reference/functions/convert_timezone, sql-reference/functions/current_user,
// sql-reference/sql/create-table (AUTOINCREMENT … ORDER),
// sql-reference/sql/create-iceberg-table-snowflake (EXTERNAL_VOLUME,
// CATALOG, BASE_LOCATION), sql-reference/info-schema/columns.

// DescribeTable reads the database's information_schema, rebuilding the
// declared type from its parts (NUMBER(38,10), TIMESTAMP_NTZ(6),
// VARCHAR(16777216)); Snowflake stores names as written, so the schema is
// matched folded and the table exactly. Views are left out.
func (d snowflakeDialect) DescribeTable(ctx context.Context, tx Tx, t Table) ([]ColumnInfo, error) {
	cat := quoteFolded(d, t.Catalog)
	return describeWith(ctx, tx, "SELECT c.column_name, CASE"+
		" WHEN c.data_type = 'NUMBER' THEN 'NUMBER(' || c.numeric_precision || ',' || c.numeric_scale || ')'"+
		" WHEN c.data_type = 'TEXT' THEN 'VARCHAR(' || c.character_maximum_length || ')'"+
		" WHEN c.data_type LIKE 'TIMESTAMP%' THEN c.data_type || '(' || c.datetime_precision || ')'"+
		" ELSE c.data_type END FROM "+cat+".information_schema.columns c"+
		" JOIN "+cat+".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name"+
		" WHERE c.table_schema = ? AND c.table_name = ? AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position",
		d.Fold(t.Schema), t.Name)
}

// snowflakeTimestamp is the TO_VARCHAR format of a canonical timestamp.
const snowflakeTimestamp = `'YYYY-MM-DD"T"HH24:MI:SS.FF6'`

// snowflakeTemporal writes dates and timestamps as canonical text; a
// TIMESTAMP_TZ or TIMESTAMP_LTZ is converted to UTC first.
var snowflakeTemporal = temporalText{
	date:      func(expr string) string { return "TO_VARCHAR(" + expr + ", 'YYYY-MM-DD')" },
	timestamp: func(expr string) string { return "TO_VARCHAR(" + expr + ", " + snowflakeTimestamp + ")" },
	zoned: func(expr string) string {
		return "TO_VARCHAR(CONVERT_TIMEZONE('UTC', " + expr + "), " + snowflakeTimestamp + ")"
	},
}

func (snowflakeDialect) CanonicalText(expr, typ string) (string, error) {
	c, err := cloudHashCategory(typ, false)
	return canonicalText(c, err, expr, snowflakeTemporal)
}

// RowIDColumn is an ordered AUTOINCREMENT on native tables; Iceberg tables
// have none, so their ROW_ID is computed under the target's lock.
func (d snowflakeDialect) RowIDColumn(_ Table, column string) ([]string, string) {
	if d.iceberg {
		return nil, d.Quote(column) + " BIGINT"
	}
	return nil, d.Quote(column) + " BIGINT AUTOINCREMENT ORDER"
}
func (snowflakeDialect) DropRowID(Table) []string { return nil }
func (snowflakeDialect) MD5(text string) string   { return "MD5(" + text + ")" }
func (snowflakeDialect) CurrentTimestamp() string { return "CURRENT_TIMESTAMP" }
func (snowflakeDialect) CurrentUser() string      { return "CURRENT_USER()" }
func (snowflakeDialect) RowNumber() string        { return "ROW_NUMBER() OVER (ORDER BY NULL)" }
func (d snowflakeDialect) TargetKeyword() string {
	if d.iceberg {
		return "ICEBERG TABLE"
	}
	return "TABLE"
}
func (d snowflakeDialect) StorageParameters() []string {
	if d.iceberg {
		return []string{ExternalVolume, BaseLocation, CatalogParameter}
	}
	return nil
}
func (d snowflakeDialect) TableFormats() []TableFormat {
	if d.iceberg {
		return []TableFormat{Iceberg}
	}
	return []TableFormat{Native}
}

// TargetOptions puts an Iceberg table on EXTERNAL_VOLUME at BASE_LOCATION
// in CATALOG; without them, on Snowflake's own storage
// (SNOWFLAKE_MANAGED) in the SNOWFLAKE catalog.
func (d snowflakeDialect) TargetOptions(_ Table, storage map[string]string) string {
	if !d.iceberg {
		return ""
	}
	volume, ok := storage[ExternalVolume]
	if !ok {
		volume = "SNOWFLAKE_MANAGED"
	}
	catalog, ok := storage[CatalogParameter]
	if !ok {
		catalog = "SNOWFLAKE"
	}
	s := " EXTERNAL_VOLUME = " + d.literal(volume) + " CATALOG = " + d.literal(catalog)
	if base, ok := storage[BaseLocation]; ok {
		s += " BASE_LOCATION = " + d.literal(base)
	}
	return s
}
func (d snowflakeDialect) TablesQuery(catalog, schema, prefix string) (string, []any) {
	return infoSchemaTablesQuery(d, catalog, schema, prefix)
}
