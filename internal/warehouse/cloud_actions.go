package warehouse

import (
	"context"
	"regexp"
	"strconv"
	"strings"
)

// The parts of the SQL task actions the three cloud dialects (Trino,
// Databricks, Snowflake) share: how their declared types map to hash
// categories, the information_schema look-ups of a table's columns and of
// the tables of a schema, and the storage literals of their DDL.

// typedDecimal matches a fixed-point type with its precision and scale, in
// the spellings of the cloud warehouses (decimal(38,10), NUMBER(38,0)).
var typedDecimal = regexp.MustCompile(`^(?:number|numeric|decimal)\((\d+),\s*(\d+)\)$`)

// decimalScale returns the declared scale of a fixed-point type, and
// whether typ is one.
func decimalScale(typ string) (int, bool) {
	m := typedDecimal.FindStringSubmatch(strings.ToLower(strings.TrimSpace(typ)))
	if m == nil {
		return 0, false
	}
	s, _ := strconv.Atoi(m[2])
	return s, true
}

// cloudIntegers and cloudTexts are the integer and text type names of the
// cloud warehouses, lower case and without a length.
var (
	cloudIntegers = map[string]bool{"tinyint": true, "smallint": true, "integer": true, "int": true, "bigint": true,
		"byte": true, "short": true, "long": true}
	cloudTexts = map[string]bool{"varchar": true, "char": true, "string": true, "text": true, "uuid": true,
		"character varying": true, "character": true}
)

// cloudHashCategory classifies a cloud warehouse's declared type; instant
// names the bare TIMESTAMP that is an instant (Databricks) rather than a
// wall clock (Trino).
func cloudHashCategory(typ string, instant bool) (hashCategory, error) {
	t := strings.ToLower(strings.TrimSpace(typ))
	base := t
	if i := strings.IndexByte(t, '('); i > 0 && !strings.Contains(t, " with") {
		base = t[:i]
	}
	switch {
	case cloudIntegers[base], cloudTexts[base], typedDecimal.MatchString(t):
		return hashText, nil
	case base == "number", base == "numeric", base == "decimal":
		return hashRefused, errUnscaled
	case base == "real", base == "double", base == "float", base == "double precision", base == "float4", base == "float8":
		return hashRefused, errFloat
	case t == "boolean":
		return hashBoolean, nil
	case t == "date":
		return hashDate, nil
	case strings.HasPrefix(t, "timestamp_tz"), strings.HasPrefix(t, "timestamp_ltz"),
		strings.HasPrefix(t, "timestamp") && strings.HasSuffix(t, "with time zone"), t == "timestamp" && instant:
		return hashZoned, nil
	case strings.HasPrefix(t, "timestamp"):
		return hashTimestamp, nil
	}
	return hashRefused, errComplex
}

// describeWith runs a column look-up in the transaction.
func describeWith(ctx context.Context, tx Tx, q string, args ...any) ([]ColumnInfo, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanColumns(rows)
}

// infoSchemaTablesQuery lists the tables of a schema whose lower-case
// name starts with prefix, from the catalog's own information_schema.
func infoSchemaTablesQuery(d Dialect, catalog, schema, prefix string) (string, []any) {
	return "SELECT table_name FROM " + quoteFolded(d, catalog) + ".information_schema.tables" +
			" WHERE LOWER(table_schema) = LOWER(" + d.Placeholder(1, String) + ")" +
			" AND LOWER(table_name) LIKE " + d.Placeholder(2, String),
		[]any{schema, strings.ToLower(prefix) + "%"}
}

// standardLiteral quotes a string literal of standard SQL (Trino): a quote
// is doubled.
func standardLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
