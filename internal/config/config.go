// Package config reads craft-connector.yml: where it is (Discover), what it
// says (Load), and the secrets it names (Config.Secret).
//
// The file has up to eight sections in a fixed order: Secrets, Orchestration,
// Engine, Warehouse, Cloning, Docs_site, Notifications and Retention. A
// section may hold profile blocks (dev, prod, any names); only the active
// block is read, over the section's shared keys. Every setting is either the name of a variable the secrets
// source defines, which gives its value, or a value used as written. Secret
// fields must name a variable: the parsed Config keeps only that name, and
// Secret reads the value when a connection is made.
//
// Every problem is an exit.Configuration error naming the file, the line and
// the setting, such as "craft-connector.yml:12: Engine.dev.jdbc_url: ...".
// This package reads files and the environment; it never connects to
// anything.
package config

import (
	"os"
	"path/filepath"
	"time"
)

// Names and places every project shares.
const (
	// FileName is the configuration file's name.
	FileName = "craft-connector.yml"
	// ProjectFolder is the conventional name of the folder holding a project.
	ProjectFolder = "etl-craft"
	// ConfigVariable names the environment variable holding the config path.
	ConfigVariable = "ETL_CRAFT_CONFIG"
	// MigrationsVariable names the environment variable holding the project
	// migrations folder.
	MigrationsVariable = "ETL_CRAFT_MIGRATIONS_DIR"
	// ExamplePath is the commented example file the errors point to.
	ExamplePath = "docs/craft-connector.example.yml"
)

// Defaults of the settings that have one.
const (
	DefaultAPIAddress           = "127.0.0.1:8730"
	DefaultLogDir               = "logs"
	DefaultTaskTimeoutSeconds   = 21600
	DefaultMaxParallelTasks     = 8
	DefaultShutdownGraceSeconds = 60
	DefaultGateWaitMinutes      = 60
	DefaultTimezone             = "UTC"
	DefaultSendmailPath         = "/usr/sbin/sendmail"
	DefaultCatalogDir           = "catalog"
)

// Config is a loaded craft-connector.yml: each section's active profile,
// resolved and validated. It holds no secret values, only the names of the
// variables that hold them.
type Config struct {
	// Path is the file's absolute path, symbolic links left as they are.
	Path string
	// ProjectDir is the folder holding the file (a symlink's own folder).
	// Every relative path in the file is taken from it.
	ProjectDir    string
	Secrets       Secrets
	Orchestration Orchestration
	Engine        Engine
	// Warehouse is nil when the file has no Warehouse section.
	Warehouse *Warehouse
	Cloning   Cloning
	// DocsSite is nil when the file has no Docs_site section.
	DocsSite *DocsSite
	// Notifications has no channels when the file has no Notifications
	// section.
	Notifications Notifications
	// Retention holds the defaults when the file has no Retention section.
	Retention Retention
	// Settings records where every string setting's value came from, in the
	// order they were read, for doctor.
	Settings []Setting
}

// Secrets says where variables are read from.
type Secrets struct {
	// SourceType is "environment" (the process environment) or "file".
	SourceType string
	// Path is the absolute path of the .env-style file; "" for environment.
	Path string
	// Profile is the default profile of every section; "" when not set.
	Profile string
}

// The secrets source types.
const (
	SourceEnvironment = "environment"
	SourceFile        = "file"
)

// Describe names the source in messages: "the environment source" or
// "the file source <path>".
func (s Secrets) Describe() string {
	if s.SourceType == SourceFile {
		return "the file source " + s.Path
	}
	return "the environment source"
}

