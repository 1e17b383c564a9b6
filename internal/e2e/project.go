package e2e

import (
	"bytes"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the DuckDB database/sql driver, to read the warehouse file
	_ "github.com/jackc/pgx/v5/stdlib" // the pgx database/sql driver

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Pair is the two databases of a project: its Engine DB and its warehouse.
type Pair struct {
	Engine    engine.Kind
	Warehouse warehouse.Kind
	// SameDatabase puts a PostgreSQL warehouse in the PostgreSQL Engine
	// DB's own database (in the schema main), where script loads publish
	// in the transaction recording the attempt.
	SameDatabase bool
}

// The pairs of databases the black-box tests run on.
var (
	SQLiteDuckDB     = Pair{engine.SQLite, warehouse.DuckDB, false}
	SQLitePostgres   = Pair{engine.SQLite, warehouse.Postgres, false}
	PostgresPostgres = Pair{engine.Postgres, warehouse.Postgres, false}
	// Pairs lists them, the default pair first.
	Pairs = []Pair{SQLiteDuckDB, SQLitePostgres, PostgresPostgres}
	// OnePostgres is a PostgreSQL warehouse in the Engine DB's database.
	OnePostgres = Pair{engine.Postgres, warehouse.Postgres, true}
)

// String names the pair as its subtests are named: sqlite+duckdb, or
// postgres+postgres-one-database.
func (p Pair) String() string {
	s := string(p.Engine) + "+" + string(p.Warehouse)
	if p.SameDatabase {
		s += "-one-database"
	}
	return s
}

// usesPostgres reports whether either database is PostgreSQL.
func (p Pair) usesPostgres() bool {
	return p.Engine == engine.Postgres || p.Warehouse == warehouse.Postgres
}

// EachPair runs body as a parallel subtest per pair of Pairs, named by the
// pair. Pairs using PostgreSQL are skipped without a test server (and fail
// in CI, see enginetest.AdminURL).
func EachPair(t *testing.T, body func(t *testing.T, pair Pair)) {
	t.Helper()
	EachOf(t, Pairs, body)
}

// EachOf is EachPair over the pairs given.
func EachOf(t *testing.T, pairs []Pair, body func(t *testing.T, pair Pair)) {
	t.Helper()
	for _, pair := range pairs {
		t.Run(pair.String(), func(t *testing.T) {
			t.Parallel()
			if pair.usesPostgres() {
				enginetest.AdminURL(t)
			}
			body(t, pair)
		})
	}
}

// EachEngine runs body as a subtest per Engine DB dialect, named by the
// dialect, for tests whose warehouse is the default DuckDB file.
func EachEngine(t *testing.T, body func(t *testing.T, kind engine.Kind)) {
	t.Helper()
	for _, k := range enginetest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			if k == engine.Postgres {
				enginetest.AdminURL(t)
			}
			body(t, k)
		})
	}
}

// Schema is the warehouse schema of every project: DuckDB's main, and a
// schema main the harness creates in a PostgreSQL warehouse, so that a
// test's SQL names main.<table> on every pair.
const Schema = "main"

// Project is a temporary project folder with a craft-connector.yml, whose
// commands run the built binary.
type Project struct {
	T testing.TB
	// Dir is the project folder.
	Dir string
	// Env is added to the environment of every command: the secrets the
	// configuration names.
	Env []string
	// Pair is the project's databases.
	Pair Pair
	// Engine opens the Engine DB.
	Engine engine.Options
	// WarehouseURL is a PostgreSQL warehouse's URL; empty for DuckDB.
	WarehouseURL string

	mu        sync.Mutex
	warehouse *sql.DB // the PostgreSQL warehouse, opened at first use
}

// Result is what one command printed and its exit status.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// New writes a project on fresh databases of the pair: a SQLite Engine DB
// at state/engine.db or a database of its own on the test PostgreSQL
// server; a DuckDB warehouse at warehouse.duckdb or another database of its
// own, holding the schema main. extra is appended to the YAML. Its API
// listens on a free loopback port, so that servers run side by side.
func New(t testing.TB, pair Pair, extra string) *Project {
	t.Helper()
	return NewOn(t, pair, "", "", extra)
}

