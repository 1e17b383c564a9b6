package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// sqliteDriverName is the database/sql driver that registers the guard
// functions on every Engine DB connection.
const sqliteDriverName = "etl-craft-sqlite"

// connState is one SQLite connection's guard context: the actor, purpose and
// migration of the transaction running on it, and the tables whose insert
// triggers are running (so their own stamping update is not seen as a change).
type connState struct {
	mu        sync.Mutex
	scope     Scope
	inserting map[string]int
}

func (s *connState) set(sc Scope) {
	s.mu.Lock()
	s.scope = sc
	s.inserting = map[string]int{}
	s.mu.Unlock()
}

func (s *connState) get() Scope {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scope
}

func (s *connState) clearInserts() {
	s.mu.Lock()
	clear(s.inserting)
	s.mu.Unlock()
}

func (s *connState) enter(table string) int {
	s.mu.Lock()
	s.inserting[strings.ToUpper(table)]++
	s.mu.Unlock()
	return 1
}

func (s *connState) exit(table string) int {
	s.mu.Lock()
	t := strings.ToUpper(table)
	if s.inserting[t] > 1 {
		s.inserting[t]--
	} else {
		delete(s.inserting, t)
	}
	s.mu.Unlock()
	return 1
}

func (s *connState) isInserting(table string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inserting[strings.ToUpper(table)] > 0
}

var sqliteStates sync.Map // *sqlite3.SQLiteConn -> *connState

func init() {
	sql.Register(sqliteDriverName, &sqlite3.SQLiteDriver{ConnectHook: registerGuardFunctions})
}

// sqliteMmapSize is how much of the Engine DB file a snapshot's connection
// maps into memory (PRAGMA mmap_size) while the snapshot lasts: large reads,
// such as a clone's full copy of an AUD_ table, then read pages in place
// instead of copying each one from the operating system's cache (about a
// tenth faster in docs/benchmarks.md). Other connections map nothing: each
// mapping counts the file's pages again in the process's resident memory,
// which then grew with the history (docs/benchmarks.md, "Where the soak's
// memory is").
const sqliteMmapSize = 1 << 30

// registerGuardFunctions gives a new connection the functions the guard and
// stamping triggers call. A connection
// without the functions (the sqlite3 shell, a BI tool) fails every guarded
// write with "no such function: etl_craft_actor".
func registerGuardFunctions(c *sqlite3.SQLiteConn) error {
	st := &connState{inserting: map[string]int{}}
	st.scope = ScopeOf(context.Background())
	funcs := map[string]any{
		"etl_craft_actor":        func() string { return st.get().Actor.Name },
		"etl_craft_actor_kind":   func() string { return string(st.get().Actor.Kind) },
		"etl_craft_purpose":      func() string { return st.get().Purpose },
		"etl_craft_migration":    func() string { return st.get().Migration },
		"etl_craft_enter_insert": st.enter,
		"etl_craft_exit_insert":  st.exit,
		"etl_craft_inserting":    st.isInserting,
	}
	for name, fn := range funcs {
		if err := c.RegisterFunc(name, fn, false); err != nil {
			return fmt.Errorf("registering %s: %w", name, err)
		}
	}
	sqliteStates.Store(c, st)
	return nil
}

type sqliteDialect struct{}

func (sqliteDialect) kind() Kind { return SQLite }

func (sqliteDialect) capabilities() Capabilities { return Capabilities{SingleWriter: true} }

// sqliteStatementCache is how many prepared statements each connection
// keeps for the next use of the same text (mattn/go-sqlite3's
// _stmt_cache_size): the engine runs the same few dozen statements for
// every run, and preparing them was a third of a write transaction's CPU
// (docs/benchmarks.md).
const sqliteStatementCache = 128

// open opens the file with WAL, the busy timeout (60 s by default),
// foreign keys on, BEGIN IMMEDIATE transactions and a statement cache,
// creating its folder.
func (sqliteDialect) open(_ context.Context, opts Options) (*sql.DB, error) {
	p := opts.Path
	if p == "" || p == ":memory:" || strings.HasPrefix(p, "file::memory:") {
		return nil, exit.Errorf(exit.Configuration, "an in-memory SQLite Engine DB is refused: name a file")
	}
	if strings.ContainsAny(p, "?#") {
		return nil, exit.Errorf(exit.Configuration, "the SQLite Engine DB path %q must not contain '?' or '#'", p)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "could not create the folder of the SQLite Engine DB %s", p)
	}
	dsn := fmt.Sprintf("%s?_busy_timeout=%d&_journal_mode=WAL&_foreign_keys=1&_txlock=immediate&_stmt_cache_size=%d",
		p, opts.busyTimeout().Milliseconds(), sqliteStatementCache)
	db, err := sql.Open(sqliteDriverName, dsn)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "could not open the SQLite Engine DB %s", p)
	}
	return db, nil
}

// minSQLite is the oldest SQLite library the Engine DB works with (RETURNING).
const minSQLite = "3.35.0"

