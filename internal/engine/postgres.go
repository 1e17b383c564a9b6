package engine

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pgauth"
)

type postgresDialect struct{}

func (postgresDialect) kind() Kind { return Postgres }

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

func (postgresDialect) isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

func (postgresDialect) connState(any) *connState { return nil }

// setScope sets the transaction-local settings the guard triggers read.
func (postgresDialect) setScope(ctx context.Context, tx *Tx, s Scope) error {
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
