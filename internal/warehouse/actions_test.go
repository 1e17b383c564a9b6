package warehouse

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"testing"
)

// hashOf returns the change hash of the columns of tbl, one per row in the
// order of the first column, computed in a transaction that first runs
// setup (such as a time zone change).
func hashOf(t *testing.T, w Warehouse, tbl Table, setup string) []string {
	t.Helper()
	a, err := ActionsOf(w)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	inTx(t, w, func(ctx context.Context, tx Tx) {
		if setup != "" {
			if _, err := tx.Exec(ctx, setup); err != nil {
				t.Fatal(err)
			}
		}
		cols, err := a.DescribeTable(ctx, tx, tbl)
		if err != nil || len(cols) == 0 {
			t.Fatalf("describe %s: %v %v", tbl.Full(), cols, err)
		}
		in := make([]HashColumn, len(cols))
		for i, c := range cols {
			in[i] = HashColumn{Name: c.Name, Expr: w.Quote(c.Name), Type: c.Type}
		}
		hash, err := ChangeHash(a, in)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, "SELECT "+hash+" FROM "+Qualify(w, tbl)+" ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var h string
			if err := rows.Scan(&h); err != nil {
				t.Fatal(err)
			}
			out = append(out, h)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	})
	return out
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// W06: the canonical encoding of each kind of value, in UTC whatever the
// session's time zone.
func TestW06ChangeHashContract(t *testing.T) {
	t.Parallel()
	want := md5Hex("NV0:V5:a|b:cV2:é😀V26:2020-01-02T03:04:05.123456V26:2020-01-02T03:04:05.123456V7:12.3400V5:falseV10:2020-01-02")
	eachReal(t, func(t *testing.T, w Warehouse) {
		tbl := w.Table(testSchema, "contract")
		mustExec(t, w, `CREATE TABLE `+Qualify(w, tbl)+` (a VARCHAR, b VARCHAR, c VARCHAR, d VARCHAR,
			e TIMESTAMP, f TIMESTAMP WITH TIME ZONE, g DECIMAL(12, 4), h BOOLEAN, i DATE)`,
			`INSERT INTO `+Qualify(w, tbl)+` VALUES (NULL, '', 'a|b:c', 'é😀',
			TIMESTAMP '2020-01-02 03:04:05.123456', TIMESTAMP WITH TIME ZONE '2020-01-02 08:34:05.123456+05:30',
			12.34, false, DATE '2020-01-02')`)
		for _, setup := range []string{"", "SET TimeZone = 'Asia/Kolkata'"} {
			if got := hashOf(t, w, tbl, setup); !slices.Equal(got, []string{want}) {
				t.Fatalf("with %q: hash %v, want %s", setup, got, want)
			}
		}
	})
}

// W07: NULL, the empty string and values holding the encoding's own
// characters all hash differently.
func TestW07ChangeHashSeparatesValues(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		tbl := w.Table(testSchema, "separate")
		mustExec(t, w, `CREATE TABLE `+Qualify(w, tbl)+` (a VARCHAR, b VARCHAR)`,
			`INSERT INTO `+Qualify(w, tbl)+` VALUES (NULL, NULL), ('', NULL), (NULL, ''), ('', ''),
			('N', NULL), ('a:', 'b'), ('a', ':b'), ('V1:a', NULL), ('a', NULL), (NULL, 'a')`)
		got := hashOf(t, w, tbl, "")
		if len(got) != 10 || len(slices.Compact(slices.Clone(got))) != 10 {
			t.Fatalf("hashes %v are not ten different ones", got)
		}
	})
}

// The same values of every hashable type hash alike on DuckDB and
// PostgreSQL, and a declared scale is part of the value.
func TestChangeHashSameOnBothWarehouses(t *testing.T) {
	t.Parallel()
	const create = `CREATE TABLE %s (n INTEGER, big BIGINT, d DECIMAL(10, 2), d0 DECIMAL(18, 0), ok BOOLEAN,
		day DATE, ts TIMESTAMP, tz TIMESTAMP WITH TIME ZONE, s VARCHAR)`
	const insert = `INSERT INTO %s VALUES
		(1, -9007199254740993, -0.5, 12, true, DATE '1999-12-31', TIMESTAMP '1999-12-31 23:59:59', TIMESTAMP WITH TIME ZONE '2000-01-01 00:30:00+01:00', 'x y'),
		(2, 0, 0, 0, false, DATE '2024-02-29', TIMESTAMP '2024-02-29 00:00:00.000001', TIMESTAMP WITH TIME ZONE '2024-02-28 23:00:00-05:00', 'Ünïcödé'),
		(3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`
	hashes := map[string][]string{}
	eachReal(t, func(t *testing.T, w Warehouse) {
		tbl := w.Table(testSchema, "typed")
		mustExec(t, w, strings.ReplaceAll(create, "%s", Qualify(w, tbl)), strings.ReplaceAll(insert, "%s", Qualify(w, tbl)))
		hashes[w.Name()] = hashOf(t, w, tbl, "SET TimeZone = 'America/New_York'")
	})
	if len(hashes) == 2 && !slices.Equal(hashes["duckdb"], hashes["postgres"]) {
		t.Fatalf("DuckDB hashes %v, PostgreSQL %v", hashes["duckdb"], hashes["postgres"])
	}
}

func TestCanonicalTextRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		d    Actions
		typ  string
		want error
	}{
		{postgresDialect{}, "double precision", errFloat},
		{postgresDialect{}, "real", errFloat},
		{postgresDialect{}, "numeric", errUnscaled},
		{postgresDialect{}, "integer[]", errComplex},
		{postgresDialect{}, "jsonb", errComplex},
		{duckdbDialect{}, "DOUBLE", errFloat},
		{duckdbDialect{}, "FLOAT", errFloat},
		{duckdbDialect{}, "STRUCT(a INTEGER)", errComplex},
		{duckdbDialect{}, "INTERVAL", errComplex},
	}
	for _, c := range cases {
		if _, err := c.d.CanonicalText("x", c.typ); !errors.Is(err, c.want) {
			t.Errorf("%s %s: %v, want %v", c.d.Name(), c.typ, err, c.want)
		}
	}
	_, err := ChangeHash(postgresDialect{}, []HashColumn{{Name: "ok", Expr: "ok", Type: "integer"}, {Name: "price", Expr: "price", Type: "double precision"}})
	if err == nil || !strings.Contains(err.Error(), "column price (double precision): floats have no stable text form; cast to DECIMAL") {
		t.Fatalf("got %v", err)
	}
}

// Every dialect writes SQL tasks.
func TestActionsOnEveryWarehouse(t *testing.T) {
	t.Parallel()
	for _, c := range goldenCases {
		d, err := NewDialect(c.kind, c.format, c.storage)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ActionsOf(d); err != nil {
			t.Errorf("%s: %v", d.Name(), err)
		}
	}
}

// A DuckDB table's ROW_ID numbers from its own sequence, which dropping and
// creating the table again starts afresh.
func TestRowIDColumn(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		a, _ := ActionsOf(w)
		tbl := w.Table(testSchema, "numbered")
		for range 2 {
			before, def := a.RowIDColumn(tbl, "row_id")
			stmts := append(before, "CREATE TABLE "+Qualify(w, tbl)+" (v VARCHAR, "+def+")",
				"INSERT INTO "+Qualify(w, tbl)+" (v) VALUES ('a'), ('b')")
			mustExec(t, w, stmts...)
			if got := queryValue[int64](t, w, "SELECT SUM(row_id) FROM "+Qualify(w, tbl)); got != 3 {
				t.Fatalf("ROW_IDs sum to %d, want 1 + 2", got)
			}
			mustExec(t, w, append([]string{"DROP TABLE " + Qualify(w, tbl)}, a.DropRowID(tbl)...)...)
		}
	})
}

// DescribeTable gives a base table's columns with their full types, in
// order and whatever the case of its name; a view, a missing table and a
// missing schema have none, and the transaction that asked goes on to write
// and commit.
func TestDescribeTable(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		a, _ := ActionsOf(w)
		tbl := w.Table(testSchema, "described")
		view := w.Table(testSchema, "described_view")
		mustExec(t, w, "CREATE TABLE "+Qualify(w, tbl)+" (id INTEGER, amount DECIMAL(12, 4), placed TIMESTAMP WITH TIME ZONE, note VARCHAR)",
			"CREATE VIEW "+Qualify(w, view)+" AS SELECT id FROM "+Qualify(w, tbl))
		want := "id integer|amount numeric(12,4)|placed timestamp with time zone|note character varying"
		if w.Name() == "duckdb" {
			want = "id INTEGER|amount DECIMAL(12,4)|placed TIMESTAMP WITH TIME ZONE|note VARCHAR"
		}
		written := w.Table(testSchema, "written_after")
		inTx(t, w, func(ctx context.Context, tx Tx) {
			cols, err := a.DescribeTable(ctx, tx, tbl)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(cols))
			for i, c := range cols {
				got[i] = c.Name + " " + c.Type
			}
			if strings.Join(got, "|") != want {
				t.Fatalf("columns %q, want %q", strings.Join(got, "|"), want)
			}
			for _, none := range []Table{view, w.Table(testSchema, "no_such_table"), w.Table("no_such_schema", "described")} {
				if cols, err := a.DescribeTable(ctx, tx, none); err != nil || len(cols) != 0 {
					t.Fatalf("%s: columns %v, %v", none.Full(), cols, err)
				}
			}
			if _, err := tx.Exec(ctx, "CREATE TABLE "+Qualify(w, written)+" AS SELECT 1 AS id"); err != nil {
				t.Fatal(err)
			}
		})
		if w.Name() == "duckdb" {
			inTx(t, w, func(ctx context.Context, tx Tx) {
				if cols, err := a.DescribeTable(ctx, tx, w.Table(testSchema, "DESCRIBED")); err != nil || len(cols) != 4 {
					t.Fatalf("DESCRIBED: columns %v, %v", cols, err)
				}
			})
		}
		if n := queryValue[int64](t, w, "SELECT COUNT(*) FROM "+Qualify(w, written)); n != 1 {
			t.Fatalf("%d rows written after the look-ups", n)
		}
	})
}
