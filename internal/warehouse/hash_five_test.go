package warehouse

import (
	"context"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"
)

// trickyColumn is a column of the change-hash table: its declared type on
// each of the five warehouses.
type trickyColumn struct {
	name                                      string
	duckdb, postgres, trino, databricks, snow string
}

var trickyColumns = []trickyColumn{
	{"s", "VARCHAR", "character varying", "varchar", "string", "VARCHAR(16777216)"},
	{"n", "BIGINT", "bigint", "bigint", "bigint", "NUMBER(38,0)"},
	{"d", "DECIMAL(38,10)", "numeric(38,10)", "decimal(38,10)", "decimal(38,10)", "NUMBER(38,10)"},
	{"b", "BOOLEAN", "boolean", "boolean", "boolean", "BOOLEAN"},
	{"day", "DATE", "date", "date", "date", "DATE"},
	{"ts", "TIMESTAMP", "timestamp without time zone", "timestamp(6)", "timestamp_ntz", "TIMESTAMP_NTZ(6)"},
	{"tz", "TIMESTAMP WITH TIME ZONE", "timestamp with time zone", "timestamp(6) with time zone", "timestamp", "TIMESTAMP_TZ(6)"},
}

// trickyRow is one row of values, as SQL literals for DuckDB and
// PostgreSQL, and the canonical text each must have ("" with null: NULL).
type trickyRow struct {
	literals []string
	want     []*string
}

func text(s string) *string { return &s }

