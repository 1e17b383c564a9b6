package warehouse

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// The tests in this file run against real databases: a DuckDB file in a
// temporary folder and a PostgreSQL database of their own.

// testSchema is the warehouse profile schema every real test writes to.
const testSchema = "staging"

// openDuckDBFile opens (creating) a DuckDB file warehouse.duckdb in dir.
func openDuckDBFile(t testing.TB, dir string) Warehouse {
	t.Helper()
	w, err := Open(context.Background(), Options{Kind: DuckDB, Path: filepath.Join(dir, "warehouse.duckdb"), Schema: testSchema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// pgOptions turns a test database URL into warehouse options; the password
// is handed over only through the Password func.
func pgOptions(t testing.TB, rawURL string) Options {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	params := map[string]string{}
	for k, v := range u.Query() {
		params[k] = v[0]
	}
	return Options{
		Kind: Postgres, Host: u.Hostname(), Port: port, Database: strings.TrimPrefix(u.Path, "/"),
		User: u.User.Username(), Params: params, Schema: testSchema, AuthMode: AuthPassword,
		Password: func() (string, error) { return pw, nil },
	}
}

// openPG opens a fresh PostgreSQL test database as a warehouse.
func openPG(t testing.TB) Warehouse {
	t.Helper()
	w, err := Open(context.Background(), pgOptions(t, enginetest.NewPGDatabase(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// openReal opens a fresh warehouse of the kind (a DuckDB file in a
// temporary folder, or a PostgreSQL database of its own) with the schema
// testSchema created.
func openReal(t testing.TB, k Kind) Warehouse {
	t.Helper()
	var w Warehouse
	if k == DuckDB {
		w = openDuckDBFile(t, t.TempDir())
	} else {
		w = openPG(t)
	}
	mustExec(t, w, "CREATE SCHEMA "+w.Quote(testSchema))
	return w
}

// eachReal runs body on a fresh DuckDB file and a fresh PostgreSQL database.
func eachReal(t *testing.T, body func(t *testing.T, w Warehouse)) {
	t.Helper()
	for _, k := range []Kind{DuckDB, Postgres} {
		t.Run(string(k), func(t *testing.T) { body(t, openReal(t, k)) })
	}
}

// inTx runs fn in a transaction and commits it.
func inTx(t testing.TB, w Warehouse, fn func(ctx context.Context, tx Tx)) {
	t.Helper()
	ctx := context.Background()
	tx, err := w.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	fn(ctx, tx)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// mustExec runs statements in one committed transaction.
func mustExec(t testing.TB, w Warehouse, stmts ...string) {
	t.Helper()
	inTx(t, w, func(ctx context.Context, tx Tx) {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	})
}

// queryValue runs a query returning one value.
func queryValue[T any](t testing.TB, w Warehouse, q string) T {
	t.Helper()
	var v T
	inTx(t, w, func(ctx context.Context, tx Tx) {
		rows, err := tx.Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		if !rows.Next() {
			t.Fatalf("%s returned no row: %v", q, rows.Err())
		}
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
	})
	return v
}

func TestW01DuckDBFilePersists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w := openDuckDBFile(t, dir)
	if w.Catalog() != "warehouse" {
		t.Fatalf("catalog %q, want the file stem warehouse", w.Catalog())
	}
	tbl := w.Table(testSchema, "t")
	mustExec(t, w, "CREATE SCHEMA staging", w.CreateTable(tbl, []Column{{"ID", BigInt}}),
		"INSERT INTO "+Qualify(w, tbl)+" VALUES (41), (42)")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	again := openDuckDBFile(t, dir)
	if got := queryValue[int64](t, again, "SELECT SUM(ID) FROM warehouse.staging.t"); got != 83 {
		t.Fatalf("sum %d after reopening, want 83", got)
	}
	if q := Qualify(again, again.Table(testSchema, "t")); q != `"warehouse"."staging"."t"` {
		t.Fatalf("qualified name %s", q)
	}
}

// Two opens of one file in a process share one database handle, which the
// last Close releases.
func TestDuckDBOneHandlePerFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := openDuckDBFile(t, dir), openDuckDBFile(t, dir)
	if a.(*sqlWarehouse).db != b.(*sqlWarehouse).db {
		t.Fatal("two handles on one DuckDB file")
	}
	a.Close()
	if err := b.Ping(context.Background()); err != nil {
		t.Fatalf("closing one open closed the other: %v", err)
	}
}

// A DuckDB warehouse is opened with the memory limit the options name
// (DuckDB's own default when they name none), and with the allocator's
// background threads, which give freed memory back: DuckDB's default keeps
// the peak of every query a server has run. DuckDBMemory counts what an open
// file holds.
func TestDuckDBMemorySettings(t *testing.T) {
	t.Parallel()
	plain, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	var duckdbDefault string
	if err := plain.QueryRow("SELECT current_setting('memory_limit')").Scan(&duckdbDefault); err != nil {
		t.Fatal(err)
	}
	plain.Close()
	for _, c := range []struct{ limit, want string }{{"", duckdbDefault}, {"256MiB", "256.0 MiB"}} {
		for _, path := range []string{filepath.Join(t.TempDir(), "warehouse.duckdb"), ""} {
			w, err := Open(t.Context(), Options{Kind: DuckDB, Path: path, Schema: "main", MemoryLimit: c.limit})
			if err != nil {
				t.Fatal(err)
			}
			if got := queryValue[string](t, w, "SELECT current_setting('memory_limit')"); got != c.want {
				t.Errorf("file %q with MemoryLimit %q: memory_limit %s, want %s", path, c.limit, got, c.want)
			}
			if got := queryValue[string](t, w, "SELECT value FROM duckdb_settings() WHERE name = 'allocator_background_threads'"); got != "true" {
				t.Errorf("file %q: allocator_background_threads %s, want true", path, got)
			}
			if path != "" {
				mustExec(t, w, "CREATE TABLE t AS SELECT range AS ID FROM range(100000)")
				if n, err := DuckDBMemory(t.Context()); err != nil || n <= 0 {
					t.Errorf("DuckDBMemory with a file holding 100,000 rows open: %d, %v", n, err)
				}
			}
			w.Close()
		}
	}
}

func TestDuckDBFileNameMustBeAnIdentifier(t *testing.T) {
	t.Parallel()
	_, err := Open(context.Background(), Options{Kind: DuckDB, Path: filepath.Join(t.TempDir(), "my-warehouse.duckdb")})
	if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), `"my-warehouse.duckdb" must be a plain identifier`) {
		t.Fatalf("got %v", err)
	}
	_, err = Open(context.Background(), Options{Kind: DuckDB, Path: filepath.Join(t.TempDir(), "wh.duckdb"), Catalog: "other"})
	if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), `is the file's name "wh", not "other"`) {
		t.Fatalf("got %v", err)
	}
}

func TestW03PostgresPasswordAndParams(t *testing.T) {
	t.Parallel()
	raw := enginetest.NewPGDatabase(t)
	opts := pgOptions(t, raw)
	pw, _ := url.Parse(raw)
	secret, _ := pw.User.Password()
	calls := 0
	opts.Password = func() (string, error) { calls++; return secret, nil }
	opts.Params["application_name"] = "etl-craft-w03"
	w, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if strings.Contains(w.String(), secret) || strings.Contains(postgresURL(opts), secret) {
		t.Fatalf("the password shows in %s", w.String())
	}
	if !strings.Contains(w.String(), "application_name=etl-craft-w03") {
		t.Fatalf("String() %s lacks the URL settings", w.String())
	}

	ctx := context.Background()
	app := queryValue[string](t, w, "SELECT current_setting('application_name')")
	if app != "etl-craft-w03" {
		t.Fatalf("application_name %q", app)
	}
	if calls == 0 {
		t.Fatal("the password func was never called")
	}
	if w.Capabilities().SingleWriter {
		t.Fatal("a PostgreSQL warehouse must not queue its writers")
	}

	// A wrong password fails the connection test, and the message does not
	// show it.
	opts.Password = func() (string, error) { return "not-the-password", nil }
	bad, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	err = bad.Ping(ctx)
	if !exit.Is(err, exit.ConnectionTest) || strings.Contains(err.Error(), "not-the-password") {
		t.Fatalf("ping with a wrong password: %v", err)
	}

	// A failing secret source fails the connection too.
	opts.Password = func() (string, error) { return "", errors.New("variable PG_SECRET is not set") }
	unset, _ := Open(ctx, opts)
	defer unset.Close()
	if err := unset.Ping(ctx); err == nil || !strings.Contains(err.Error(), "PG_SECRET") {
		t.Fatalf("ping without a secret: %v", err)
	}
}

func TestOpenRefusesAuthModes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{Kind: DuckDB, AuthMode: AuthPassword}, `auth_mode "password" is not available for the duckdb warehouse: use none`},
		{Options{Kind: Databricks, AuthMode: "sso"}, `auth_mode "sso" is not available for the databricks warehouse: use token, oauth`},
		{Options{Kind: Snowflake, AuthMode: AuthToken}, "auth_mode token needs a secret"},
		{Options{Kind: Postgres, Database: "db", AuthMode: AuthNone}, "needs a host"},
		{Options{Kind: Trino, Host: "h", Schema: "s"}, "needs a catalog"},
		{Options{Kind: Databricks, Host: "h", Catalog: "c", Schema: "s", HTTPPath: "/sql/1.0/", Password: func() (string, error) { return "", nil }},
			`httpPath "/sql/1.0/" does not name a SQL warehouse`},
		{Options{Kind: Snowflake, Account: "a", User: "u", Catalog: "d", Schema: "s", Password: func() (string, error) { return "", nil }}, "needs a warehouse"},
	} {
		_, err := Open(ctx, c.opts)
		if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.opts.Kind, err, c.want)
		}
	}
}

