package warehouse

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// plainIdentifier is a name that needs no quoting anywhere: letters, digits
// and underscores, not starting with a digit.
var plainIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// DuckDBCatalog returns the catalog DuckDB gives a database file: its name
// without folder and extension. It must be a plain identifier, so
// my-warehouse.duckdb is refused. An empty path (in memory) is "memory".
func DuckDBCatalog(path string) (string, error) {
	if path == "" {
		return "memory", nil
	}
	base := filepath.Base(path)
	stem := strings.TrimSuffix(base, filepath.Ext(base))
	if !plainIdentifier.MatchString(stem) {
		return "", exit.Errorf(exit.Configuration,
			"the DuckDB file name %q must be a plain identifier (letters, digits, _) before its extension, because it becomes the catalog of every table name: rename the file", base)
	}
	return stem, nil
}

// duckdbFiles holds the one database handle of each DuckDB file this process
// has open: DuckDB lets one process at a time write a file, and two handles
// in one process would each think they own it.
var duckdbFiles = struct {
	sync.Mutex
	open map[string]*sharedDuckDB
}{open: map[string]*sharedDuckDB{}}

type sharedDuckDB struct {
	db   *sql.DB
	refs int
	// file is the file the handle opened.
	file *openedFile
}

func openDuckDB(ctx context.Context, d Dialect, opts Options) (Warehouse, error) {
	catalog, err := DuckDBCatalog(opts.Path)
	if err != nil {
		return nil, err
	}
	if opts.Catalog != "" && !strings.EqualFold(opts.Catalog, catalog) {
		return nil, exit.Errorf(exit.Configuration,
			"the DuckDB catalog is the file's name %q, not %q", catalog, opts.Catalog)
	}
	path := ""
	if opts.Path != "" {
		if path, err = filepath.Abs(opts.Path); err != nil {
			return nil, exit.Wrap(exit.Configuration, err, "the DuckDB path %s", opts.Path)
		}
		if _, err := os.Stat(path); opts.Existing && errors.Is(err, fs.ErrNotExist) {
			return nil, &exit.Error{Code: exit.Configuration, Err: &NotCreatedError{Path: path}}
		}
	}
	db, file, release, err := acquireDuckDB(path, opts.MemoryLimit)
	if err != nil {
		return nil, err
	}
	w := &sqlWarehouse{Dialect: d, db: db, catalog: catalog, close: release, bulk: duckdbAppend, file: file}
	w.desc = "duckdb:" + path
	if path == "" {
		w.desc = "duckdb::memory:"
	}
	if err := w.Ping(ctx); err != nil {
		release()
		return nil, err
	}
	return w, nil
}

// duckdbIdleConns is how many idle connections a DuckDB handle keeps.
const duckdbIdleConns = 16

// duckdbConfig is the DSN query that configures a DuckDB database when it
// is opened: the profile's memory limit when it sets one (DuckDB's own
// default otherwise, 80 % of the machine's memory), and jemalloc's
// background threads, which give memory DuckDB has freed back to the
// operating system after a few seconds. Without them the allocator keeps
// the peak of every query a server has run (docs/benchmarks.md, "Where the
// soak's memory is").
func duckdbConfig(memoryLimit string) string {
	v := url.Values{"allocator_background_threads": {"true"}}
	if memoryLimit != "" {
		v.Set("memory_limit", memoryLimit)
	}
	return "?" + v.Encode()
}

