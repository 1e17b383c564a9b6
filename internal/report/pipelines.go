package report

import (
	"fmt"

	"github.com/etl-craft/etl-craft/internal/freetext"
)

// Pause is a pipeline's open pause (an AUD_PIPELINE_PAUSES row not yet
// resumed).
type Pause struct {
	PausedAt     Instant `json:"paused_at"`
	PausedBy     string  `json:"paused_by"`
	PausedByKind *string `json:"paused_by_kind"`
	Reason       string  `json:"reason"`
}

// Describe says who paused the pipeline, since when and why, in one line:
// the stored name and reason with their hidden characters escaped
// (freetext.Visible).
func (p Pause) Describe() string {
	who := freetext.Visible(p.PausedBy)
	if p.PausedByKind != nil {
		who += " (" + *p.PausedByKind + ")"
	}
	return fmt.Sprintf("paused by %s since %s: %s", who, p.PausedAt, freetext.Visible(p.Reason))
}

// PipelineView is an active pipeline's definition, its open pause and its
// next schedule tick.
type PipelineView struct {
	Schema       string   `json:"schema"`
	PipelineID   int64    `json:"pipeline_id"`
	PipelineCode string   `json:"pipeline_code"`
	PipelineName string   `json:"pipeline_name"`
	RefreshType  string   `json:"refresh_type"`
	RunSchedule  *string  `json:"run_schedule"`
	SLAInHours   *float64 `json:"sla_in_hours"`
	Paused       *Pause   `json:"paused"`
	// NextTick is the first tick of RUN_SCHEDULE after now; nil without a
	// schedule, while paused, or when the schedule settings are invalid.
	NextTick *Instant `json:"next_tick"`
	// ScheduleError says why the schedule settings are invalid; nil when
	// they are valid or there is no schedule.
	ScheduleError *string `json:"schedule_error"`
}

// DescribeNextTick says when the pipeline next ticks: the instant, "none"
// without a schedule, "none while paused", or "invalid: <reason>".
func (v PipelineView) DescribeNextTick() string {
	switch {
	case v.ScheduleError != nil:
		return "invalid: " + *v.ScheduleError
	case v.NextTick != nil:
		return v.NextTick.String()
	case v.RunSchedule != nil && v.Paused != nil:
		return "none while paused"
	default:
		return "none"
	}
}

// PipelineList is every active pipeline, in code order.
type PipelineList struct {
	Schema    string         `json:"schema"`
	Pipelines []PipelineView `json:"pipelines"`
}
