// Package engine owns the connection to the Engine DB: opening it, the
// dialect differences between SQLite and PostgreSQL, and the transactions that
// carry the acting actor into the database's write guards.
//
// Queries are written once with PostgreSQL-style placeholders ($1, $2, …);
// each dialect rebinds them. Every write goes through DB.Tx, which sets the
// actor, purpose and migration of the context at the start of the
// transaction, and, on SQLite, holds the process's writer lock.
package engine

import (
	"context"
	"crypto/tls"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// Kind names an Engine DB dialect.
type Kind string

// The Engine DB dialects.
const (
	SQLite   Kind = "sqlite"
	Postgres Kind = "postgres"
)

// Label returns the dialect's display name: SQLite or PostgreSQL.
func (k Kind) Label() string {
	if k == Postgres {
		return "PostgreSQL"
	}
	return "SQLite"
}

// Options says which Engine DB to open.
type Options struct {
	Kind Kind
	// Path is the SQLite database file, absolute. Its folder is created.
	Path string
	// DSN is the PostgreSQL connection string, without the password.
	DSN string
	// Password returns the PostgreSQL password; it is read for every new
	// connection. Nil means none.
	Password func() (string, error)
	// ClientCert returns the TLS client certificate PostgreSQL logins
	// present (auth_mode key_file); it is read once, when the Engine DB is
	// opened. Nil means none.
	ClientCert func() (tls.Certificate, error)
	// Schema is the PostgreSQL schema holding the Engine DB; it must exist.
	// SQLite ignores it.
	Schema string
	// ConnectTimeout bounds each PostgreSQL connection attempt; zero means 10 s.
	ConnectTimeout time.Duration
	// BusyTimeout is how long a write waits for a lock another writer
	// holds before it fails (exit 12): on SQLite the whole wait of a write
	// transaction for the database, in this process's queue and for
	// another process's write lock together; on PostgreSQL every lock wait
	// of a BoundedTx. Zero means DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Observer, when set, is told of every query, statement and write
	// transaction of the DB and of its Tx (not of the *sql.DB SQL gives).
	Observer Observer
}

// maxIdleConns is how many unused connections an Engine DB keeps open.
const maxIdleConns = 32

// DB is an open Engine DB.
type DB struct {
	sql     *sql.DB
	d       dialect
	opts    Options
	writers *writerLock
	counts  *counters
}

// Open connects to the Engine DB and checks that it is reachable. A SQLite
// file and its folder are created; a PostgreSQL schema must already exist.
// Failures are configuration errors (exit 3).
func Open(ctx context.Context, opts Options) (*DB, error) {
	d := opts.Kind.dialect()
	if d == nil {
		return nil, exit.Errorf(exit.Configuration, "%q is not a supported Engine DB", string(opts.Kind))
	}
	db, err := d.open(ctx, opts)
	if err != nil {
		return nil, err
	}
	// A server runs many runs at once, each reading: keep their connections
	// for the next statement instead of opening one per statement.
	db.SetMaxIdleConns(maxIdleConns)
	db.SetConnMaxIdleTime(time.Minute)
	e := &DB{sql: db, d: d, opts: opts, writers: newWriterLock(d.capabilities(), opts.busyTimeout()),
		counts: &counters{}}
	if err := d.check(ctx, e); err != nil {
		db.Close()
		return nil, err
	}
	return e, nil
}

// Kind returns the Engine DB's dialect.
func (db *DB) Kind() Kind { return db.d.kind() }

// Capabilities are what an Engine DB dialect does differently, for the
// code above the engine to ask instead of naming the dialect.
type Capabilities struct {
	// SingleWriter means one write transaction at a time in the whole
	// database (SQLite): Tx queues the process's writers on an in-process
	// lock.
	SingleWriter bool
	// CopyOut means DB.CopyOut writes a query's rows in PostgreSQL's COPY
	// text format (PostgreSQL).
	CopyOut bool
	// Server means the Engine DB is a schema of a PostgreSQL server, which
	// other connections (a warehouse's) may reach too; a SQLite file is not.
	Server bool
	// Events means Tx.Notify and DB.Listen carry EventsChannel's
	// notifications (PostgreSQL LISTEN/NOTIFY).
	Events bool
	// SharedSnapshot means one connection's read snapshot can be taken by
	// others (PostgreSQL's pg_export_snapshot and SET TRANSACTION SNAPSHOT).
	SharedSnapshot bool
}

// Capabilities returns what the Engine DB's dialect can do.
func (db *DB) Capabilities() Capabilities { return db.d.capabilities() }

// dialect returns the implementation of the kind; nil for an unknown kind.
func (k Kind) dialect() dialect {
	switch k {
	case SQLite:
		return sqliteDialect{}
	case Postgres:
		return postgresDialect{}
	}
	return nil
}

// Capabilities returns what an Engine DB of the kind can do, before one is
// opened; an unknown kind can do nothing.
func (k Kind) Capabilities() Capabilities {
	if d := k.dialect(); d != nil {
		return d.capabilities()
	}
	return Capabilities{}
}

// ScanDialect is the SQL lexer's dialect for the kind's statements.
func (k Kind) ScanDialect() sqlscan.Dialect {
	if k == Postgres {
		return sqlscan.Postgres
	}
	return sqlscan.SQLite
}

// Options returns the options the DB was opened with.
func (db *DB) Options() Options { return db.opts }

// SQL returns the underlying database handle, for statements that must not
// be rebound (migrations) and for tests.
func (db *DB) SQL() *sql.DB { return db.sql }

// Close closes every connection.
func (db *DB) Close() error { return db.sql.Close() }

// Rebind turns $N placeholders into the dialect's own.
func (db *DB) Rebind(query string) string { return db.d.rebind(query) }

// TimeArg returns the value to bind for a timestamp: UTC text in the fixed
// format on SQLite, the time itself on PostgreSQL.
func (db *DB) TimeArg(t time.Time) any { return db.d.timeArg(t) }

// IsUniqueViolation reports whether err is a unique-constraint violation.
func (db *DB) IsUniqueViolation(err error) bool { return db.d.isUniqueViolation(err) }

// IsBusy reports whether err says a write waited the whole busy timeout
// for a lock another writer held: another process's on SQLite, another
// session's on PostgreSQL. Such an error IsUnavailable too.
func (db *DB) IsBusy(err error) bool { return isBusyWait(err) || db.d.isBusy(err) }

// IsUnavailable reports whether err says the Engine DB could not be reached
// or used at all (its server down, refusing connections or shutting down, its
// file unopenable or locked past the busy timeout), rather than refusing
// the statement: what a caller may retry once the database is back.
func (db *DB) IsUnavailable(err error) bool {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) || db.IsBusy(err) || db.d.isUnavailable(err)
}

