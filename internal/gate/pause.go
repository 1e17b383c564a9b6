package gate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// A paused pipeline starts nothing: no new run, and no new task of a run in
// progress, which stays IN-PROGRESS until the pipeline is resumed. Pauses are
// kept in AUD_PIPELINE_PAUSES, at most one open (not resumed) per pipeline.

// Paused is a pipeline's open pause.
type Paused struct {
	ID         int64
	PipelineID int64
	// By and Kind are who paused it; Kind is "" for pauses recorded before
	// actor kinds were.
	By, Kind string
	Reason   string
	At       time.Time
}

// String says who paused the pipeline, since when and why, as list and
// status write it: "paused by alice@host (HUMAN) since 2026-03-01
// 09:00:00+00:00: warehouse maintenance".
func (p Paused) String() string {
	who := p.By
	if p.Kind != "" {
		who += " (" + p.Kind + ")"
	}
	return fmt.Sprintf("paused by %s since %s: %s", who, p.At.UTC().Format("2006-01-02 15:04:05-07:00"), p.Reason)
}

// PausedBy returns the pipeline's open pause, nil when it is not paused. The
// run engine asks before starting anything.
func PausedBy(ctx context.Context, q engine.Querier, pipelineID int64) (*Paused, error) {
	p := Paused{PipelineID: pipelineID}
	var kind sql.NullString
	var at engine.Time
	err := q.QueryRowContext(ctx, `SELECT PIPELINE_PAUSE_ID, PAUSED_BY, PAUSED_BY_KIND, REASON, PAUSED_AT
		FROM AUD_PIPELINE_PAUSES WHERE PIPELINE_ID = $1 AND RESUMED_AT IS NULL`, pipelineID).
		Scan(&p.ID, &p.By, &kind, &p.Reason, &at)
	if engine.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read AUD_PIPELINE_PAUSES")
	}
	p.Kind, p.At = kind.String, at.Time
	return &p, nil
}

// Change is what a pause or a resume did.
type Change struct {
	PipelineID   int64
	PipelineCode string
	// Pause is the pause opened, or the one closed.
	Pause Paused
	// ActiveRunID is the pipeline's IN-PROGRESS run, 0 when none.
	ActiveRunID int64
	// Message says what was done, in one line; it names request fields as
	// {field} (see exit.RequestFields).
	Message string
}

// Pause pauses the pipeline, as the context's actor, for the reason. A
// pipeline already paused is refused (exit 9) naming who paused it and why.
func Pause(ctx context.Context, db *engine.DB, pipelineID int64, reason string) (Change, error) {
	a := actor.From(ctx)
	c, err := changePause(ctx, db, pipelineID, "pause", reason, func(tx *engine.Tx, c *Change, open *Paused) error {
		if open != nil {
			return alreadyPaused(c.PipelineCode, *open)
		}
		c.Pause = Paused{PipelineID: pipelineID, By: a.Name, Kind: string(a.Kind), Reason: reason, At: time.Now().UTC()}
		err := tx.QueryRowContext(ctx, `INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_AT, PAUSED_BY, PAUSED_BY_KIND, REASON)
			VALUES ($1, $2, $3, $4, $5) RETURNING PIPELINE_PAUSE_ID`,
			pipelineID, tx.TimeArg(c.Pause.At), a.Name, string(a.Kind), reason).Scan(&c.Pause.ID)
		if err != nil && db.IsUniqueViolation(err) {
			// Another process paused it meanwhile; its pause is visible
			// outside this (now failed) transaction.
			if other, _ := PausedBy(ctx, db, pipelineID); other != nil {
				return alreadyPaused(c.PipelineCode, *other)
			}
		}
		return exit.Wrap(exit.EngineDB, err, "could not record the pause of %s in AUD_PIPELINE_PAUSES", c.PipelineCode)
	})
	if err != nil {
		return Change{}, err
	}
	c.Message = c.PipelineCode + ": paused; etl-craft run starts nothing of it until it is resumed"
	if c.ActiveRunID != 0 {
		c.Message += fmt.Sprintf("; pipeline_run_id=%d, in progress, starts no more tasks and stays IN-PROGRESS", c.ActiveRunID)
	}
	return c, nil
}

// Resume ends the pipeline's open pause, as the context's actor, for the
// reason. A pipeline that is not paused is refused (exit 9).
func Resume(ctx context.Context, db *engine.DB, pipelineID int64, reason string) (Change, error) {
	a := actor.From(ctx)
	c, err := changePause(ctx, db, pipelineID, "resume", reason, func(tx *engine.Tx, c *Change, open *Paused) error {
		var n int64
		if open != nil {
			c.Pause = *open
			res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINE_PAUSES
				SET RESUMED_AT = $2, RESUMED_BY = $3, RESUMED_BY_KIND = $4, RESUME_REASON = $5
				WHERE PIPELINE_PAUSE_ID = $1 AND RESUMED_AT IS NULL`,
				open.ID, tx.TimeArg(time.Now()), a.Name, string(a.Kind), reason)
			if n, err = affected(res, err); err != nil {
				return exit.Wrap(exit.EngineDB, err, "could not record the resumption of %s in AUD_PIPELINE_PAUSES", c.PipelineCode)
			}
		}
		if n == 0 {
			return exit.Errorf(exit.RunState, "%s is not paused; nothing to resume", c.PipelineCode)
		}
		return nil
	})
	if err != nil {
		return Change{}, err
	}
	c.Message = c.PipelineCode + ": resumed"
	if c.ActiveRunID != 0 {
		c.Message += fmt.Sprintf("; etl-craft run {pipeline} %s goes on with pipeline_run_id=%d", c.PipelineCode, c.ActiveRunID)
	}
	return c, nil
}

// changePause runs a pause or a resume (the action) in one transaction:
// it refuses a blank reason (exit 2), reads the pipeline's code, its run in
// progress and its open pause, and lets change record the change.
func changePause(ctx context.Context, db *engine.DB, pipelineID int64, action, reason string,
	change func(tx *engine.Tx, c *Change, open *Paused) error) (Change, error) {
	if strings.TrimSpace(reason) == "" {
		return Change{}, exit.Errorf(exit.Usage, "%s needs a reason: say why, for the pause history", action)
	}
	c := Change{PipelineID: pipelineID}
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		var active sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT p.PIPELINE_CODE,
				(SELECT max(r.PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_ID = p.PIPELINE_ID AND r.STATUS = 'IN-PROGRESS')
			FROM CFG_PIPELINES p WHERE p.PIPELINE_ID = $1`, pipelineID).Scan(&c.PipelineCode, &active)
		if engine.IsNoRows(err) {
			return exit.Errorf(exit.Metadata, "CFG_PIPELINES has no pipeline with PIPELINE_ID %d", pipelineID)
		}
		if err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not read pipeline id %d", pipelineID)
		}
		c.ActiveRunID = active.Int64
		open, err := PausedBy(ctx, tx, pipelineID)
		if err != nil {
			return err
		}
		return change(tx, &c, open)
	})
	return c, err
}

// alreadyPaused is the refusal of a second pause.
func alreadyPaused(code string, p Paused) error {
	return exit.Errorf(exit.RunState, "%s is already %s; resume it before pausing it again", code, p)
}