func TestSchemaExists(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		ctx := context.Background()
		for _, name := range []string{"staging", "STAGING", "Staging"} {
			ok, err := w.SchemaExists(ctx, name)
			if err != nil || !ok {
				t.Errorf("SchemaExists(%s) = %v, %v", name, ok, err)
			}
		}
		ok, err := w.SchemaExists(ctx, "missing")
		if err != nil || ok {
			t.Errorf("SchemaExists(missing) = %v, %v", ok, err)
		}
	})
}

func TestColumns(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		ctx := context.Background()
		tbl := w.Table(testSchema, "CFG_PIPELINES")
		mustExec(t, w, w.CreateTable(tbl, mirrorColumns), w.AddColumn(tbl, Column{"ROWS_WRITTEN", BigInt}))
		for _, name := range []string{"CFG_PIPELINES", "cfg_pipelines"} {
			cols, err := w.Columns(ctx, "STAGING", name)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cols {
				got = append(got, c.Name+" "+c.Type)
			}
			want := "PIPELINE_ID bigint|PIPELINE_CODE character varying|ACTIVE boolean|SLA_HOURS numeric|RUN_DATE date|" +
				"CREATE_DATE timestamp with time zone|Odd \"Name\" character varying|ROWS_WRITTEN bigint"
			if w.Name() == "duckdb" {
				want = "PIPELINE_ID BIGINT|PIPELINE_CODE VARCHAR|ACTIVE BOOLEAN|SLA_HOURS DECIMAL(38,10)|RUN_DATE DATE|" +
					"CREATE_DATE TIMESTAMP WITH TIME ZONE|Odd \"Name\" VARCHAR|ROWS_WRITTEN BIGINT"
			}
			if strings.Join(got, "|") != want {
				t.Errorf("Columns(%s) = %q\nwant %q", name, strings.Join(got, "|"), want)
			}
		}
		cols, err := w.Columns(ctx, testSchema, "NO_SUCH_TABLE")
		if err != nil || len(cols) != 0 {
			t.Errorf("a missing table has columns %v, %v", cols, err)
		}
	})
}

