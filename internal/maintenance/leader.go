package maintenance

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/lock"
)

// LeaderCheckEvery is how often the leader checks that it still holds the
// overseer lock.
const LeaderCheckEvery = time.Second

// Leader holds the overseer lock (lock.Overseer) for as long as it runs:
// on PostgreSQL an advisory lock on a connection of its own, beside a SQLite
// file an OS file lock. Either ends with the process, so a crashed server
// never keeps a successor out.
//
// An advisory lock also ends with its connection, when the Engine DB
// restarts: the leader checks the lock every LeaderCheckEvery and, once
// lost, takes it again as soon as the database is back. When another
// server took it first, this one is no longer the overseer: Lost is called.
type Leader struct {
	DB     *engine.DB
	Logger *slog.Logger
	// Lost is called, once, when the lock was lost and another server
	// holds it now, with the error naming that server; nil for none.
	Lost func(error)
	// Every overrides LeaderCheckEvery (tests); zero means LeaderCheckEvery.
	Every time.Duration

	held *lock.Held
	// deposed is set once another server took the lock.
	deposed bool
	loop    loop
	// leading is set while the lock is held.
	leading atomic.Bool
}

// Name names the service.
func (l *Leader) Name() string { return "leader" }

// Leading reports whether the server holds the overseer lock now: false
// while it takes a lost lock again, and once it was deposed or stopped.
func (l *Leader) Leading() bool { return l.leading.Load() }

// Start takes the lock without waiting and starts checking it. When
// another server holds it, the error (exit 14) names that server's overseer
// id, host and pid, from its AUD_OVERSEERS row.
func (l *Leader) Start(ctx context.Context) error {
	held, err := l.take(ctx)
	if err != nil {
		return err
	}
	l.held = held
	l.leading.Store(true)
	l.loop = loop{every: l.Every, work: l.check}
	if l.loop.every <= 0 {
		l.loop.every = LeaderCheckEvery
	}
	l.loop.start(ctx)
	return nil
}

// take takes the lock without waiting.
func (l *Leader) take(ctx context.Context) (*lock.Held, error) {
	held, err := lock.Acquire(ctx, l.DB, lock.Overseer(l.DB), time.Millisecond)
	if exit.Is(err, exit.LockTimeout) {
		return nil, exit.Errorf(exit.LockTimeout, "another etl-craft server is the overseer of this Engine DB: %s; stop it first (one server per Engine DB)",
			activeOverseer(ctx, l.DB))
	}
	return held, err
}

// check makes sure the lock is held: a lost lock is taken again, and when
// another server has it, Lost is called and checking ends.
func (l *Leader) check(ctx context.Context) {
	log := logger(l.Logger)
	if l.deposed {
		return
	}
	if l.held != nil {
		err := l.held.Check(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Error("the overseer lock was lost with its Engine DB connection; taking it again", "error", err)
		l.leading.Store(false)
		l.held.Release()
		l.held = nil
	}
	held, err := l.take(ctx)
	switch {
	case err == nil:
		l.held = held
		l.leading.Store(true)
		log.Info("the overseer lock was taken again: the server is still the overseer")
	case exit.Is(err, exit.LockTimeout):
		log.Error("another server took the overseer lock while it was lost: this server is no longer the overseer", "error", err)
		l.deposed = true
		if l.Lost != nil {
			l.Lost(err)
		}
		l.loop.cancel() // nothing more to check
	case ctx.Err() == nil:
		log.Warn("could not take the overseer lock again yet; trying again", "every", l.loop.every.String(), "error", err)
	}
}

// Stop ends the checks and gives the lock up.
func (l *Leader) Stop() {
	l.loop.stop()
	l.leading.Store(false)
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
