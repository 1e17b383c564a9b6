package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// EventsChannel is the PostgreSQL notification channel on which the engine
// announces work for the server: a run queued for it (a scheduled tick, or
// a run started with no owner, as run --init-only does), a run cancelled,
// a pipeline paused.
const EventsChannel = "etl_craft_events"

// The events the engine announces on EventsChannel, as payloads.
const (
	EventQueued    = "queued"
	EventCancelled = "cancelled"
	EventPaused    = "paused"
)

// Notify announces an event to the listeners of EventsChannel when the
// transaction commits (pg_notify). An Engine DB without events
// (Capabilities().Events false: SQLite) does nothing: its server polls.
func (tx *Tx) Notify(ctx context.Context, event string) error {
	if !tx.d.capabilities().Events {
		return nil
	}
	_, err := tx.ExecContext(ctx, "SELECT pg_notify($1, $2)", EventsChannel, event)
	return exit.Wrap(exit.EngineDB, err, "could not announce the %s event on %s", event, EventsChannel)
}

// Listener receives the notifications of EventsChannel on a connection of
// its own.
type Listener struct {
	conn *sql.Conn
}

// Listen opens a Listener on EventsChannel. An Engine DB without events
// returns a nil Listener, whose Wait blocks until ctx ends.
func (db *DB) Listen(ctx context.Context) (*Listener, error) {
	if !db.Capabilities().Events {
		return nil, nil
	}
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not connect to the Engine DB to listen on %s", EventsChannel)
	}
	if _, err := conn.ExecContext(ctx, "LISTEN "+EventsChannel); err != nil {
		conn.Close()
		return nil, exit.Wrap(exit.EngineDB, err, "could not listen on %s", EventsChannel)
	}
	return &Listener{conn: conn}, nil
}

// Wait blocks until a notification arrives and returns its payload, or
// until ctx ends (the error is then ctx's). A nil Listener only waits for
// ctx.
func (l *Listener) Wait(ctx context.Context) (string, error) {
	if l == nil {
		<-ctx.Done()
		return "", ctx.Err()
	}
	var payload string
	err := l.conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the PostgreSQL driver connection is a %T", dc)
		}
		n, err := sc.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		payload = n.Payload
		return nil
	})
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	return payload, exit.Wrap(exit.EngineDB, err, "lost the connection listening on %s", EventsChannel)
}

// Close ends the listening connection. Closing a nil Listener does nothing.
func (l *Listener) Close() error {
	if l == nil {
		return nil
	}
	// The connection is closed rather than given back to the pool, where it
	// would go on listening (and an interrupted Wait leaves it unusable).
	l.conn.Raw(func(dc any) error {
		if c, ok := dc.(interface{ Close() error }); ok {
			c.Close()
		}
		return driver.ErrBadConn
	})
	return l.conn.Close()
}