// NewOn is New on given PostgreSQL databases, such as those of a server the
// test stops and starts (enginetest.Cluster): engineURL, when not empty, is
// the Engine DB of a PostgreSQL pair, and warehouseURL, when not empty, the
// warehouse database of a pair with a PostgreSQL warehouse, in which the
// schema main is created. The others are made as New makes them.
func NewOn(t testing.TB, pair Pair, engineURL, warehouseURL, extra string) *Project {
	t.Helper()
	p := &Project{T: t, Dir: t.TempDir(), Pair: pair}
	var engineBlock string
	if pair.Engine == engine.SQLite {
		engineBlock = "    jdbc_url: jdbc:sqlite:state/engine.db\n    schema: main\n"
		p.Engine = engine.Options{Kind: engine.SQLite, Path: filepath.Join(p.Dir, "state", "engine.db")}
	} else {
		raw := engineURL
		if raw == "" {
			raw = enginetest.NewPGDatabase(t)
		}
		host, path, user, pw := pgParts(t, raw)
		engineBlock = fmt.Sprintf("    jdbc_url: jdbc:postgresql://%s%s?sslmode=disable\n    schema: public\n    auth_mode: password\n    user: %s\n    secret: ENGINE_SECRET\n",
			host, path, user)
		p.Env = append(p.Env, "ENGINE_SECRET="+pw)
		p.Engine = engine.Options{Kind: engine.Postgres, DSN: raw, Schema: "public"}
	}
	section := DuckDBWarehouse
	if pair.Warehouse == warehouse.Postgres {
		switch {
		case warehouseURL != "":
		case pair.SameDatabase && pair.Engine == engine.Postgres:
			warehouseURL = p.Engine.DSN
		default:
			warehouseURL = enginetest.NewPGDatabase(t)
		}
		var env []string
		section, env = pgWarehouseSection(t, warehouseURL, Schema)
		p.WarehouseURL = warehouseURL
		p.Env = append(p.Env, env...)
		db := open(t, "pgx", p.WarehouseURL)
		MustExec(t, db, "CREATE SCHEMA "+Schema)
		db.Close()
	}
	p.Write("craft-connector.yml", ConnectorYAML(engineBlock, section)+extra)
	return p
}

// DuckDBWarehouse is the Warehouse section of a DuckDB file in the project.
const DuckDBWarehouse = "Warehouse:\n  Name: DuckDB\n  dev:\n    jdbc_url: jdbc:duckdb:warehouse.duckdb\n    schema: main\n"

// ConnectorYAML is a craft-connector.yml in local mode whose secrets come
// from the environment, with the Engine's dev profile block engineBlock (its
// lines indented four spaces) and the Warehouse section. Its API listens on
// a free loopback port.
func ConnectorYAML(engineBlock, warehouseSection string) string {
	return "Secrets:\n  Source_type: environment\n  Profile: dev\n\nOrchestration:\n  Mode: local\n  Api_address: 127.0.0.1:0\n\n" +
		"Engine:\n  dev:\n" + engineBlock + "\n" + warehouseSection
}

// PGWarehouse creates a database of its own on the test PostgreSQL server
// and returns a Warehouse section naming it with the schema, the
// environment its secret needs, and its URL.
func PGWarehouse(t testing.TB, schema string) (section string, env []string, raw string) {
	t.Helper()
	raw = enginetest.NewPGDatabase(t)
	section, env = pgWarehouseSection(t, raw, schema)
	return section, env, raw
}

// pgWarehouseSection is the Warehouse section of the PostgreSQL database
// at raw with the schema, and the environment its secret needs.
func pgWarehouseSection(t testing.TB, raw, schema string) (section string, env []string) {
	t.Helper()
	host, path, user, pw := pgParts(t, raw)
	section = fmt.Sprintf("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: jdbc:postgresql://%s%s?sslmode=disable\n    schema: %s\n    auth_mode: password\n    user: %s\n    secret: WAREHOUSE_SECRET\n",
		host, path, schema, user)
	return section, []string{"WAREHOUSE_SECRET=" + pw}
}

// pgParts splits a PostgreSQL URL into what a craft-connector.yml names.
func pgParts(t testing.TB, raw string) (host, path, user, password string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	password, _ = u.User.Password()
	return u.Host, u.Path, u.User.Username(), password
}

// Write writes a file of the project, creating its folders.
func (p *Project) Write(name, text string) {
	p.T.Helper()
	path := filepath.Join(p.Dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.T.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		p.T.Fatal(err)
	}
}

// Config returns the project's craft-connector.yml.
func (p *Project) Config() string {
	p.T.Helper()
	b, err := os.ReadFile(filepath.Join(p.Dir, "craft-connector.yml"))
	if err != nil {
		p.T.Fatal(err)
	}
	return string(b)
}