// loadColumns cover every portable type.
var loadColumns = []Column{
	{"ID", BigInt}, {"FLAG", Boolean}, {"AMOUNT", Decimal}, {"DAY", Date}, {"AT", Timestamp}, {"NOTE", String},
}

var kolkata = time.FixedZone("IST", 5*3600+1800)

// sampleRow returns row i of the load tests: NULLs, negative and large
// numbers, times in other zones, text with quotes, separators and unicode.
func sampleRow(i int) []any {
	row := []any{
		int64(i),
		i%3 == 0,
		fmt.Sprintf("%d.%04d", i-50_000, i%10_000),
		time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%3650),
		time.Date(2024, 2, 29, 23, 59, 59, 0, kolkata).Add(time.Duration(i) * 1_234_567 * time.Microsecond),
		fmt.Sprintf("row %d: it's \"quoted\", a|b:c, tab\there, é😀 \\ %s", i, strings.Repeat("ü", i%5)),
	}
	switch i % 7 {
	case 1:
		row[1], row[2] = nil, nil
	case 2:
		row[3], row[4] = nil, nil
	case 3:
		row[5] = nil
	case 4:
		row[5] = ""
	}
	if i%11 == 5 {
		row[2] = 1.5 // a float, stored exactly at scale 10
	}
	return row
}

// sampleRows yields n rows, reusing one slice as a driver would.
func sampleRows(n int) Rows {
	return func(yield func([]any, error) bool) {
		buf := make([]any, len(loadColumns))
		for i := range n {
			copy(buf, sampleRow(i))
			if !yield(buf, nil) {
				return
			}
		}
	}
}

