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
	"github.com/etl-craft/etl-craft/internal/freetext"
	"github.com/etl-craft/etl-craft/internal/records"
)

// A paused pipeline starts nothing: no new run, and no new task of a run in
// progress, which stays IN-PROGRESS until the pipeline is resumed. Pauses are
// kept in AUD_PIPELINE_PAUSES, at most one open (not resumed) per pipeline.

// Change is what a pause or a resume did.
type Change struct {
	PipelineID   int64
	PipelineCode string
	// Pause is the pause opened, or the one closed.
	Pause records.Paused
	// ActiveRunID is the pipeline's IN-PROGRESS run, 0 when none.
	ActiveRunID int64
	// Message says what was done, in one line; it names request fields as
	// {field} (see exit.RequestFields).
	Message string
}

// RefusedRemotely is the refusal of a pause or a resume (the verb) in
// remote mode (exit 10), where the orchestrator alone decides what runs.
func RefusedRemotely(verb string) error {
	return exit.Errorf(exit.RunRefused,
		"%s is refused in remote mode: the orchestrator is the only source of truth; pause or resume the DAG there instead", verb)
}

// Pause pauses the pipeline, as the context's actor, for the reason. A
// pipeline already paused is refused (exit 9) naming who paused it and why.
func Pause(ctx context.Context, db *engine.DB, pipelineID int64, reason string) (Change, error) {
	a := actor.From(ctx)
	c, err := changePause(ctx, db, pipelineID, "pause", reason, func(tx *engine.Tx, c *Change, open *records.Paused) error {
		if open != nil {
			return alreadyPaused(c.PipelineCode, *open)
		}
		c.Pause = records.Paused{PipelineID: pipelineID, By: a.Name, Kind: string(a.Kind), Reason: reason, At: time.Now().UTC()}
		err := tx.QueryRowContext(ctx, `INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_AT, PAUSED_BY, PAUSED_BY_KIND, REASON)
			VALUES ($1, $2, $3, $4, $5) RETURNING PIPELINE_PAUSE_ID`,
			pipelineID, tx.TimeArg(c.Pause.At), a.Name, string(a.Kind), reason).Scan(&c.Pause.ID)
		if err != nil && db.IsUniqueViolation(err) {
			// Another process paused it meanwhile; its pause is visible
			// outside this (now failed) transaction.
			if other, _ := records.PausedBy(ctx, db, pipelineID); other != nil {
				return alreadyPaused(c.PipelineCode, *other)
			}
		}
		if err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not record the pause of %s in AUD_PIPELINE_PAUSES", c.PipelineCode)
		}
		return tx.Notify(ctx, engine.EventPaused)
	})
	if err != nil {
		return Change{}, err
	}
	c.Message = c.PipelineCode + ": paused; etl-craft run starts nothing of it until it is resumed"
	if c.ActiveRunID != 0 {
		c.Message += fmt.Sprintf("; pipeline_run_id=%d, in progress, starts no more tasks and stays %s", c.ActiveRunID, records.RunInProgress)
	}
	return c, nil
}

// Resume ends the pipeline's open pause, as the context's actor, for the
// reason. A pipeline that is not paused is refused (exit 9).
func Resume(ctx context.Context, db *engine.DB, pipelineID int64, reason string) (Change, error) {
	a := actor.From(ctx)
	c, err := changePause(ctx, db, pipelineID, "resume", reason, func(tx *engine.Tx, c *Change, open *records.Paused) error {
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
	change func(tx *engine.Tx, c *Change, open *records.Paused) error) (Change, error) {
	if strings.TrimSpace(reason) == "" {
		return Change{}, exit.Fieldf(exit.Usage, "%s needs a {reason}: say why, for the pause history", action)
	}
	if err := freetext.Check(reason); err != nil {
		return Change{}, exit.Fieldf(exit.Usage, "{reason} %v", err)
	}
	c := Change{PipelineID: pipelineID}
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		var active sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT p.PIPELINE_CODE,
				(SELECT max(r.PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_ID = p.PIPELINE_ID AND r.STATUS = $2)
			FROM CFG_PIPELINES p WHERE p.PIPELINE_ID = $1`, pipelineID, string(records.RunInProgress)).Scan(&c.PipelineCode, &active)
		if engine.IsNoRows(err) {
			return exit.Errorf(exit.Metadata, "CFG_PIPELINES has no pipeline with PIPELINE_ID %d", pipelineID)
		}
		if err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not read pipeline id %d", pipelineID)
		}
		c.ActiveRunID = active.Int64
		open, err := records.PausedBy(ctx, tx, pipelineID)
		if err != nil {
			return err
		}
		return change(tx, &c, open)
	})
	return c, err
}

// alreadyPaused is the refusal of a second pause.
func alreadyPaused(code string, p records.Paused) error {
	return exit.Errorf(exit.RunState, "%s is already %s; resume it (etl-craft resume {pipeline} %s {reason} …) before pausing it again", code, p, code)
}
