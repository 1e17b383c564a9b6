package lock

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// lockNotAvailable is PostgreSQL's SQLSTATE for a lock wait that passed
// lock_timeout.
const lockNotAvailable = "55P03"

// acquireAdvisory takes the transaction-level advisory lock of name on a
// connection of its own, in a transaction that lasts until the lock's
// Release ends it. The server ends that transaction, and so the lock, when
// the connection drops, with its process or a restart of the database;
// Check asks the connection whether it still answers.
func acquireAdvisory(ctx context.Context, db *engine.DB, name string, wait time.Duration, waiting func()) (*Held, error) {
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		return nil, advisoryFailed(ctx, name, err)
	}
	// The transaction must outlive ctx: ending it would release the lock.
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		conn.Close()
		return nil, advisoryFailed(ctx, name, err)
	}
	abandon := func(err error) (*Held, error) {
		tx.Rollback()
		conn.Close()
		return nil, err
	}
	// The lock lasts as long as its transaction, which stays idle while the
	// work it guards goes on (the server's, for days): a configured
	// idle_in_transaction_session_timeout must not end it.
	if _, err := tx.ExecContext(ctx, "SELECT set_config('idle_in_transaction_session_timeout', '0', true)"); err != nil {
		return abandon(advisoryFailed(ctx, name, err))
	}
	k := key(name)
	var got bool
	if err := tx.QueryRowContext(ctx, "SELECT pg_try_advisory_xact_lock($1)", k).Scan(&got); err != nil {
		return abandon(advisoryFailed(ctx, name, err))
	}
	if !got {
		waiting()
		if wait > 0 {
			ms := strconv.FormatInt(wait.Milliseconds()+1, 10) + "ms" // rounded up: 0 would mean no limit
			if _, err := tx.ExecContext(ctx, "SELECT set_config('lock_timeout', $1, true)", ms); err != nil {
				return abandon(advisoryFailed(ctx, name, err))
			}
		}
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", k); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == lockNotAvailable {
				return abandon(timedOut(name, wait))
			}
			return abandon(advisoryFailed(ctx, name, err))
		}
	}
	return &Held{
		release: func() error { return releaseAdvisory(conn, tx, name) },
		check: func(ctx context.Context) error {
			// The lock lasts as long as its transaction, and so as long
			// as the connection answers.
			_, err := tx.ExecContext(ctx, "SELECT 1")
			return exit.Wrap(exit.EngineDB, err, "lost the %s lock on the Engine DB with its connection", name)
		},
	}, nil
}

// releaseAdvisory ends the lock's transaction and returns its connection.
func releaseAdvisory(conn *sql.Conn, tx *sql.Tx, name string) error {
	err := tx.Rollback()
	if cerr := conn.Close(); err == nil {
		err = cerr
	}
	return exit.Wrap(exit.EngineDB, err, "could not release the %s lock on the Engine DB", name)
}

// advisoryFailed is the error of a failure to take the lock other than
// contention: the wait's end when ctx ended, else an Engine DB error.
func advisoryFailed(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil {
		return stopped(ctx, name)
	}
	return exit.Wrap(exit.EngineDB, err,
		"could not take the %s lock on the Engine DB (check its connectivity and authentication before retrying)", name)
}
