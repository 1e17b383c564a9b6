package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pgauth"
)

type postgresDialect struct{}

func (postgresDialect) kind() Kind { return Postgres }

func (postgresDialect) capabilities() Capabilities {
	return Capabilities{CopyOut: true, Server: true, Events: true, SharedSnapshot: true}
}

// open builds a pgx pool behind database/sql whose connections use the
// Engine schema as their search_path, read the password for each new
// connection, and present the client certificate, read now, when there is
// one.
func (postgresDialect) open(_ context.Context, opts Options) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(opts.DSN)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "the PostgreSQL Engine DB connection settings are invalid")
	}
	if opts.ClientCert != nil {
		if err := pgauth.PresentCertificate(&cfg.Config, opts.ClientCert); err != nil {
			return nil, err
		}
	}
	if opts.Schema != "" {
		cfg.RuntimeParams["search_path"] = opts.Schema
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	cfg.ConnectTimeout = opts.ConnectTimeout
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	before := func(_ context.Context, c *pgx.ConnConfig) error {
		if opts.Password == nil {
			return nil
		}
		pw, err := opts.Password()
		if err != nil {
			return err
		}
		c.Password = pw
		return nil
	}
	return stdlib.OpenDB(*cfg, stdlib.OptionBeforeConnect(before)), nil
}

// check confirms the connection and that the Engine schema exists, by its
// exact name: the one search_path names. A missing schema is named with the
// CREATE SCHEMA that creates exactly it, quoted by the server where needed,
// and with any schema whose name differs only in case.
func (postgresDialect) check(ctx context.Context, db *DB) error {
	var database, quoted, others string
	var exists bool
	err := db.sql.QueryRowContext(ctx, `
SELECT current_database(), quote_ident($1),
       EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
       coalesce((SELECT string_agg(quote_ident(nspname), ', ' ORDER BY nspname)
                   FROM pg_namespace WHERE lower(nspname) = lower($1) AND nspname <> $1), '')`,
		db.opts.Schema).Scan(&database, &quoted, &exists, &others)
	if err != nil {
		return exit.Wrap(exit.Configuration, err, "could not connect to the Engine DB")
	}
	if exists {
		return nil
	}
	if others != "" {
		others = fmt.Sprintf("; schema %s differs in case, and a configured name means %s, as PostgreSQL reads it unquoted", others, quoted)
	}
	return exit.Errorf(exit.Configuration,
		"the Engine schema '%s' does not exist in database %s (CREATE SCHEMA %s;)%s — etl-craft does not create PostgreSQL schemas",
		db.opts.Schema, database, quoted, others)
}

func (postgresDialect) rebind(q string) string { return q }

func (postgresDialect) timeArg(t time.Time) any { return t.UTC() }

func (postgresDialect) jsonParam(n int) string { return fmt.Sprintf("CAST($%d AS JSONB)", n) }

func (postgresDialect) inIDs(col string, n int) string {
	return fmt.Sprintf("%s = ANY(CAST($%d AS BIGINT[]))", col, n)
}

// idsArg binds ids as a BIGINT[] (nil would be NULL).
func (postgresDialect) idsArg(ids []int64) any {
	if ids == nil {
		return []int64{}
	}
	return ids
}

func (postgresDialect) isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// isUnavailable: a connection that could not be made, or a server error of
// class 08 (connection exception), 57P (operator intervention: shutdown,
// cannot connect now) or 53 (insufficient resources).
func (postgresDialect) isUnavailable(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) || pgconn.SafeToRetry(err) {
		return true
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return strings.HasPrefix(pe.Code, "08") || strings.HasPrefix(pe.Code, "57P") || strings.HasPrefix(pe.Code, "53") ||
		pe.Code == lockNotAvailable
}

// lockNotAvailable is the SQLSTATE of a lock wait that reached
// lock_timeout.
const lockNotAvailable = "55P03"

// isBusy: a lock wait reached lock_timeout.
func (postgresDialect) mapFile(context.Context, *sql.Conn, bool) error { return nil }

func (postgresDialect) isBusy(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == lockNotAvailable
}

// setBeginWait does nothing: PostgreSQL's BEGIN waits for no lock.
func (postgresDialect) setBeginWait(context.Context, *sql.Conn, time.Duration) error { return nil }

// boundLocks sets the transaction's lock_timeout.
func (postgresDialect) boundLocks(ctx context.Context, tx *Tx, d time.Duration) error {
	tx.beforeStatement()
	_, err := tx.tx.ExecContext(ctx, "SELECT set_config('lock_timeout', $1, true)", fmt.Sprintf("%dms", d.Milliseconds()))
	return err
}

func (postgresDialect) connState(any) *connState { return nil }

// setScope sets the transaction-local settings the guard triggers read.
func (postgresDialect) setScope(ctx context.Context, tx *Tx, s Scope) error {
	tx.beforeStatement()
	_, err := tx.tx.ExecContext(ctx,
		`SELECT set_config('etl_craft.actor', $1, true), set_config('etl_craft.actor_kind', $2, true),
		        set_config('etl_craft.purpose', $3, true), set_config('etl_craft.migration', $4, true)`,
		s.Actor.Name, string(s.Actor.Kind), s.Purpose, s.Migration)
	return err
}

func (postgresDialect) tablesQuery() string {
	return `SELECT table_name FROM information_schema.tables
	        WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY upper(table_name)`
}

func (postgresDialect) columnsQuery() string {
	return `SELECT column_name, data_type FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position`
}

// columnType maps an information_schema data type.
func (postgresDialect) columnType(dataType string) ColumnType {
	switch dataType {
	case "smallint", "integer", "bigint":
		return IntegerColumn
	case "numeric", "real", "double precision":
		return NumberColumn
	case "timestamp with time zone", "timestamp without time zone":
		return TimestampColumn
	case "date":
		return DateColumn
	case "boolean":
		return BooleanColumn
	}
	return TextColumn
}

// readsAsText reads text and numbers as their text.
func (postgresDialect) readsAsText(t ColumnType) bool { return t == TextColumn || t == NumberColumn }

// from leaves the schema to the connection's search_path, which is the
// Engine schema: the schema the tables and columns were listed from
// (current_schema()), whatever the letter case it was configured in.
func (postgresDialect) from(table string) string { return quoteIdent(table) }

// copyOut runs COPY (query) TO STDOUT in a read-only transaction of its
// own, whose DateStyle and TimeZone are pinned for the reader to parse the
// text whatever its own settings.
func (postgresDialect) copyOut(ctx context.Context, db *DB, query string, w io.Writer) error {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT set_config('DateStyle', 'ISO', true), set_config('TimeZone', 'UTC', true)"); err != nil {
		return err
	}
	err = conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the PostgreSQL driver connection is a %T", dc)
		}
		_, err := sc.Conn().PgConn().CopyTo(ctx, w, CopyOutStatement(query))
		return err
	})
	if err != nil {
		return err
	}
	return tx.Commit()
}

// vacuum vacuums and analyzes each table.
func (postgresDialect) vacuum(ctx context.Context, db *DB, tables []string) error {
	for _, t := range tables {
		if _, err := db.sql.ExecContext(ctx, "VACUUM (ANALYZE) "+quoteIdent(strings.ToLower(t))); err != nil {
			return fmt.Errorf("vacuuming %s: %w", t, err)
		}
	}
	return nil
}
