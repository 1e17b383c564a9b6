// Package enginetest gives tests real Engine DBs: a SQLite file in a
// temporary folder, and a brand-new PostgreSQL database on the server that
// scripts/test.sh starts (optionally a copy of a template database), dropped
// when the test ends. Each runs one test body
// on both dialects, the way a driver conformance suite does.
package enginetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/testenv"
)

// PGVariable names the environment variable holding an administrator URL of
// the test PostgreSQL server, such as postgres://postgres:pw@127.0.0.1:5432/postgres.
const PGVariable = "ETL_CRAFT_TEST_PG"

// Kinds lists the Engine DB dialects every conformance test runs on.
var Kinds = []engine.Kind{engine.SQLite, engine.Postgres}

// Each runs body once per dialect, as subtests named sqlite and postgres,
// each with a fresh empty Engine DB.
func Each(t *testing.T, body func(t *testing.T, db *engine.DB)) {
	t.Helper()
	for _, k := range Kinds {
		t.Run(string(k), func(t *testing.T) {
			body(t, Open(t, k))
		})
	}
}

// EachKind runs body once per dialect with the options of a fresh empty
// Engine DB, for tests that open it themselves (or through the binary).
func EachKind(t *testing.T, body func(t *testing.T, opts engine.Options)) {
	t.Helper()
	for _, k := range Kinds {
		t.Run(string(k), func(t *testing.T) {
			body(t, NewOptions(t, k))
		})
	}
}

// Open returns a fresh empty Engine DB of the dialect, closed at the end of
// the test.
func Open(t testing.TB, k engine.Kind) *engine.DB {
	t.Helper()
	return OpenWith(t, NewOptions(t, k))
}

// OpenWith opens the Engine DB of opts, closed at the end of the test.
func OpenWith(t testing.TB, opts engine.Options) *engine.DB {
	t.Helper()
	db, err := engine.Open(context.Background(), opts)
	if err != nil {
		t.Fatalf("opening the %s Engine DB: %v", opts.Kind, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// NewOptions creates a fresh empty database of the dialect and returns the
// options that open it.
func NewOptions(t testing.TB, k engine.Kind) engine.Options {
	t.Helper()
	if k == engine.SQLite {
		return engine.Options{Kind: engine.SQLite, Path: filepath.Join(t.TempDir(), "engine.db")}
	}
	u := NewPGDatabase(t)
	return engine.Options{Kind: engine.Postgres, DSN: u, Schema: "public"}
}

// AdminURL returns the test server's administrator URL. Without one the test
// is skipped, unless CI is set, where it fails: CI must run every test.
func AdminURL(t testing.TB) string {
	t.Helper()
	return testenv.Require(t, PGVariable, "run scripts/test.sh, which starts PostgreSQL, for the PostgreSQL tests")
}

// NewPGDatabase creates a database of its own for the test and returns its
// URL; the database is dropped when the test ends.
func NewPGDatabase(t testing.TB) string {
	t.Helper()
	return NewPGDatabaseFrom(t, "")
}

// NewPGDatabaseFrom creates a database of its own for the test as a copy of
// the template database (PostgreSQL's template1 when template is empty) and
// returns its URL; the database is dropped when the test ends. The template
// must have no open connection while it is copied.
func NewPGDatabaseFrom(t testing.TB, template string) string {
	t.Helper()
	admin := AdminURL(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := "etl_craft_test_" + hex.EncodeToString(b)
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	create := "CREATE DATABASE " + name
	if template != "" {
		create += " TEMPLATE " + template
	}
	if _, err := db.Exec(create); err != nil {
		t.Fatalf("creating test database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err != nil {
			return
		}
		defer db.Close()
		db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	})
	return DatabaseURL(t, admin, name)
}

// DatabaseURL returns the admin URL pointed at another database.
func DatabaseURL(t testing.TB, admin, database string) string {
	t.Helper()
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("bad %s: %v", PGVariable, err)
	}
	u.Path = "/" + database
	return u.String()
}

// Plain opens a connection that is not an etl-craft engine connection: no
// guard functions on SQLite, no actor settings on PostgreSQL. Tests use it to
// show what a BI tool or a person with a SQL shell can and cannot do.
func Plain(t testing.TB, opts engine.Options) *sql.DB {
	t.Helper()
	var db *sql.DB
	var err error
	if opts.Kind == engine.SQLite {
		db, err = sql.Open("sqlite3", opts.Path+"?_busy_timeout=10000&_foreign_keys=1")
	} else {
		db, err = sql.Open("pgx", opts.DSN+searchPath(opts.DSN, opts.Schema))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func searchPath(dsn, schema string) string {
	if schema == "" {
		return ""
	}
	sep := "?"
	if u, err := url.Parse(dsn); err == nil && u.RawQuery != "" {
		sep = "&"
	}
	return sep + "search_path=" + url.QueryEscape(schema)
}

// Client returns the path of a command-line client the tests drive, such as
// psql or sqlite3: from PATH, or from the PostgreSQL binaries folder
// scripts/test.sh names in ETL_CRAFT_TEST_PG_BIN. A missing client fails
// the test.
func Client(t testing.TB, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if dir := os.Getenv("ETL_CRAFT_TEST_PG_BIN"); dir != "" {
		if p := filepath.Join(dir, name); fileExists(p) {
			return p
		}
	}
	t.Fatalf("%s is not installed: scripts/test.sh installs the clients the tests drive", name)
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Querier is a database Rows reads: an Engine DB, or any database/sql
// handle.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Rows runs a query on a database and returns each row as its values
// joined by "|": NULL as NULL, timestamps and dates as the Engine DB's UTC
// text.
func Rows(t testing.TB, q Querier, query string, args ...any) []string {
	t.Helper()
	return JoinedRows(t, q, "|", query, args...)
}

// JoinedRows is Rows with the values joined by sep.
func JoinedRows(t testing.TB, q Querier, sep, query string, args ...any) []string {
	t.Helper()
	rows, err := q.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case nil:
				parts[i] = "NULL"
			case time.Time:
				parts[i] = engine.TimeText(x)
			case []byte:
				parts[i] = string(x)
			default:
				parts[i] = fmt.Sprint(x)
			}
		}
		out = append(out, strings.Join(parts, sep))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