// Schema returns the schema that holds the Engine DB tables: the configured
// PostgreSQL schema, or "main" on SQLite.
func (db *DB) Schema() string {
	if db.Kind() == Postgres {
		return db.opts.Schema
	}
	return "main"
}

// QueryContext runs a read query outside any transaction.
func (db *DB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	db.counts.reads.Add(1)
	start := time.Now()
	rows, err := db.sql.QueryContext(ctx, db.d.rebind(query), args...)
	observe(db.opts.Observer, OpQuery, start, err)
	return rows, err
}

// QueryRowContext runs a read query returning at most one row.
func (db *DB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	db.counts.reads.Add(1)
	start := time.Now()
	row := db.sql.QueryRowContext(ctx, db.d.rebind(query), args...)
	observe(db.opts.Observer, OpQuery, start, row.Err())
	return row
}

// ExecContext runs a statement outside a transaction. Writes to guarded
// tables must go through Tx instead.
func (db *DB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	db.counts.reads.Add(1)
	start := time.Now()
	res, err := db.sql.ExecContext(ctx, db.d.rebind(query), args...)
	observe(db.opts.Observer, OpExec, start, err)
	return res, err
}

// Querier is what DB and Tx share: rebinding query methods.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Tx is an Engine DB transaction carrying its actor.
type Tx struct {
	tx    *sql.Tx
	d     dialect
	state *connState // SQLite only: the connection's guard-function state
	n     *counters
	obs   Observer
}

