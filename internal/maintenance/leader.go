package maintenance

import (
	"context"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/lock"
)

// Leader holds the overseer lock (lock.Overseer) for as long as it runs:
// on PostgreSQL an advisory lock on a connection of its own, beside a SQLite
// file an OS file lock. Either ends with the process, so a crashed server
// never keeps a successor out.
type Leader struct {
	DB   *engine.DB
	held *lock.Held
}

// Name names the service.
func (l *Leader) Name() string { return "leader" }

// Start takes the lock without waiting. When another server holds it, the
// error (exit 14) names that server's overseer id, host and pid, from its
// AUD_OVERSEERS row.
func (l *Leader) Start(ctx context.Context) error {
	held, err := lock.Acquire(ctx, l.DB, lock.Overseer(l.DB), time.Millisecond)
	if exit.Is(err, exit.LockTimeout) {
		return exit.Errorf(exit.LockTimeout, "another etl-craft server is the overseer of this Engine DB: %s; stop it first (one server per Engine DB)",
			activeOverseer(ctx, l.DB))
	}
	if err != nil {
		return err
	}
	l.held = held
	return nil
}

// Stop gives the lock up.
func (l *Leader) Stop() {
	if l.held != nil {
		l.held.Release()
	}
}

// activeOverseer describes the latest overseer row not stopped: the holder
// of the lock.
func activeOverseer(ctx context.Context, db *engine.DB) string {
	var id int64
	var host string
	var pid int
	var started engine.Time
	err := db.QueryRowContext(ctx, `SELECT OVERSEER_ID, HOST, PID, STARTED_AT FROM AUD_OVERSEERS
		WHERE STOPPED_AT IS NULL ORDER BY OVERSEER_ID DESC LIMIT 1`).Scan(&id, &host, &pid, &started)
	if err != nil {
		return "its AUD_OVERSEERS row could not be read (" + err.Error() + ")"
	}
	return "overseer_id=" + itoa64(id) + " host=" + host + " pid=" + itoa64(int64(pid)) +
		", started " + started.Time.UTC().Format(time.RFC3339)
}