// want returns the text the warehouse must give back for row i's values.
func wantRow(i int) []string {
	row := sampleRow(i)
	out := make([]string, len(row))
	for j, v := range row {
		if v == nil {
			out[j] = "NULL"
			continue
		}
		c, err := canonical(loadColumns[j].Type, v)
		if err != nil {
			panic(err)
		}
		switch x := c.(type) {
		case time.Time:
			out[j] = x.UTC().Format(time.RFC3339Nano)
		default:
			out[j] = fmt.Sprint(x)
		}
	}
	return out
}

// checkLoaded reads the table back in ID order and compares every value.
func checkLoaded(t *testing.T, w Warehouse, tbl Table, n int) {
	t.Helper()
	q := fmt.Sprintf("SELECT %s, %s, CAST(%s AS VARCHAR), %s, %s, %s FROM %s ORDER BY %[1]s",
		w.Quote("ID"), w.Quote("FLAG"), w.Quote("AMOUNT"), w.Quote("DAY"), w.Quote("AT"), w.Quote("NOTE"), Qualify(w, tbl))
	inTx(t, w, func(ctx context.Context, tx Tx) {
		rows, err := tx.Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		i := 0
		for rows.Next() {
			var id sql.NullInt64
			var flag sql.NullBool
			var amount, note sql.NullString
			var day, at sql.NullTime
			if err := rows.Scan(&id, &flag, &amount, &day, &at, &note); err != nil {
				t.Fatal(err)
			}
			got := []string{show(id.Int64, id.Valid), show(flag.Bool, flag.Valid), show(amount.String, amount.Valid),
				showTime(day), showTime(at), show(note.String, note.Valid)}
			if want := wantRow(i); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("row %d read back as %q, want %q", i, got, want)
			}
			i++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if i != n {
			t.Fatalf("read %d rows, want %d", i, n)
		}
	})
}

func show(v any, valid bool) string {
	if !valid {
		return "NULL"
	}
	return fmt.Sprint(v)
}

func showTime(t sql.NullTime) string {
	if !t.Valid {
		return "NULL"
	}
	return t.Time.UTC().Format(time.RFC3339Nano)
}

// Both loaders of each warehouse — its fast path and the multi-row INSERTs
// the cloud warehouses use — store every value exactly.
func TestBulkLoadRoundTrip(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		ctx := context.Background()
		for _, c := range []struct {
			name string
			rows int
			load func(tx Tx, tbl Table, rows Rows) (int64, error)
		}{
			{"bulk", 100_000, func(tx Tx, tbl Table, rows Rows) (int64, error) {
				return tx.BulkLoad(ctx, tbl, loadColumns, rows)
			}},
			{"insert", 5_000, func(tx Tx, tbl Table, rows Rows) (int64, error) {
				return insertRows(ctx, tx.(*sqlTx).q, w, tbl, loadColumns, rows)
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				tbl := w.Table(testSchema, "LOAD_"+strings.ToUpper(c.name))
				mustExec(t, w, w.CreateTable(tbl, loadColumns))
				inTx(t, w, func(_ context.Context, tx Tx) {
					n, err := c.load(tx, tbl, sampleRows(c.rows))
					if err != nil || n != int64(c.rows) {
						t.Fatalf("loaded %d rows, %v; want %d", n, err, c.rows)
					}
				})
				checkLoaded(t, w, tbl, c.rows)
			})
		}
	})
}

// A bulk load that fails inside a transaction rolls back with it: the rows
// the table had before are still there, and none of the new ones.
func TestBulkLoadFailureRollsBack(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		ctx := context.Background()
		tbl := w.Table(testSchema, "KEEP")
		mustExec(t, w, w.CreateTable(tbl, loadColumns))
		seed(t, w, tbl, 3)

		for _, c := range []struct {
			name string
			rows Rows
			want string
		}{
			{"source error", func(yield func([]any, error) bool) {
				for i := 100; i < 5_000; i++ {
					if !yield(sampleRow(i), nil) {
						return
					}
				}
				yield(nil, errors.New("the Engine DB went away"))
			}, "the Engine DB went away"},
			{"bad value", func(yield func([]any, error) bool) {
				for i := 100; i < 5_000; i++ {
					if !yield(sampleRow(i), nil) {
						return
					}
				}
				bad := sampleRow(1)
				bad[0] = "not a number"
				yield(bad, nil)
			}, `column ID: cannot store not a number (string) as a BIGINT`},
		} {
			t.Run(c.name, func(t *testing.T) {
				tx, err := w.Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.Exec(ctx, w.Truncate(tbl)); err != nil {
					t.Fatal(err)
				}
				_, err = tx.BulkLoad(ctx, tbl, loadColumns, c.rows)
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("bulk load error %v, want %q", err, c.want)
				}
				if err := tx.Rollback(); err != nil {
					t.Fatal(err)
				}
				checkLoaded(t, w, tbl, 3)
			})
		}
	})
}