// Orchestration holds how runs are scheduled and limited, the defaults of
// generated DAGs, and the email relay.
type Orchestration struct {
	// Profile is the selected profile, "" when none is selected.
	Profile string
	// Mode is "local" or "remote".
	Mode string
	// Name is informational only, such as Airflow.
	Name string
	// APIAddress is the HTTP API's host:port.
	APIAddress string
	// LogDir is the absolute folder for task-attempt logs.
	LogDir string
	// Python is the interpreter of PYTHON tasks' scripts, "" for python3
	// on PATH.
	Python string
	// TaskTimeoutSeconds limits a task; 0 means no limit.
	TaskTimeoutSeconds   int
	MaxParallelTasks     int
	ShutdownGraceSeconds int
	// Timezone is the IANA name; Location is that zone.
	Timezone   string
	Location   *time.Location
	EnforceSLA bool
	// GateWaitMinutes is how long a gate waits for a running upstream.
	GateWaitMinutes int
	// DependencyGates is "enforce", "warn" or "off".
	DependencyGates string
	GlobalDAG       bool
	// DAG defaults: nil means not set, so the built-in default applies.
	Catchup           *bool
	Tags              []string
	Retries           *int
	RetryDelayMinutes *int
	DependsOnPast     *bool
	EmailOnFailure    *bool
	EmailRecipients   []string
	// AllowSchedule false writes schedule: null into generated DAGs.
	AllowSchedule bool
	// Email is nil when no Email block is set.
	Email *Email
	// MetricsPublic serves the server's /metrics without a token.
	MetricsPublic bool
	// TracesEndpoint is the base URL of the OTLP/HTTP receiver traces go
	// to, "" when none is set (the OTEL_EXPORTER_OTLP_* variables may still
	// turn tracing on).
	TracesEndpoint string
}

// The execution modes.
const (
	ModeLocal  = "local"
	ModeRemote = "remote"
)

// Email says how mail is sent: through an SMTP relay or the host's sendmail.
type Email struct {
	// Transport is "smtp" or "sendmail".
	Transport   string
	Host        string
	Port        int
	FromAddress string
	FromName    string
	// AuthMode is "none", "password" or "oauth" (SMTP only).
	AuthMode  string
	User      string
	SecretVar string
	ClientID  string
	TokenURL  string
	Scope     string
	// TLSMode is "none", "starttls" or "ssl" (SMTP only).
	TLSMode string
	// CAFile is an absolute path; "" means the system trust store.
	CAFile string
	// SendmailPath is the absolute path of the program (sendmail only).
	SendmailPath string
}

// Auth is how a connection authenticates: the mode and the fields written
// for it (the fields the mode needs are checked at load). SecretVar names the
// variable holding the password, token, client secret or key passphrase;
// KeyFile and CertFile are absolute paths.
type Auth struct {
	AuthMode  string
	User      string
	SecretVar string
	KeyFile   string
	CertFile  string
	ClientID  string
	TokenURL  string
	Scope     string
	Issuer    string
	Region    string
	RoleARN   string
}

// Endpoint is a network database: host, port, database and the URL's query
// settings, which are passed to the driver.
type Endpoint struct {
	Host     string
	Port     int
	Database string
	Params   map[string]string
}

// Engine is the active Engine DB profile.
type Engine struct {
	// Profile is the active profile block's name.
	Profile string
	// Name is the display name: SQLite or PostgreSQL.
	Name string
	// Kind is "sqlite" or "postgres".
	Kind string
	// JDBCURL is the URL with relative file paths made absolute.
	JDBCURL string
	// SQLitePath is the absolute database file (SQLite only).
	SQLitePath string
	// Endpoint is the server (PostgreSQL only).
	Endpoint
	// Schema holds the Engine DB tables on PostgreSQL, named as PostgreSQL
	// folds the configured name (PostgresName); "main" by convention on
	// SQLite.
	Schema string
	Auth
	// BusyTimeoutSeconds is how long a write waits for a lock another
	// writer holds before it fails (engine.Options.BusyTimeout).
	BusyTimeoutSeconds int
}

// The bounds of Engine.busy_timeout_seconds: the default, and the most.
const (
	DefaultBusyTimeoutSeconds = 60
	MaxBusyTimeoutSeconds     = 3600
)

// The Engine DB kinds.
const (
	EngineSQLite   = "sqlite"
	EnginePostgres = "postgres"
)