// QueryContext runs a query in the transaction.
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	tx.beforeStatement()
	start := time.Now()
	rows, err := tx.tx.QueryContext(ctx, tx.d.rebind(query), args...)
	observe(tx.obs, OpQuery, start, err)
	return rows, err
}

// QueryRowContext runs a query returning at most one row.
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	tx.beforeStatement()
	start := time.Now()
	row := tx.tx.QueryRowContext(ctx, tx.d.rebind(query), args...)
	observe(tx.obs, OpQuery, start, row.Err())
	return row
}

// ExecContext runs a statement in the transaction.
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tx.beforeStatement()
	start := time.Now()
	res, err := tx.tx.ExecContext(ctx, tx.d.rebind(query), args...)
	observe(tx.obs, OpExec, start, err)
	return res, err
}

// ExecRaw runs a statement exactly as written: no placeholder is rebound and
// nothing is bound. Migrations use it.
func (tx *Tx) ExecRaw(ctx context.Context, statement string) error {
	tx.beforeStatement()
	_, err := tx.tx.ExecContext(ctx, statement)
	return err
}

// Kind returns the transaction's dialect.
func (tx *Tx) Kind() Kind { return tx.d.kind() }

// TimeArg returns the value to bind for a timestamp in this dialect.
func (tx *Tx) TimeArg(t time.Time) any { return tx.d.timeArg(t) }

// JSONParam returns the placeholder $n of a JSON value bound as text, for a
// JSON column: cast to JSONB on PostgreSQL, as it is on SQLite.
func (tx *Tx) JSONParam(n int) string { return tx.d.jsonParam(n) }

// beforeStatement counts a statement of the transaction and, on SQLite,
// forgets the inserts the previous one made.
func (tx *Tx) beforeStatement() {
	tx.n.statements.Add(1)
	if tx.state != nil {
		tx.state.clearInserts()
	}
}

// Scope is the guard context of a transaction: who acts, why, and which
// PROJECT migration (if any) is running.
type Scope struct {
	Actor     actor.Actor
	Purpose   string
	Migration string
}

type migrationKey struct{}
type purposeKey struct{}

// WithMigration returns a context whose transactions record the PROJECT
// migration file that makes their changes.
func WithMigration(ctx context.Context, file string) context.Context {
	return context.WithValue(ctx, migrationKey{}, file)
}

// WithPurpose returns a context whose transactions carry a purpose, such as
// "retention" (ForPurge), that the guards read.
func WithPurpose(ctx context.Context, purpose string) context.Context {
	return context.WithValue(ctx, purposeKey{}, purpose)
}

// ForPurge returns a context whose transactions are a purge's (purpose
// retention): the guards let them delete history, the append-only rows and
// the terminal attempts, and never update it; and their deletions are not
// logged key by key for cloning, since the purge logs the ranges of keys
// it deleted (ChangeLog.LogRange).
func ForPurge(ctx context.Context) context.Context { return WithPurpose(ctx, retentionPurpose) }

// ScopeOf returns the guard context of ctx.
func ScopeOf(ctx context.Context) Scope {
	s := Scope{Actor: actor.From(ctx)}
	s.Migration, _ = ctx.Value(migrationKey{}).(string)
	s.Purpose, _ = ctx.Value(purposeKey{}).(string)
	return s
}

// Tx runs fn in one write transaction that carries the context's actor,
// purpose and migration. It commits when fn returns nil and rolls back
// otherwise. On a SingleWriter Engine DB (SQLite, whose transactions all
// begin IMMEDIATE, as writers) it holds the process's writer lock from
// begin to commit, so fn must not begin another transaction of db; waiting
// for that lock and for the database's own write lock together lasts at
// most the busy timeout, after which it fails (exit 12) naming the holder:
// another process, or another write transaction of this process.
func (db *DB) Tx(ctx context.Context, fn func(tx *Tx) error) (err error) {
	return db.tx(ctx, false, fn)
}

