package inspect

import (
	"context"
	"database/sql"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/schedule"
)

// ListPipelines returns the active pipelines with their pause state and
// their next schedule tick after now. zone is the zone of schedules without
// SCHEDULE_TIMEZONE (Orchestration.Timezone; nil means UTC).
func ListPipelines(ctx context.Context, q engine.Querier, zone *time.Location, now time.Time) (report.PipelineList, error) {
	all, err := pipeline.List(ctx, q)
	if err != nil {
		return report.PipelineList{}, err
	}
	pauses, err := openPauses(ctx, q)
	if err != nil {
		return report.PipelineList{}, err
	}
	out := report.PipelineList{Schema: report.SchemaPipelineList, Pipelines: []report.PipelineView{}}
	for _, p := range all {
		out.Pipelines = append(out.Pipelines, view(p, pauses[p.ID], zone, now))
	}
	return out, nil
}

// pipelineView returns one pipeline's view with its pause state and next
// tick (see ListPipelines).
func pipelineView(ctx context.Context, q engine.Querier, p pipeline.Pipeline, zone *time.Location, now time.Time) (report.PipelineView, error) {
	pauses, err := openPauses(ctx, q)
	if err != nil {
		return report.PipelineView{}, err
	}
	return view(p, pauses[p.ID], zone, now), nil
}

// view returns a pipeline's view. A paused pipeline has no next tick (the
// server skips it); invalid schedule settings give the reason instead.
func view(p pipeline.Pipeline, pause *report.Pause, zone *time.Location, now time.Time) report.PipelineView {
	v := report.PipelineView{Schema: report.SchemaPipeline, PipelineID: p.ID, PipelineCode: p.Code, PipelineName: p.Name,
		RefreshType: p.RefreshType, Paused: pause}
	if p.RunSchedule != "" {
		s := p.RunSchedule
		v.RunSchedule = &s
		tt, err := timetable(p, zone, now)
		if err != nil {
			reason := err.Error()
			v.ScheduleError = &reason
		} else if next := tt.Next(now); pause == nil && !next.IsZero() {
			v.NextTick = &report.Instant{Time: next}
		}
	}
	if p.SLAHours.Valid {
		h := p.SLAHours.Float64
		v.SLAInHours = &h
	}
	return v
}

// NextTicks returns the pipeline's next n schedule ticks after now, in UTC
// (zone as in ListPipelines): none without a schedule, or the error of
// invalid schedule settings.
func NextTicks(p pipeline.Pipeline, zone *time.Location, now time.Time, n int) ([]time.Time, error) {
	if p.RunSchedule == "" {
		return nil, nil
	}
	tt, err := timetable(p, zone, now)
	if err != nil {
		return nil, err
	}
	var out []time.Time
	for t := now; len(out) < n; {
		if t = tt.Next(t); t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out, nil
}

// timetable checks a scheduled pipeline's schedule settings
// (schedule.NewTimetable) with zone as the fallback zone. The pipeline's
// CREATE_DATE is not read: without SCHEDULE_START_DATE, ticks count from
// created, which for a next tick after now may be now.
func timetable(p pipeline.Pipeline, zone *time.Location, created time.Time) (schedule.Timetable, error) {
	return schedule.NewTimetable(schedule.Settings{RunSchedule: p.RunSchedule, Timezone: p.ScheduleTimezone,
		StartDate: p.ScheduleStartDate, Catchup: p.Catchup, MaxCatchupRuns: p.MaxCatchupRuns,
		OverlapPolicy: p.OverlapPolicy, Created: created}, zone)
}

// openPauses returns the open pause of every paused pipeline, by pipeline id.
func openPauses(ctx context.Context, q engine.Querier) (map[int64]*report.Pause, error) {
	rows, err := q.QueryContext(ctx, `SELECT PIPELINE_ID, PAUSED_AT, PAUSED_BY, PAUSED_BY_KIND, REASON
		FROM AUD_PIPELINE_PAUSES WHERE RESUMED_AT IS NULL`)
	if err != nil {
		return nil, readError(err, "AUD_PIPELINE_PAUSES")
	}
	defer rows.Close()
	out := map[int64]*report.Pause{}
	for rows.Next() {
		var id int64
		var at engine.Time
		var kind sql.NullString
		p := &report.Pause{}
		if err := rows.Scan(&id, &at, &p.PausedBy, &kind, &p.Reason); err != nil {
			return nil, readError(err, "AUD_PIPELINE_PAUSES")
		}
		p.PausedAt = report.Instant{Time: at.Time}
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
