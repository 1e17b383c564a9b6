package engine

import (
	"context"
	"database/sql"
)

// Snapshot runs fn's reads in one read-only snapshot of the Engine DB, on a
// connection of their own, so that what they read is one state even while
// others commit (ChangeLog().Begin opens it).
func (db *DB) Snapshot(ctx context.Context, fn func(q Querier) error) error {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, db.ChangeLog().Begin); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
	return fn(snapshotConn{conn: conn, db: db})
}

// snapshotConn is the Querier of a Snapshot: the connection holding it,
// rebinding as the DB does.
type snapshotConn struct {
	conn *sql.Conn
	db   *DB
}

func (c snapshotConn) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return c.conn.QueryContext(ctx, c.db.Rebind(query), args...)
}

func (c snapshotConn) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return c.conn.QueryRowContext(ctx, c.db.Rebind(query), args...)
}

func (c snapshotConn) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return c.conn.ExecContext(ctx, c.db.Rebind(query), args...)
}
