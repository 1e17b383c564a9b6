package inspect

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// Pause is a pipeline's open pause (an AUD_PIPELINE_PAUSES row not yet
// resumed).
type Pause struct {
	PausedAt     Instant `json:"paused_at"`
	PausedBy     string  `json:"paused_by"`
	PausedByKind *string `json:"paused_by_kind"`
	Reason       string  `json:"reason"`
}

// Describe says who paused the pipeline, since when and why, in one line.
func (p Pause) Describe() string {
	who := p.PausedBy
	if p.PausedByKind != nil {
		who += " (" + *p.PausedByKind + ")"
	}
	return fmt.Sprintf("paused by %s since %s: %s", who, p.PausedAt, p.Reason)
}

// PipelineView is an active pipeline's definition and its open pause.
type PipelineView struct {
	Schema       string   `json:"schema"`
	PipelineID   int64    `json:"pipeline_id"`
	PipelineCode string   `json:"pipeline_code"`
	PipelineName string   `json:"pipeline_name"`
	RefreshType  string   `json:"refresh_type"`
	RunSchedule  *string  `json:"run_schedule"`
	SLAInHours   *float64 `json:"sla_in_hours"`
	Paused       *Pause   `json:"paused"`
}

// PipelineList is every active pipeline, in code order.
type PipelineList struct {
	Schema    string         `json:"schema"`
	Pipelines []PipelineView `json:"pipelines"`
}

// ListPipelines returns the active pipelines with their pause state.
func ListPipelines(ctx context.Context, q engine.Querier) (PipelineList, error) {
	all, err := pipeline.List(ctx, q)
	if err != nil {
		return PipelineList{}, err
	}
	pauses, err := openPauses(ctx, q)
	if err != nil {
		return PipelineList{}, err
	}
	out := PipelineList{Schema: SchemaPipelineList, Pipelines: []PipelineView{}}
	for _, p := range all {
		out.Pipelines = append(out.Pipelines, view(p, pauses[p.ID]))
	}
	return out, nil
}

// pipelineView returns one pipeline's view with its pause state.
func pipelineView(ctx context.Context, q engine.Querier, p pipeline.Pipeline) (PipelineView, error) {
	pauses, err := openPauses(ctx, q)
	if err != nil {
		return PipelineView{}, err
	}
	return view(p, pauses[p.ID]), nil
}

func view(p pipeline.Pipeline, pause *Pause) PipelineView {
	v := PipelineView{Schema: SchemaPipeline, PipelineID: p.ID, PipelineCode: p.Code, PipelineName: p.Name,
		RefreshType: p.RefreshType, Paused: pause}
	if p.RunSchedule != "" {
		s := p.RunSchedule
		v.RunSchedule = &s
	}
	if p.SLAHours.Valid {
		h := p.SLAHours.Float64
		v.SLAInHours = &h
	}
	return v
}

// openPauses returns the open pause of every paused pipeline, by pipeline id.
func openPauses(ctx context.Context, q engine.Querier) (map[int64]*Pause, error) {
	rows, err := q.QueryContext(ctx, `SELECT PIPELINE_ID, PAUSED_AT, PAUSED_BY, PAUSED_BY_KIND, REASON
		FROM AUD_PIPELINE_PAUSES WHERE RESUMED_AT IS NULL`)
	if err != nil {
		return nil, readError(err, "AUD_PIPELINE_PAUSES")
	}
	defer rows.Close()
	out := map[int64]*Pause{}
	for rows.Next() {
		var id int64
		var at engine.Time
		var kind sql.NullString
		p := &Pause{}
		if err := rows.Scan(&id, &at, &p.PausedBy, &kind, &p.Reason); err != nil {
			return nil, readError(err, "AUD_PIPELINE_PAUSES")
		}
		p.PausedAt = Instant{at.Time}
		p.PausedByKind = nullString(kind)
		out[id] = p
	}
	return out, rows.Err()
}

// nullString converts a scanned nullable text; NULL gives nil.
func nullString(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	return &s.String
}

// nullInt converts a scanned nullable integer; NULL gives nil.
func nullInt(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}
