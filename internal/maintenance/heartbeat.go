package maintenance

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// HeartbeatEvery is how often the overseer refreshes HEARTBEAT_AT.
const HeartbeatEvery = 15 * time.Second

// Heartbeat is the overseer's AUD_OVERSEERS row: recorded at start (host,
// pid, version, started at and by), its HEARTBEAT_AT refreshed every
// HeartbeatEvery, and its stop time and actor recorded by Stop. The row is
// history: leadership is the Leader's lock.
type Heartbeat struct {
	DB      *engine.DB
	Version string
	Logger  *slog.Logger
	// Every overrides HeartbeatEvery (tests); zero means HeartbeatEvery.
	Every time.Duration

	id   int64
	ctx  context.Context
	loop loop
	// beat is when HEARTBEAT_AT was last written, in Unix nanoseconds.
	beat atomic.Int64
}

// BeatAt is when the heartbeat was last recorded: at start, then at each
// beat that could be written.
func (h *Heartbeat) BeatAt() time.Time { return time.Unix(0, h.beat.Load()) }

// Name names the service.
func (h *Heartbeat) Name() string { return "heartbeat" }

// ID is the overseer's OVERSEER_ID, once started.
func (h *Heartbeat) ID() int64 { return h.id }

// Start records the overseer's row as the context's actor and starts the
// heartbeat.
func (h *Heartbeat) Start(ctx context.Context) error {
	host, _ := os.Hostname()
	a := actor.From(ctx)
	now := time.Now()
	err := h.DB.Tx(ctx, func(tx *engine.Tx) error {
		return tx.QueryRowContext(ctx, `INSERT INTO AUD_OVERSEERS (HOST, PID, VERSION, STARTED_AT, HEARTBEAT_AT, STARTED_BY, STARTED_BY_KIND)
			VALUES ($1, $2, $3, $4, $4, $5, $6) RETURNING OVERSEER_ID`,
			host, os.Getpid(), h.Version, tx.TimeArg(now), a.Name, string(a.Kind)).Scan(&h.id)
	})
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not record the overseer in AUD_OVERSEERS")
	}
	h.beat.Store(now.UnixNano())
	h.ctx = ctx
	h.loop = loop{every: h.Every, work: h.refresh}
	if h.loop.every <= 0 {
		h.loop.every = HeartbeatEvery
	}
	h.loop.start(ctx)
	return nil
}

// refresh refreshes HEARTBEAT_AT; a failure is logged and tried at the next
// beat.
func (h *Heartbeat) refresh(ctx context.Context) {
	now := time.Now()
	err := h.DB.Tx(ctx, func(tx *engine.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE AUD_OVERSEERS SET HEARTBEAT_AT = $2 WHERE OVERSEER_ID = $1 AND STOPPED_AT IS NULL",
			h.id, tx.TimeArg(now))
		return err
	})
	if err == nil {
		h.beat.Store(now.UnixNano())
	}
	if err != nil && ctx.Err() == nil {
		logger(h.Logger).Warn("could not refresh the overseer's heartbeat; trying again", "overseer_id", h.id, "error", err)
	}
}

// Stop ends the heartbeat and records the stop time and actor.
func (h *Heartbeat) Stop() {
	if h.id == 0 {
		return
	}
	h.loop.stop()
	ctx := context.WithoutCancel(h.ctx)
	a := actor.From(ctx)
	err := h.DB.Tx(ctx, func(tx *engine.Tx) error {
		now := tx.TimeArg(time.Now())
		_, err := tx.ExecContext(ctx, `UPDATE AUD_OVERSEERS SET HEARTBEAT_AT = $2, STOPPED_AT = $2, STOPPED_BY = $3, STOPPED_BY_KIND = $4
			WHERE OVERSEER_ID = $1`, h.id, now, a.Name, string(a.Kind))
		return err
	})
	if err != nil {
		logger(h.Logger).Error("could not record the overseer's stop in AUD_OVERSEERS", "overseer_id", h.id, "error", err)
	}
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