func (sqliteDialect) check(ctx context.Context, db *DB) error {
	var version string
	if err := db.sql.QueryRowContext(ctx, "SELECT sqlite_version()").Scan(&version); err != nil {
		return exit.Wrap(exit.Configuration, err, "could not connect to the Engine DB %s", db.opts.Path)
	}
	if versionLess(version, minSQLite) {
		return exit.Errorf(exit.Configuration, "the SQLite library is %s; etl-craft needs %s or newer", version, minSQLite)
	}
	return nil
}

func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		var x, y int
		fmt.Sscan(pa[i], &x)
		fmt.Sscan(pb[i], &y)
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// rebind turns $N into ?N, leaving quoted text and comments alone.
func (sqliteDialect) rebind(q string) string {
	if !strings.Contains(q, "$") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q))
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == '\'' || c == '"':
			j := i + 1
			for j < len(q) && q[j] != c {
				j++
			}
			b.WriteString(q[i:min(j+1, len(q))])
			i = j
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			j := strings.IndexByte(q[i:], '\n')
			if j < 0 {
				j = len(q) - i
			}
			b.WriteString(q[i : i+j])
			i += j - 1
		case c == '$' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9':
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (sqliteDialect) timeArg(t time.Time) any { return TimeText(t) }

func (sqliteDialect) jsonParam(n int) string { return fmt.Sprintf("$%d", n) }

func (sqliteDialect) inIDs(col string, n int) string {
	return fmt.Sprintf("%s IN (SELECT value FROM json_each($%d))", col, n)
}

// idsArg binds ids as the text of a JSON array.
func (sqliteDialect) idsArg(ids []int64) any {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte(']')
	return b.String()
}

func (sqliteDialect) isUniqueViolation(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintUnique || se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey
	}
	return false
}

// isUnavailable: the file cannot be opened or read, or stayed locked past
// the busy timeout.
func (sqliteDialect) isUnavailable(err error) bool {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code {
	case sqlite3.ErrCantOpen, sqlite3.ErrBusy, sqlite3.ErrLocked, sqlite3.ErrIoErr, sqlite3.ErrNotADB:
		return true
	}
	return false
}

// isBusy: the database stayed locked (SQLITE_BUSY, SQLITE_LOCKED).
func (sqliteDialect) mapFile(ctx context.Context, conn *sql.Conn, on bool) error {
	size := 0
	if on {
		size = sqliteMmapSize
	}
	_, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA mmap_size = %d", size))
	return err
}

func (sqliteDialect) isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// setBeginWait sets the connection's busy timeout, which is how long its
// BEGIN IMMEDIATE waits for another process's write lock.
func (sqliteDialect) setBeginWait(ctx context.Context, conn *sql.Conn, d time.Duration) error {
	_, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", d.Milliseconds()))
	return err
}

// boundLocks does nothing: a SQLite transaction waits for a lock only in
// its BEGIN IMMEDIATE, which the busy timeout bounds.
func (sqliteDialect) boundLocks(context.Context, *Tx, time.Duration) error { return nil }

func (sqliteDialect) connState(dc any) *connState {
	if v, ok := sqliteStates.Load(dc); ok {
		return v.(*connState)
	}
	return nil
}

func (sqliteDialect) setScope(_ context.Context, tx *Tx, s Scope) error {
	if tx.state == nil {
		return errors.New("the connection has no etl-craft guard functions")
	}
	tx.state.set(s)
	return nil
}

func (sqliteDialect) tablesQuery() string {
	return "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY upper(name)"
}

func (sqliteDialect) columnsQuery() string {
	return "SELECT name, type FROM pragma_table_info($1) ORDER BY cid"
}

// columnType maps a declared type, such as BIGINT or VARCHAR(16): whole
// numbers are integers, other numbers numbers, TIMESTAMP, DATE and BOOLEAN
// themselves, and anything else text.
func (sqliteDialect) columnType(declared string) ColumnType {
	d := strings.ToUpper(strings.TrimSpace(declared))
	if i := strings.IndexByte(d, '('); i >= 0 {
		d = strings.TrimSpace(d[:i])
	}
	switch d {
	case "INTEGER", "INT", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "INT2", "INT8", "UNSIGNED BIG INT":
		return IntegerColumn
	case "NUMERIC", "DECIMAL", "REAL", "DOUBLE", "DOUBLE PRECISION", "FLOAT":
		return NumberColumn
	case "TIMESTAMP", "DATETIME", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE":
		return TimestampColumn
	case "DATE":
		return DateColumn
	case "BOOLEAN", "BOOL":
		return BooleanColumn
	}
	return TextColumn
}

// readsAsText reads timestamps and dates as the text SQLite stores.
func (sqliteDialect) readsAsText(t ColumnType) bool { return t == TimestampColumn || t == DateColumn }

func (sqliteDialect) from(table string) string { return `"main".` + quoteIdent(table) }

func (sqliteDialect) copyOut(context.Context, *DB, string, io.Writer) error {
	return errors.New("a SQLite Engine DB has no COPY: read the rows with ReadQuery")
}

// vacuum rewrites the file, giving the free pages back.
func (sqliteDialect) vacuum(ctx context.Context, db *DB, _ []string) error {
	_, err := db.sql.ExecContext(ctx, "VACUUM")
	return err
}
