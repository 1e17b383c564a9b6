// Package warehouse connects etl-craft to the warehouse that holds user data
// and speaks its SQL: DuckDB files, PostgreSQL, Trino over Iceberg,
// Databricks and Snowflake.
//
// A Dialect knows a warehouse's SQL without connecting: quoting, identifier
// folding, type names, capability flags and the statements etl-craft
// generates (CREATE TABLE of a mirror, ADD COLUMN, TRUNCATE, multi-row
// INSERT). A Warehouse is an open connection with its Dialect: schema and
// column look-ups, transactions, and a bulk load that streams rows from an
// iterator by the fastest path the warehouse has (PostgreSQL COPY, the DuckDB
// appender, or INSERTs of at most MaxBoundValues bound values elsewhere).
//
// Every session is pinned to UTC. Secrets are read through Options.Password
// at each connect and are never kept in a URL or a String.
package warehouse

import (
	"context"
	"crypto/tls"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/authmode"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// AuthMode is how etl-craft logs in to a warehouse (the profile's auth_mode).
type AuthMode string

// The auth modes this package implements. Each warehouse accepts the Login
// modes of its kind in the authmode table.
const (
	AuthNone     AuthMode = "none"     // no credentials (DuckDB, an open Trino)
	AuthPassword AuthMode = "password" // user and password
	AuthToken    AuthMode = "token"    // a bearer or access token read through Password
	AuthOAuth    AuthMode = "oauth"    // an OAuth client-credentials access token, minted by Password
	AuthSTS      AuthMode = "sts"      // AWS credentials: PostgreSQL's RDS IAM token (built by Password), Snowflake's workload identity
	AuthKeyFile  AuthMode = "key_file" // a private key: Snowflake's key pair (KeyFile), PostgreSQL's and Trino's TLS client certificate (ClientCert)
)

// Options says which warehouse to open and how. The project package fills it
// from the configuration's Warehouse and Cloning sections.
type Options struct {
	Kind        Kind
	TableFormat TableFormat // empty means Native
	Storage     Storage     // Cloning.External_volume and Base_location

	// Path is the DuckDB file, absolute or relative to the working folder;
	// empty means an in-memory database.
	Path string
	// Existing opens only a warehouse that exists: a missing DuckDB file
	// is an error (exit 3) instead of being created, as checks need.
	Existing bool
	// MemoryLimit is DuckDB's memory_limit, a size such as 512MB or 2GiB;
	// empty means DuckDB's own default. A file is opened once per process, so
	// the first opening's limit holds until it is closed.
	MemoryLimit string

	Host     string
	Port     int               // zero means the warehouse's default port
	Database string            // PostgreSQL database, Snowflake db
	Params   map[string]string // URL settings passed to the driver, such as sslmode or application_name
	User     string
	Schema   string // the warehouse profile's schema
	// Catalog is the first part of catalog.schema.table names, resolved by
	// the caller (DuckDB may leave it empty: the file stem is used).
	Catalog  string
	AuthMode AuthMode
	// Password returns the password or token. It is called at each new
	// connection and its result is never stored or logged. Nil means none.
	Password func() (string, error)
	// KeyFile is the PEM private key of a Snowflake key_file login, an
	// absolute path; Password returns its passphrase.
	KeyFile string
	// ClientCert returns the TLS client certificate of a PostgreSQL or
	// Trino key_file login; it is read when the warehouse is opened.
	ClientCert func() (tls.Certificate, error)

	HTTPPath  string // Databricks: /sql/1.0/warehouses/<id>
	Account   string // Snowflake account identifier
	Warehouse string // Snowflake virtual warehouse
	Role      string // Snowflake role
	RoleARN   string // Snowflake sts: the AWS role to assume first

	// HTTPClient carries the requests of the warehouses spoken over HTTP
	// (Trino, Databricks, Snowflake); nil means http.DefaultClient.
	HTTPClient *http.Client
	// ConnectTimeout bounds each PostgreSQL connection attempt; zero means
	// 10 s. The HTTP warehouses take their limits from HTTPClient and the
	// context.
	ConnectTimeout time.Duration
}

// NotCreatedError is a warehouse that Options.Existing refused because it
// does not exist yet: a DuckDB file, which the first run creates. Every new
// project starts so; errors.As finds it in the configuration error (exit 3)
// Open returns.
type NotCreatedError struct {
	Path string
}

func (e *NotCreatedError) Error() string {
	return fmt.Sprintf("the DuckDB warehouse %s does not exist yet: the first run creates it", e.Path)
}

// ColumnInfo is a column an existing table has, as information_schema shows it.
type ColumnInfo struct {
	Name string
	Type string // the warehouse's own type name
}

// Warehouse is an open warehouse: its Dialect plus the calls that need a
// connection. It is safe for concurrent use.
type Warehouse interface {
	Dialect
	// String describes the connection without any secret.
	String() string
	// Catalog returns the catalog that qualifies the warehouse's tables.
	Catalog() string
	// Table returns the table schema.name in the warehouse's catalog.
	Table(schema, name string) Table
	// Ping checks that the warehouse answers.
	Ping(ctx context.Context) error
	// SchemaExists reports whether a schema of that name (any case) exists
	// in the catalog.
	SchemaExists(ctx context.Context, schema string) (bool, error)
	// Columns returns a table's columns in order, matching the schema and
	// table names without case; none means the table does not exist.
	Columns(ctx context.Context, schema, table string) ([]ColumnInfo, error)
	// Begin starts a transaction. Where Capabilities().Transactions is
	// false, each statement commits on its own and Rollback undoes nothing.
	// The transaction holds the guard of each table in guard until it ends:
	// the objects it will create or write (see guard.go). Another
	// transaction guarding one of them, of this process or (on PostgreSQL)
	// of any process, waits in Begin until then, or until ctx ends.
	Begin(ctx context.Context, guard ...Table) (Tx, error)
	// Verify checks that the warehouse is still the database it opened, so
	// that what was written there is kept: a file warehouse (DuckDB) must
	// still be the same file (device and inode) at its path, not removed or
	// replaced since; a server warehouse always is. A failure is a
	// connection error (exit 11) naming the file. It works after Close too.
	Verify() error
	// Close releases the connections.
	Close() error
}

// Rows yields the rows of a bulk load, one slice of values per row in column
// order, and an error to stop with. The slice may be reused between rows.
type Rows = iter.Seq2[[]any, error]

// Tx is a warehouse transaction (see Warehouse.Begin).
type Tx interface {
	// Exec runs a statement with bound arguments.
	Exec(ctx context.Context, query string, args ...any) (sql.Result, error)
	// Query runs a query with bound arguments.
	Query(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	// BulkLoad appends rows to the existing table t, filling cols, and
	// returns how many it loaded. Rows are streamed, never held whole.
	BulkLoad(ctx context.Context, t Table, cols []Column, rows Rows) (int64, error)
	// Commit commits the transaction.
	Commit() error
	// Rollback abandons the transaction; after Commit it does nothing.
	Rollback() error
}

// Open opens the warehouse the options describe. A DuckDB file is opened (and
// created) at once; other warehouses connect at the first call, so Ping is
// their connection test. Configuration mistakes are exit code 3.
func Open(ctx context.Context, opts Options) (Warehouse, error) {
	d, err := NewDialect(opts.Kind, opts.TableFormat, opts.Storage)
	if err != nil {
		return nil, err
	}
	logins := authmode.Of(string(opts.Kind))
	modes := logins.Logins()
	if opts.AuthMode == "" {
		opts.AuthMode = AuthMode(modes[0])
	}
	if !slices.Contains(modes, string(opts.AuthMode)) {
		return nil, exit.Errorf(exit.Configuration,
			"auth_mode %q is not available for the %s warehouse: use %s",
			string(opts.AuthMode), opts.Kind, strings.Join(modes, ", "))
	}
	if opts.AuthMode != AuthNone && opts.AuthMode != AuthKeyFile && opts.AuthMode != AuthSTS && opts.Password == nil {
		return nil, exit.Errorf(exit.Configuration,
			"the %s warehouse's auth_mode %s needs a secret: set the profile's secret (or token)", opts.Kind, opts.AuthMode)
	}
	if opts.AuthMode == AuthKeyFile && !logins.KeyPair && opts.ClientCert == nil {
		return nil, exit.Errorf(exit.Configuration, "the %s warehouse's auth_mode key_file needs key_file and cert_file", opts.Kind)
	}
	if opts.ConnectTimeout == 0 {
		opts.ConnectTimeout = 10 * time.Second
	}
	switch opts.Kind {
	case DuckDB:
		return openDuckDB(ctx, d, opts)
	case Postgres:
		return openPostgres(d, opts)
	case Trino:
		return openTrino(d, opts)
	case Databricks:
		return openDatabricks(d, opts)
	default:
		return openSnowflake(d, opts)
	}
}

// required returns a configuration error naming the first empty field.
func required(kind Kind, fields ...[2]string) error {
	for _, f := range fields {
		if f[1] == "" {
			return exit.Errorf(exit.Configuration, "the %s warehouse needs %s: set it in the Warehouse profile", kind, f[0])
		}
	}
	return nil
}

// secretOf reads the secret through opts.Password, or returns "" when the
// mode takes none.
func secretOf(opts Options) (string, error) {
	if opts.AuthMode == AuthNone || opts.Password == nil {
		return "", nil
	}
	s, err := opts.Password()
	if err != nil {
		return "", fmt.Errorf("reading the %s warehouse secret: %w", opts.Kind, err)
	}
	return s, nil
}

// secretConnector opens each connection with a secret read just then, so no
// URL, pool or connector keeps it: connect builds the driver's own
// configuration around the secret and opens one connection.
type secretConnector struct {
	opts    Options
	drv     driver.Driver
	connect func(ctx context.Context, secret string) (driver.Conn, error)
}

func (c secretConnector) Connect(ctx context.Context) (driver.Conn, error) {
	secret, err := secretOf(c.opts)
	if err != nil {
		return nil, err
	}
	return c.connect(ctx, secret)
}

func (c secretConnector) Driver() driver.Driver { return c.drv }