// EditConfig replaces the first old in the project's craft-connector.yml,
// which must hold it, with new.
func (p *Project) EditConfig(old, new string) {
	p.T.Helper()
	yml := p.Config()
	if !strings.Contains(yml, old) {
		p.T.Fatalf("craft-connector.yml lacks %q", old)
	}
	p.Write("craft-connector.yml", strings.Replace(yml, old, new, 1))
}

// WithWarehouse replaces the Warehouse section, keeping any Cloning section
// after it, and adds env to the commands' environment.
func (p *Project) WithWarehouse(section string, env []string) {
	p.T.Helper()
	yml := p.Config()
	i := strings.Index(yml, "Warehouse:\n")
	j := strings.Index(yml, "Cloning:")
	rest := ""
	if j > i {
		rest = yml[j:]
	}
	p.Write("craft-connector.yml", yml[:i]+section+rest)
	p.Env = append(p.Env, env...)
}

// Orchestration adds settings (lines indented two spaces) to the
// Orchestration section.
func (p *Project) Orchestration(lines string) {
	p.T.Helper()
	p.Write("craft-connector.yml", strings.Replace(p.Config(), "  Mode: local\n", "  Mode: local\n"+lines, 1))
}

// Command returns the command that runs the binary in the project folder
// with the project's environment and env.
func (p *Project) Command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(Binary(p.T), args...)
	cmd.Dir = p.Dir
	cmd.Env = append(append(append(os.Environ(), "ETL_CRAFT_CONFIG=", "ETL_CRAFT_FAULT="), p.Env...), env...)
	return cmd
}

// Run runs the binary with extra environment variables and arguments.
func (p *Project) Run(env []string, args ...string) Result {
	p.T.Helper()
	cmd := p.Command(env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.T.Fatalf("running etl-craft %s: %v", strings.Join(args, " "), err)
	}
	return Result{Stdout: out.String(), Stderr: errb.String(), Code: code}
}

// OK runs the binary and fails the test unless it exits 0.
func (p *Project) OK(args ...string) Result {
	p.T.Helper()
	r := p.Run(nil, args...)
	if r.Code != 0 {
		p.T.Fatalf("etl-craft %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r
}

// WantExit fails the test unless r exited with the code and its stderr
// contains the text.
func WantExit(t testing.TB, r Result, code int, text string) {
	t.Helper()
	if r.Code != code || !strings.Contains(r.Stderr, text) {
		t.Fatalf("exit %d, stderr %q; want exit %d with %q", r.Code, r.Stderr, code, text)
	}
}

// Register writes a project migration and applies it.
func (p *Project) Register(name, sql string) {
	p.T.Helper()
	p.Write("migrations/"+name+".sql", sql)
	p.OK("migrate")
}

// DB opens the project's Engine DB, closed at the end of the test.
func (p *Project) DB() *engine.DB {
	p.T.Helper()
	return enginetest.OpenWith(p.T, p.Engine)
}

// WarehouseRows returns the rows of a query on the warehouse, each as its
// columns' text joined by spaces (NULL for a null). A DuckDB file is opened
// read-only for the query and closed again, so no process of the binary
// may be writing it.
func (p *Project) WarehouseRows(query string) []string {
	p.T.Helper()
	db, done := p.warehouseDB(true)
	defer done()
	return QueryRows(p.T, db, query)
}

// WarehouseExec runs statements on the warehouse, each committing on its
// own. A DuckDB file is opened (created when missing) and closed again,
// so no process of the binary may be using it.
func (p *Project) WarehouseExec(stmts ...string) {
	p.T.Helper()
	db, done := p.warehouseDB(false)
	defer done()
	MustExec(p.T, db, stmts...)
}

// warehouseDB returns the warehouse and what to call when done with it: a
// DuckDB file is opened for each use, a PostgreSQL pool once per project.
func (p *Project) warehouseDB(readOnly bool) (*sql.DB, func()) {
	p.T.Helper()
	if p.WarehouseURL == "" {
		dsn := filepath.Join(p.Dir, "warehouse.duckdb")
		if readOnly {
			dsn += "?access_mode=read_only"
		}
		db := open(p.T, "duckdb", dsn)
		return db, func() { db.Close() }
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.warehouse == nil {
		p.warehouse = open(p.T, "pgx", p.WarehouseURL)
		p.T.Cleanup(func() { p.warehouse.Close() })
	}
	return p.warehouse, func() {}
}

// open opens a database/sql handle, failing the test on error.
func open(t testing.TB, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	return db
}
