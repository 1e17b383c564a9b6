package engine

import (
	"context"
	"database/sql"
)

// Snapshot is one connection of the Engine DB holding a read-only
// transaction: every query run in it sees the database as one moment left
// it, whatever commits meanwhile. On SQLite the moment is the snapshot's
// first read; on PostgreSQL (REPEATABLE READ) its first statement.
type Snapshot struct {
	db   *DB
	conn *sql.Conn
}

// BeginSnapshot opens a snapshot on a connection of its own, which End
// gives back. A SQLite connection maps the file while the snapshot lasts,
// as snapshots make the large reads (a clone's).
func (db *DB) BeginSnapshot(ctx context.Context) (*Snapshot, error) {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if err := db.d.mapFile(ctx, conn, true); err != nil {
		conn.Close()
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, db.d.changeLog(db.Schema()).Begin); err != nil {
		db.d.mapFile(context.Background(), conn, false)
		conn.Close()
		return nil, err
	}
	return &Snapshot{db: db, conn: conn}, nil
}

// DB returns the Engine DB the snapshot reads.
func (s *Snapshot) DB() *DB { return s.db }

// QueryContext runs a query in the snapshot.
func (s *Snapshot) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return s.conn.QueryContext(ctx, s.db.d.rebind(query), args...)
}

// QueryRowContext runs a query returning at most one row in the snapshot.
func (s *Snapshot) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return s.conn.QueryRowContext(ctx, s.db.d.rebind(query), args...)
}

// ExecContext runs a statement in the snapshot's transaction, such as
// PostgreSQL's SET TRANSACTION SNAPSHOT; it writes nothing.
func (s *Snapshot) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return s.conn.ExecContext(ctx, s.db.d.rebind(query), args...)
}

// ReadRows reads the rows of a query of many rows in the snapshot (see
// DB.ReadRows); the snapshot is the reader's until it is closed.
func (s *Snapshot) ReadRows(ctx context.Context, query string, args ...any) (RowReader, error) {
	return s.db.d.readRows(ctx, s.conn, s.db.d.rebind(query), args...)
}

// End rolls the snapshot back and gives its connection back. Every reader
// of it must be closed first.
func (s *Snapshot) End() {
	_, _ = s.conn.ExecContext(context.Background(), "ROLLBACK")
	_ = s.db.d.mapFile(context.Background(), s.conn, false)
	s.conn.Close()
}