// seed loads the first n sample rows into tbl and commits.
func seed(t *testing.T, w Warehouse, tbl Table, n int) {
	t.Helper()
	inTx(t, w, func(ctx context.Context, tx Tx) {
		if _, err := tx.BulkLoad(ctx, tbl, loadColumns, sampleRows(n)); err != nil {
			t.Fatal(err)
		}
	})
}

// Table names that need quoting round-trip through every statement and
// look-up, and a bulk load into them.
func TestOddTableNames(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		ctx := context.Background()
		for _, name := range []string{"Odd Name", "MixedCase", `quote"inside`, "it's"} {
			tbl := w.Table(testSchema, name)
			mustExec(t, w, w.CreateTable(tbl, loadColumns[:5]), w.AddColumn(tbl, loadColumns[5]))
			seed(t, w, tbl, 3)
			cols, err := w.Columns(ctx, testSchema, name)
			if err != nil || len(cols) != 6 || cols[5].Name != "NOTE" {
				t.Fatalf("%s: columns %v, %v", name, cols, err)
			}
			checkLoaded(t, w, tbl, 3)
			mustExec(t, w, w.Truncate(tbl))
			if n := queryValue[int64](t, w, "SELECT COUNT(*) FROM "+Qualify(w, tbl)); n != 0 {
				t.Fatalf("%s holds %d rows after TRUNCATE", name, n)
			}
		}
	})
}

// A column the bulk load leaves out gets NULL: a mirror keeps columns the
// Engine DB table no longer has.
func TestBulkLoadLeavesOtherColumnsNull(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		tbl := w.Table(testSchema, "WIDER")
		mustExec(t, w, w.CreateTable(tbl, append([]Column{{"GONE", String}}, loadColumns...)))
		seed(t, w, tbl, 10)
		if n := queryValue[int64](t, w, "SELECT COUNT(*) FROM "+Qualify(w, tbl)+" WHERE "+w.Quote("GONE")+" IS NULL AND "+w.Quote("ID")+" IS NOT NULL"); n != 10 {
			t.Fatalf("%d rows with GONE null, want 10", n)
		}
	})
}

func TestCanonicalValues(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		t    Type
		in   any
		want string
	}{
		{Decimal, 1.5, "1.5000000000"},
		{Decimal, "-0.00000000005", "-0.0000000001"},
		{Decimal, "0.00000000004", "0.0000000000"},
		{Decimal, int64(-12), "-12.0000000000"},
		{Decimal, big.NewRat(1, 3), "0.3333333333"},
		{Decimal, []byte("12.34"), "12.3400000000"},
		{BigInt, 3.0, "3"},
		{BigInt, "42", "42"},
		{Boolean, int64(1), "true"},
		{String, map[string]any{"a": []any{1.5, "x"}}, `{"a":[1.5,"x"]}`},
		{String, int32(7), "7"},
		{Timestamp, time.Date(2020, 1, 2, 8, 34, 5, 123456789, kolkata), "2020-01-02 03:04:05.123456 +0000 UTC"},
		{Date, time.Date(2020, 1, 2, 23, 0, 0, 0, kolkata), "2020-01-02 00:00:00 +0000 UTC"},
	} {
		got, err := canonical(c.t, c.in)
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("canonical(%s, %v) = %v, %v; want %s", c.t, c.in, got, err, c.want)
		}
	}
	for _, c := range []struct {
		t  Type
		in any
	}{{Boolean, int64(2)}, {BigInt, 1.5}, {Decimal, "abc"}, {Decimal, "1e40"}, {Date, "2020-01-01"}, {Timestamp, int64(0)}, {String, struct{}{}}} {
		if got, err := canonical(c.t, c.in); err == nil {
			t.Errorf("canonical(%s, %v) = %v, want an error", c.t, c.in, got)
		}
	}
}

// Every session is pinned to UTC, whatever the server's default.
func TestSessionsAreUTC(t *testing.T) {
	t.Parallel()
	eachReal(t, func(t *testing.T, w Warehouse) {
		if tz := queryValue[string](t, w, "SELECT current_setting('TimeZone')"); tz != "UTC" {
			t.Fatalf("session time zone %q, want UTC", tz)
		}
	})
}