// BoundedTx is Tx whose every wait for a lock another writer holds ends
// after the busy timeout (Options.BusyTimeout) with an error that
// IsUnavailable: SQLite's waits always do; on PostgreSQL it sets the
// transaction's lock_timeout. A request that must not wait longer than a
// client would, such as the record of a request, uses it.
func (db *DB) BoundedTx(ctx context.Context, fn func(tx *Tx) error) error {
	return db.tx(ctx, true, fn)
}

func (db *DB) tx(ctx context.Context, bounded bool, fn func(tx *Tx) error) (err error) {
	start := time.Now()
	defer func() { observe(db.opts.Observer, OpTransaction, start, err) }()
	waited, err := db.writers.lock(ctx)
	if err != nil {
		return err
	}
	defer db.writers.unlock()
	tx, conn, err := db.begin(ctx, waited, bounded)
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			tx.tx.Rollback()
			conn.Close()
			panic(p)
		}
		if err != nil {
			tx.tx.Rollback()
		} else if cerr := tx.tx.Commit(); cerr != nil {
			err = fmt.Errorf("commit: %w", cerr)
		}
		conn.Close()
	}()
	err = fn(tx)
	if bounded && err != nil && db.d.isBusy(err) {
		err = busy(err, "another session holds a lock this write needs: waited %s, the busy timeout", db.BusyTimeout())
	}
	return err
}

func (db *DB) begin(ctx context.Context, waited time.Duration, bounded bool) (*Tx, *sql.Conn, error) {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return nil, nil, exit.Wrap(exit.EngineDB, err, "could not connect to the Engine DB")
	}
	tx, err := db.beginOn(ctx, conn, waited, bounded)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return tx, conn, nil
}

// beginOn begins a transaction on conn that carries the context's actor,
// purpose and migration, after waited on the in-process writer lock: the
// begin waits for the database no longer than what is left of the busy
// timeout, and a bounded transaction's lock waits end with it too. The
// caller keeps conn.
func (db *DB) beginOn(ctx context.Context, conn *sql.Conn, waited time.Duration, bounded bool) (*Tx, error) {
	var state *connState
	if err := conn.Raw(func(dc any) error { state = db.d.connState(dc); return nil }); err != nil {
		return nil, err
	}
	timeout := db.BusyTimeout()
	if waited > 0 {
		if err := db.d.setBeginWait(ctx, conn, beginWait(timeout, waited)); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not set how long the transaction waits for the Engine DB")
		}
		defer func() {
			if err := db.d.setBeginWait(context.WithoutCancel(ctx), conn, timeout); err != nil {
				conn.Raw(func(any) error { return driver.ErrBadConn }) // never back to the pool with a shorter wait
			}
		}()
	}
	var sqlTx *sql.Tx
	var err error
	db.writers.waiting(func() { sqlTx, err = conn.BeginTx(ctx, nil) })
	switch {
	case err != nil && db.d.isBusy(err):
		return nil, busy(err, "%s: waited %s, the busy timeout", anotherProcess, timeout)
	case err != nil:
		return nil, exit.Wrap(exit.EngineDB, err, "could not begin an Engine DB transaction")
	}
	tx := &Tx{tx: sqlTx, d: db.d, state: state, n: db.counts, obs: db.opts.Observer}
	db.counts.transactions.Add(1)
	if err := db.d.setScope(ctx, tx, ScopeOf(ctx)); err != nil {
		sqlTx.Rollback()
		return nil, exit.Wrap(exit.EngineDB, err, "could not set the transaction's actor")
	}
	if bounded {
		if err := db.d.boundLocks(ctx, tx, timeout); err != nil {
			sqlTx.Rollback()
			return nil, exit.Wrap(exit.EngineDB, err, "could not bound the transaction's lock waits")
		}
	}
	return tx, nil
}