// acquireDuckDB returns the process's handle on a DuckDB file, opening it on
// first use with memoryLimit (duckdbConfig), the file it opened (nil in
// memory), and the function that gives the handle back. An in-memory
// database is never shared.
func acquireDuckDB(path, memoryLimit string) (*sql.DB, *openedFile, func() error, error) {
	open := func() (*sql.DB, error) {
		c, err := duckdb.NewConnector(path+duckdbConfig(memoryLimit), pinUTC)
		if err != nil {
			// A folder missing or closed, a file that is not DuckDB's: the
			// connection fails, as a server's would.
			return nil, exit.Wrap(exit.ConnectionTest, err, "could not open the DuckDB warehouse %s", path)
		}
		db := sql.OpenDB(c)
		// Keep the connections parallel tasks use: each new one runs the
		// session set-up again.
		db.SetMaxIdleConns(duckdbIdleConns)
		if err := registerParts(db); err != nil {
			db.Close()
			return nil, exit.Wrap(exit.Configuration, err, "could not open the DuckDB warehouse %s", path)
		}
		return db, nil
	}
	if path == "" {
		db, err := open()
		if err != nil {
			return nil, nil, nil, err
		}
		return db, nil, db.Close, nil
	}
	duckdbFiles.Lock()
	defer duckdbFiles.Unlock()
	s := duckdbFiles.open[path]
	if s == nil {
		db, err := open()
		if err != nil {
			return nil, nil, nil, err
		}
		// DuckDB made the file when it opened it, if it was not there.
		info, err := os.Stat(path)
		if err != nil {
			db.Close()
			return nil, nil, nil, exit.Wrap(exit.ConnectionTest, err, "could not open the DuckDB warehouse %s", path)
		}
		s = &sharedDuckDB{db: db, file: &openedFile{path: path, info: info}}
		duckdbFiles.open[path] = s
	}
	s.refs++
	var once sync.Once
	release := func() error {
		var err error
		once.Do(func() {
			duckdbFiles.Lock()
			defer duckdbFiles.Unlock()
			if s.refs--; s.refs == 0 {
				delete(duckdbFiles.open, path)
				err = s.db.Close()
			}
		})
		return err
	}
	return s.db, s.file, release, nil
}

// DuckDBMemory is the memory DuckDB counts in use (duckdb_memory(): its
// buffers, the rows not yet checkpointed, its queries' working memory) by
// the DuckDB files this process has open, in bytes; 0 while none is open.
// It holds the files open while it reads them, so none closes under it.
func DuckDBMemory(ctx context.Context) (int64, error) {
	duckdbFiles.Lock()
	defer duckdbFiles.Unlock()
	var total int64
	for path, s := range duckdbFiles.open {
		var n int64
		if err := s.db.QueryRowContext(ctx, "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()").Scan(&n); err != nil {
			return 0, fmt.Errorf("reading the memory of the DuckDB warehouse %s: %w", path, err)
		}
		total += n
	}
	return total, nil
}

// pinUTC runs on every new DuckDB connection.
func pinUTC(execer driver.ExecerContext) error {
	_, err := execer.ExecContext(context.Background(), "SET TimeZone = 'UTC'", nil)
	return err
}

// duckdbAppend loads rows through DuckDB's appender on the transaction's own
// connection, so they commit or roll back with it. Columns of the table that
// cols leaves out get their defaults.
func duckdbAppend(ctx context.Context, tx *sqlTx, t Table, cols []Column, rows Rows) (int64, error) {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	var loaded int64
	err := tx.conn.Raw(func(dc any) error {
		conn, ok := dc.(driver.Conn)
		if !ok {
			return fmt.Errorf("the DuckDB driver connection is a %T", dc)
		}
		a, err := duckdb.NewAppenderWithColumns(conn, t.Catalog, tx.w.Fold(t.Schema), t.Name, names)
		if err != nil {
			return err
		}
		vals := make([]driver.Value, len(cols))
		buf := make([]any, 0, len(cols))
		for row, err := range rows {
			if err == nil {
				buf, err = canonicalRow(buf[:0], cols, row)
			}
			if err == nil {
				err = ctx.Err()
			}
			if err == nil {
				for i, v := range buf {
					vals[i] = duckdbValue(v)
				}
				err = a.AppendRow(vals...)
			}
			if err != nil {
				a.Clear()
				a.Close()
				return err
			}
			loaded++
		}
		return a.Close()
	})
	if err != nil {
		return 0, err
	}
	return loaded, nil
}

// duckdbValue gives the appender a decimal as DuckDB's own type; the other
// canonical values it takes as they are.
func duckdbValue(v any) driver.Value {
	if d, ok := v.(decimal); ok {
		return duckdb.Decimal{Width: 38, Scale: DecimalScale, Value: d.unscaled}
	}
	return v
}
