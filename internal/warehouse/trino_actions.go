package warehouse

import "context"

// The SQL task actions on Trino's Iceberg connector. Documentation of each
// form: https://trino.io/docs/current/functions/binary.html (md5, to_hex,
// to_utf8), https://trino.io/docs/current/functions/conversion.html (CAST),
// https://trino.io/docs/current/functions/datetime.html (AT TIME ZONE),
// https://trino.io/docs/current/connector/iceberg.html (table properties,
// location).

// DescribeTable reads the catalog's information_schema, whose data_type is
// the full type (decimal(38,10), timestamp(6) with time zone); views are
// left out.
func (d trinoDialect) DescribeTable(ctx context.Context, tx Tx, t Table) ([]ColumnInfo, error) {
	cat := quoteFolded(d, t.Catalog)
	return describeWith(ctx, tx, "SELECT c.column_name, c.data_type FROM "+cat+".information_schema.columns c"+
		" JOIN "+cat+".information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name"+
		" WHERE c.table_schema = "+d.Placeholder(1, String)+" AND c.table_name = "+d.Placeholder(2, String)+
		" AND t.table_type = 'BASE TABLE' ORDER BY c.ordinal_position", d.Fold(t.Schema), t.Name)
}

// trinoTimestamp is the canonical text of a timestamp(p) wall clock: the
// VARCHAR cast of a timestamp(6) prints all six digits after a space.
func trinoTimestamp(expr string) string {
	return "replace(CAST(CAST(" + expr + " AS TIMESTAMP(6)) AS VARCHAR), ' ', 'T')"
}

// trinoTemporal writes dates and timestamps as canonical text.
var trinoTemporal = temporalText{
	date:      func(expr string) string { return "CAST(" + expr + " AS VARCHAR)" },
	timestamp: trinoTimestamp,
	zoned:     func(expr string) string { return trinoTimestamp(expr + " AT TIME ZONE 'UTC'") },
}

func (trinoDialect) CanonicalText(expr, typ string) (string, error) {
	c, err := cloudHashCategory(typ, false)
	return canonicalText(c, err, expr, trinoTemporal)
}

// RowIDColumn is a plain BIGINT: Trino has no identity columns, so ROW_ID
// is computed under the target's lock.
func (d trinoDialect) RowIDColumn(_ Table, column string) ([]string, string) {
	return nil, d.Quote(column) + " BIGINT"
}
func (trinoDialect) DropRowID(Table) []string { return nil }

// MD5 hashes the text's UTF-8 bytes and prints them as lower-case hex.
func (trinoDialect) MD5(text string) string      { return "lower(to_hex(md5(to_utf8(" + text + "))))" }
func (trinoDialect) CurrentTimestamp() string    { return "current_timestamp(6)" }
func (trinoDialect) CurrentUser() string         { return "current_user" }
func (trinoDialect) RowNumber() string           { return "row_number() OVER ()" }
func (trinoDialect) TargetKeyword() string       { return "TABLE" }
func (trinoDialect) StorageParameters() []string { return []string{ExternalLocation} }
func (trinoDialect) TableFormats() []TableFormat { return []TableFormat{Native, Iceberg} }

// TargetOptions places the table at EXTERNAL_LOCATION, the Iceberg
// connector's location table property.
func (trinoDialect) TargetOptions(_ Table, storage map[string]string) string {
	if loc, ok := storage[ExternalLocation]; ok {
		return " WITH (location = " + standardLiteral(loc) + ")"
	}
	return ""
}
func (d trinoDialect) TablesQuery(catalog, schema, prefix string) (string, []any) {
	return infoSchemaTablesQuery(d, catalog, schema, prefix)
}