// dialect is what differs between Engine DB kinds.
type dialect interface {
	kind() Kind
	capabilities() Capabilities
	open(ctx context.Context, opts Options) (*sql.DB, error)
	check(ctx context.Context, db *DB) error
	rebind(query string) string
	timeArg(t time.Time) any
	jsonParam(n int) string
	// inIDs is the condition that col is one of the ids of parameter n,
	// bound as idsArg makes it (DB.InIDs).
	inIDs(col string, n int) string
	idsArg(ids []int64) any
	isUniqueViolation(err error) bool
	isUnavailable(err error) bool
	// mapFile maps the database file into conn's memory for large reads, or
	// unmaps it (SQLite's mmap_size; nothing on a server database).
	mapFile(ctx context.Context, conn *sql.Conn, on bool) error
	// isBusy: a lock another writer holds outlasted the wait.
	isBusy(err error) bool
	// setBeginWait sets how long the next BEGIN on conn waits for the
	// database's write lock (SQLite's busy timeout).
	setBeginWait(ctx context.Context, conn *sql.Conn, d time.Duration) error
	// boundLocks ends every lock wait of tx after d.
	boundLocks(ctx context.Context, tx *Tx, d time.Duration) error
	connState(driverConn any) *connState
	setScope(ctx context.Context, tx *Tx, s Scope) error
	tablesQuery() string
	columnsQuery() string
	columnType(declared string) ColumnType
	readsAsText(t ColumnType) bool
	from(table string) string
	copyOut(ctx context.Context, db *DB, query string, w io.Writer) error
	readRows(ctx context.Context, conn *sql.Conn, q string, args ...any) (RowReader, error)
	refreshTriggers(ctx context.Context, tx *Tx) error
	beforeAlter(ctx context.Context, tx *Tx, statement string) error
	changeLog(schema string) ChangeLog
	outsideTransaction(statement string) string
	vacuum(ctx context.Context, db *DB, tables []string) error
}

// Time scans a timestamp stored by either dialect (see records.Time, where
// the row types that use it live).
type Time = records.Time

// TimeText formats a time as the Engine DB's fixed UTC text,
// YYYY-MM-DD HH:MM:SS.ffffff+00:00, whose text order is time order.
func TimeText(t time.Time) string {
	return t.UTC().Format("2006-01-02 15:04:05.000000-07:00")
}

// ErrNoRows is returned by helpers that find nothing.
var ErrNoRows = sql.ErrNoRows

// IsNoRows reports whether err means a query found no row.
func IsNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// Tables returns the names of every table in the Engine DB's schema, as the
// catalog spells them (lower case on PostgreSQL), sorted by upper-cased name.
func (db *DB) Tables(ctx context.Context) ([]string, error) {
	return tables(ctx, db, db.d)
}

// Tables returns the tables of the Engine DB's schema as the transaction sees them.
func (tx *Tx) Tables(ctx context.Context) ([]string, error) {
	return tables(ctx, tx, tx.d)
}

func tables(ctx context.Context, q Querier, d dialect) ([]string, error) {
	return Strings(ctx, q, d.tablesQuery())
}

// Strings runs a query of one text column and returns its values in order.
func Strings(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// BeforeAlter prepares the guarded tables for a PROJECT migration's ALTER
// TABLE statement: on SQLite, dropping a column of a metadata CFG_ table first
// drops the change-capture triggers that name it (RefreshTriggers re-creates
// them afterwards).
func (tx *Tx) BeforeAlter(ctx context.Context, statement string) error {
	return tx.d.beforeAlter(ctx, tx, statement)
}

// RefreshTriggers gives every CFG_ and AUD_ table its write guard, and every
// metadata CFG_ table its stamping and change-capture triggers, from the
// table's current columns. It runs after the schema is created, after every
// ENGINE migration, and after each CREATE or ALTER TABLE of a PROJECT
// migration, so project-created tables are guarded as their DDL runs.
func (tx *Tx) RefreshTriggers(ctx context.Context) error {
	return tx.d.refreshTriggers(ctx, tx)
}

// QuoteIdent quotes an identifier for either dialect ("name", with inner
// quotes doubled).
func QuoteIdent(name string) string { return quoteIdent(name) }

// Vacuum gives the space the tables' deleted rows held back: on SQLite it
// rewrites the whole file (VACUUM), which makes every writer wait until it
// is done; on PostgreSQL it vacuums and analyzes each table, so that its
// space is reused at once and its statistics are new. It runs outside any
// transaction.
func (db *DB) Vacuum(ctx context.Context, tables []string) error { return db.d.vacuum(ctx, db, tables) }