// Warehouse is the active warehouse profile.
type Warehouse struct {
	// Profile is the active profile block's name.
	Profile string
	// Name is the display name: Postgres, DuckDB, Trino, Databricks or
	// Snowflake.
	Name string
	// Dialect is "postgres", "duckdb", "trino", "databricks" or "snowflake".
	Dialect string
	// TableFormat is "native" or "iceberg"; always iceberg on Trino.
	TableFormat string
	// JDBCURL is the URL without credentials; for the separate-fields shape
	// it is the URL rebuilt from the fields.
	JDBCURL string
	// DuckDBPath is the absolute DuckDB file; "" means in memory.
	DuckDBPath string
	// MemoryLimit is a DuckDB profile's memory_limit (such as 2GiB); ""
	// means the warehouse package's default.
	MemoryLimit string
	// Catalog is the first part of every catalog.schema.table name.
	Catalog string
	// Schema is the profile's schema (a plain identifier).
	Schema string
	Endpoint
	Auth
	// HTTPPath is the Databricks SQL warehouse or cluster path.
	HTTPPath string
	// Account, SnowflakeWarehouse and Role are Snowflake's.
	Account            string
	SnowflakeWarehouse string
	Role               string
	// Iceberg is set for DuckDB over an Iceberg REST catalog.
	Iceberg *DuckDBIceberg
}

// The warehouse dialects and table formats.
const (
	DialectPostgres   = "postgres"
	DialectDuckDB     = "duckdb"
	DialectTrino      = "trino"
	DialectDatabricks = "databricks"
	DialectSnowflake  = "snowflake"
	FormatNative      = "native"
	FormatIceberg     = "iceberg"
)

// DuckDBIceberg holds the settings of DuckDB attached to an Iceberg REST
// catalog. CatalogURI and Warehouse are checked when connecting. Without
// S3KeyID and S3SecretVar the AWS credential chain is used.
type DuckDBIceberg struct {
	CatalogURI  string
	Warehouse   string
	S3Endpoint  string
	S3Region    string
	S3URLStyle  string
	S3UseSSL    *bool
	S3KeyID     string
	S3SecretVar string
}

// Cloning says whether and what to copy from the Engine DB into the
// warehouse after every run.
type Cloning struct {
	// Profile is the selected profile, "" when none is selected.
	Profile string
	Enabled bool
	// Scope is "cfg", "aud", "all" or "none".
	Scope          string
	ExternalVolume string
	BaseLocation   string
}

// Effective reports whether cloning runs: Enabled, with a Scope other than
// none.
func (c Cloning) Effective() bool { return c.Enabled && c.Scope != "none" }

// DocsSite configures the catalog site.
type DocsSite struct {
	// Profile is the selected profile, "" when none is selected.
	Profile string
	// Schedule is a cron expression, "" when not set.
	Schedule string
	// Output is the absolute catalog folder.
	Output string
	// AuthtokenVar names the variable holding the ngrok authtoken.
	AuthtokenVar string
	// Domain is a reserved ngrok host name, lower case.
	Domain string
	// AllowedIPs are CIDR ranges; empty means every address.
	AllowedIPs []string
}

// CatalogDir returns the folder generate-docs writes: Docs_site.Output, else
// catalog/ in the project.
func (c *Config) CatalogDir() string {
	if c.DocsSite != nil {
		return c.DocsSite.Output
	}
	return filepath.Join(c.ProjectDir, DefaultCatalogDir)
}

// MigrationsDir returns the project's migrations folder: flag (the
// --migrations-dir value), else $ETL_CRAFT_MIGRATIONS_DIR, else migrations/
// in the project when that folder exists, else "". explicit reports that the
// folder was named by the flag or the variable, so it must exist.
func (c *Config) MigrationsDir(flag string) (dir string, explicit bool) {
	for _, named := range []string{flag, os.Getenv(MigrationsVariable)} {
		if named != "" {
			if abs, err := filepath.Abs(named); err == nil {
				return abs, true
			}
			return named, true
		}
	}
	def := filepath.Join(c.ProjectDir, "migrations")
	if info, err := os.Stat(def); err == nil && info.IsDir() {
		return def, false
	}
	return "", false
}