// tricky are the rows: NULLs, empty and unicode text, DECIMAL(38, 10) at
// its edges, integers at BIGINT's, microsecond timestamps, a zoned
// timestamp across midnight UTC.
var tricky = []trickyRow{
	{[]string{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"}, []*string{nil, nil, nil, nil, nil, nil, nil}},
	{[]string{"''", "0", "0", "false", "DATE '1970-01-01'", "TIMESTAMP '1970-01-01 00:00:00.000001'", "TIMESTAMP WITH TIME ZONE '2000-01-01 00:30:00.000001+01:00'"},
		[]*string{text(""), text("0"), text("0.0000000000"), text("false"), text("1970-01-01"), text("1970-01-01T00:00:00.000001"), text("1999-12-31T23:30:00.000001")}},
	{[]string{"'é😀 ''q'' a|b:c'", "-9223372036854775808", "0.0000000001", "true", "DATE '2024-02-29'", "TIMESTAMP '2024-02-29 23:59:59.999999'", "TIMESTAMP WITH TIME ZONE '2024-03-01 05:29:59.999999+05:30'"},
		[]*string{text("é😀 'q' a|b:c"), text("-9223372036854775808"), text("0.0000000001"), text("true"), text("2024-02-29"), text("2024-02-29T23:59:59.999999"), text("2024-02-29T23:59:59.999999")}},
	{[]string{"'N'", "9223372036854775807", "-9999999999999999999999999999.9999999999", "true", "DATE '0001-01-01'", "TIMESTAMP '2038-01-19 03:14:08'", "TIMESTAMP WITH TIME ZONE '2038-01-19 03:14:08-08:00'"},
		[]*string{text("N"), text("9223372036854775807"), text("-9999999999999999999999999999.9999999999"), text("true"), text("0001-01-01"), text("2038-01-19T03:14:08.000000"), text("2038-01-19T11:14:08.000000")}},
	{[]string{"' '", "-1", "-0.0000000001", "false", "DATE '9999-12-31'", "TIMESTAMP '2000-02-29 12:00:00.5'", "TIMESTAMP WITH TIME ZONE '2000-02-29 12:00:00.5+00:00'"},
		[]*string{text(" "), text("-1"), text("-0.0000000001"), text("false"), text("9999-12-31"), text("2000-02-29T12:00:00.500000"), text("2000-02-29T12:00:00.500000")}},
}

// wantHash is the change hash of a row from its expected canonical texts.
func wantHash(r trickyRow) string {
	var b strings.Builder
	for _, w := range r.want {
		if w == nil {
			b.WriteString("N")
			continue
		}
		b.WriteString("V" + big.NewInt(int64(len([]rune(*w)))).String() + ":" + *w)
	}
	return md5Hex(b.String())
}

// valueOf is a row's value of a column as the interpreter holds it on a
// cloud dialect, built from its expected canonical text (the value each
// warehouse would store).
func valueOf(col trickyColumn, dialect string, want *string, lit string) sqlValue {
	if want == nil {
		return sqlValue{kind: vNull}
	}
	w := *want
	switch col.name {
	case "s":
		return sqlValue{kind: vText, text: w}
	case "n":
		n, _ := new(big.Int).SetString(w, 10)
		return sqlValue{kind: vInt, num: n}
	case "d":
		n, _ := new(big.Int).SetString(strings.Replace(w, ".", "", 1), 10)
		return sqlValue{kind: vDecimal, num: n, scale: 10}
	case "b":
		return sqlValue{kind: vBool, b: w == "true"}
	case "day":
		t, _ := time.Parse("2006-01-02", w)
		return sqlValue{kind: vDate, t: t}
	case "ts":
		t, _ := time.Parse("2006-01-02T15:04:05.000000", w)
		return sqlValue{kind: vWall, t: t}
	}
	// The zoned timestamp keeps the offset it was written with (Trino,
	// Snowflake); Databricks keeps the instant only.
	lit = strings.TrimSuffix(strings.TrimPrefix(lit, "TIMESTAMP WITH TIME ZONE '"), "'")
	t, err := time.Parse("2006-01-02 15:04:05.999999-07:00", lit)
	if err != nil {
		panic(err)
	}
	if dialect == "databricks" {
		return sqlValue{kind: vInstant, t: t.UTC()}
	}
	return sqlValue{kind: vZoned, t: t}
}

// The change hash's canonical text, and so the hash, is byte-identical on
// all five warehouses for a table of tricky values: DuckDB and PostgreSQL
// compute it for real (in a session time zone far from UTC); for Trino,
// Databricks and Snowflake, which cannot be reached from here, the
// expressions their dialects generate are evaluated by sqleval_test.go's
// interpreter of each platform's documented function behaviour (with
// Databricks' session in Asia/Kolkata).
func TestChangeHashFiveWarehouses(t *testing.T) {
	t.Parallel()
	want := make([]string, len(tricky))
	for i, r := range tricky {
		want[i] = wantHash(r)
	}
	got := map[string][]string{}

	eachReal(t, func(t *testing.T, w Warehouse) {
		tbl := w.Table(testSchema, "tricky")
		defs := make([]string, len(trickyColumns))
		for i, c := range trickyColumns {
			defs[i] = c.name + " " + c.duckdb
		}
		stmts := []string{"CREATE TABLE " + Qualify(w, tbl) + " (k INTEGER, " + strings.Join(defs, ", ") + ")"}
		for i, r := range tricky {
			stmts = append(stmts, "INSERT INTO "+Qualify(w, tbl)+" VALUES ("+big.NewInt(int64(i)).String()+", "+strings.Join(r.literals, ", ")+")")
		}
		mustExec(t, w, stmts...)
		a, _ := ActionsOf(w)
		inTx(t, w, func(ctx context.Context, tx Tx) {
			if _, err := tx.Exec(ctx, "SET TimeZone = 'Asia/Kolkata'"); err != nil {
				t.Fatal(err)
			}
			cols, err := a.DescribeTable(ctx, tx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			in := make([]HashColumn, 0, len(cols))
			texts := make([]string, 0, len(cols))
			for _, c := range cols[1:] {
				in = append(in, HashColumn{Name: c.Name, Expr: w.Quote(c.Name), Type: c.Type})
				ct, err := a.CanonicalText(w.Quote(c.Name), c.Type)
				if err != nil {
					t.Fatal(err)
				}
				texts = append(texts, ct)
			}
			hash, err := ChangeHash(a, in)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range tricky {
				for j, ct := range texts {
					if r.want[j] == nil {
						continue // canonical text is of non-NULL values
					}
					s := queryText(t, ctx, tx, "SELECT "+ct+" FROM "+Qualify(w, tbl)+" WHERE k = "+big.NewInt(int64(i)).String())
					if (s == nil) != (r.want[j] == nil) || (s != nil && *s != *r.want[j]) {
						t.Errorf("%s row %d column %s: canonical text %v, want %v", w.Name(), i, trickyColumns[j].name, deref(s), deref(r.want[j]))
					}
				}
			}
			rows, err := tx.Query(ctx, "SELECT "+hash+" FROM "+Qualify(w, tbl)+" ORDER BY k")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var h string
				rows.Scan(&h)
				got[w.Name()] = append(got[w.Name()], h)
			}
		})
	})

	for _, c := range []struct {
		dialect string
		d       Actions
		typ     func(trickyColumn) string
	}{
		{"trino", trinoDialect{}, func(c trickyColumn) string { return c.trino }},
		{"databricks", databricksDialect{}, func(c trickyColumn) string { return c.databricks }},
		{"snowflake", snowflakeDialect{}, func(c trickyColumn) string { return c.snow }},
	} {
		in := make([]HashColumn, len(trickyColumns))
		for i, col := range trickyColumns {
			in[i] = HashColumn{Name: col.name, Expr: c.d.Quote(col.name), Type: c.typ(col)}
		}
		hash, err := ChangeHash(c.d, in)
		if err != nil {
			t.Fatal(err)
		}
		kolkata, _ := time.LoadLocation("Asia/Kolkata")
		for i, r := range tricky {
			ev := &evaluator{dialect: c.dialect, quote: c.d.Quote("x")[0], columns: map[string]sqlValue{}, session: kolkata}
			for j, col := range trickyColumns {
				ev.columns[col.name] = valueOf(col, c.dialect, r.want[j], r.literals[j])
				ct, _ := c.d.CanonicalText(c.d.Quote(col.name), c.typ(col))
				v, err := ev.eval(ct)
				if r.want[j] != nil && (err != nil || v.kind != vText || v.text != *r.want[j]) {
					t.Errorf("%s row %d column %s: %s gives %q (%v), want %q", c.dialect, i, col.name, ct, v.text, err, *r.want[j])
				}
			}
			v, err := ev.eval(hash)
			if err != nil {
				t.Fatalf("%s: %v", c.dialect, err)
			}
			got[c.dialect] = append(got[c.dialect], v.text)
		}
	}
	for name, hashes := range got {
		if !slices.Equal(hashes, want) {
			t.Errorf("%s hashes\n%v, want\n%v", name, hashes, want)
		}
	}
	if len(got) != 5 {
		t.Errorf("hashed on %d warehouses", len(got))
	}
}

// queryText returns the one text value (nil: NULL) a query answers.
func queryText(t *testing.T, ctx context.Context, tx Tx, q string) *string {
	t.Helper()
	rows, err := tx.Query(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var s *string
	if rows.Next() {
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return *s
}

// Databricks' CAST(decimal AS STRING) would write 0E-10 for a zero
// DECIMAL(38, 10) with ANSI mode off; the dialect's format_number text does
// not.
func TestDatabricksDecimalTextIsPlain(t *testing.T) {
	t.Parallel()
	ev := &evaluator{dialect: "databricks", quote: '`', columns: map[string]sqlValue{"d": {kind: vDecimal, num: big.NewInt(0), scale: 10}}}
	if v, _ := ev.eval("CAST(`d` AS STRING)"); v.text != "0E-10" {
		t.Fatalf("the interpreter's CAST gives %q", v.text)
	}
	ct, _ := databricksDialect{}.CanonicalText("`d`", "decimal(38,10)")
	if v, err := ev.eval(ct); err != nil || v.text != "0.0000000000" {
		t.Fatalf("%s gives %q, %v", ct, v.text, err)
	}
}
