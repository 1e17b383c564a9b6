package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Paused is a pipeline's open pause (an AUD_PIPELINE_PAUSES row not resumed).
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
func PausedBy(ctx context.Context, q Querier, pipelineID int64) (*Paused, error) {
	p := Paused{PipelineID: pipelineID}
	var kind sql.NullString
	var at Time
	err := q.QueryRowContext(ctx, `SELECT PIPELINE_PAUSE_ID, PAUSED_BY, PAUSED_BY_KIND, REASON, PAUSED_AT
		FROM AUD_PIPELINE_PAUSES WHERE PIPELINE_ID = $1 AND RESUMED_AT IS NULL`, pipelineID).
		Scan(&p.ID, &p.By, &kind, &p.Reason, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, readError(err, "AUD_PIPELINE_PAUSES")
	}
	p.Kind, p.At = kind.String, at.Time
	return &p, nil
}

// PausedPipelines returns the ids of the pipelines with an open pause.
func PausedPipelines(ctx context.Context, q Querier) (map[int64]bool, error) {
	rows, err := q.QueryContext(ctx, "SELECT PIPELINE_ID FROM AUD_PIPELINE_PAUSES WHERE RESUMED_AT IS NULL")
	if err != nil {
		return nil, readError(err, "AUD_PIPELINE_PAUSES")
	}
	defer rows.Close()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, readError(err, "AUD_PIPELINE_PAUSES")
		}
		out[id] = true
	}
	return out, readError(rows.Err(), "AUD_PIPELINE_PAUSES")
}
