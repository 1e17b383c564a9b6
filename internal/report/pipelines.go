package report

import (
	"fmt"
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
