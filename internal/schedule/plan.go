package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Overlap policies (CFG_PIPELINES.OVERLAP_POLICY).
const (
	OverlapSkip  = "SKIP"
	OverlapQueue = "QUEUE"
)

// The reasons recorded with a scheduled run (its NEW_RUN intervention).
const (
	ReasonScheduled = "scheduled tick"
	ReasonMissed    = "missed while no overseer was running"
	ReasonOverlap   = "previous run still active"
)

// MaxMissedRecorded bounds the missed ticks one plan records SKIPPED: the
// most recent ones before the ticks it queues. Older missed ticks are not
// recorded (Plan.MoreMissed says there were some), so a schedule of every
// minute with a start date years ago costs a bounded amount of work.
const MaxMissedRecorded = 100

// runKeyPrefix starts the RUN_KEY of every scheduled run.
const runKeyPrefix = "schedule:"

// runKeyLayout is the reference's UTC ISO-8601 instant, with a +00:00 offset.
const runKeyLayout = "2006-01-02T15:04:05-07:00"

// RunKey returns a tick's RUN_KEY: schedule:<UTC ISO instant>, such as
// schedule:2026-01-04T06:00:00+00:00.
func RunKey(at time.Time) string { return runKeyPrefix + at.UTC().Format(runKeyLayout) }

// ParseRunKey returns the instant of a scheduled run's RUN_KEY.
func ParseRunKey(key string) (time.Time, error) {
	text, ok := strings.CutPrefix(key, runKeyPrefix)
	t, err := time.Parse(time.RFC3339, text)
	if _, offset := t.Zone(); !ok || err != nil || offset != 0 {
		return time.Time{}, fmt.Errorf("RUN_KEY '%s' is not %s<UTC ISO instant>, such as %s", key, runKeyPrefix, RunKey(time.Date(2026, 1, 4, 6, 0, 0, 0, time.UTC)))
	}
	return t.UTC(), nil
}

// Settings are a pipeline's schedule columns in CFG_PIPELINES, as read.
type Settings struct {
	// RunSchedule is RUN_SCHEDULE (a pipeline without one is not scheduled).
	RunSchedule string
	// Timezone is SCHEDULE_TIMEZONE, "" when NULL.
	Timezone string
	// StartDate is SCHEDULE_START_DATE (YYYY-MM-DD), "" when NULL.
	StartDate string
	// Catchup is CATCHUP = 'Y'.
	Catchup bool
	// MaxCatchupRuns is MAX_CATCHUP_RUNS.
	MaxCatchupRuns int
	// OverlapPolicy is OVERLAP_POLICY: OverlapSkip or OverlapQueue.
	OverlapPolicy string
	// Created is the pipeline's CREATE_DATE: without a StartDate, ticks
	// start after it. A caller with no CREATE_DATE passes the time it first
	// saw the pipeline.
	Created time.Time
}

// Timetable is a pipeline's checked schedule settings: when it ticks, and
// what becomes of missed and overlapping ticks.
type Timetable struct {
	schedule Schedule
	location *time.Location
	// after is the instant ticks come strictly after: just before the start
	// date's first instant, else the creation time.
	after   time.Time
	keep    int
	overlap string
}

// NewTimetable checks a pipeline's schedule settings. The zone is
// SCHEDULE_TIMEZONE, else fallback (Orchestration.Timezone), else UTC. The
// error names the column at fault.
func NewTimetable(s Settings, fallback *time.Location) (Timetable, error) {
	sched, err := Parse(s.RunSchedule)
	if err != nil {
		return Timetable{}, fmt.Errorf("RUN_SCHEDULE %w", err)
	}
	tt := Timetable{schedule: sched, location: fallback, keep: 1, overlap: s.OverlapPolicy}
	if tt.location == nil {
		tt.location = time.UTC
	}
	if s.Timezone != "" {
		loc, err := time.LoadLocation(s.Timezone)
		if err != nil || s.Timezone == "Local" {
			return Timetable{}, fmt.Errorf("SCHEDULE_TIMEZONE '%s' is not an IANA time zone name, such as Europe/Berlin or UTC", s.Timezone)
		}
		tt.location = loc
	}
	if s.MaxCatchupRuns < 1 {
		return Timetable{}, fmt.Errorf("MAX_CATCHUP_RUNS is %d: it must be at least 1", s.MaxCatchupRuns)
	}
	if s.Catchup {
		tt.keep = s.MaxCatchupRuns
	}
	if s.OverlapPolicy != OverlapSkip && s.OverlapPolicy != OverlapQueue {
		return Timetable{}, fmt.Errorf("OVERLAP_POLICY '%s' is not %s or %s", s.OverlapPolicy, OverlapSkip, OverlapQueue)
	}
	switch {
	case s.StartDate != "":
		day, err := time.Parse(time.DateOnly, s.StartDate)
		if err != nil {
			return Timetable{}, fmt.Errorf("SCHEDULE_START_DATE '%s' is not a date YYYY-MM-DD", s.StartDate)
		}
		// The date's first instant (after a gap over midnight, its end).
		tt.after = instantOf(day, tt.location).Add(-time.Nanosecond)
	case s.Created.IsZero():
		return Timetable{}, errors.New("SCHEDULE_START_DATE and the creation time are both unknown: ticks have no start")
	default:
		tt.after = s.Created
	}
	return tt, nil
}

// Schedule returns the parsed RUN_SCHEDULE.
func (tt Timetable) Schedule() Schedule { return tt.schedule }

// Location returns the zone the schedule is evaluated in.
func (tt Timetable) Location() *time.Location { return tt.location }

// Next returns the pipeline's first tick strictly after t, and never before
// its start, in UTC.
func (tt Timetable) Next(t time.Time) time.Time {
	if t.Before(tt.after) {
		t = tt.after
	}
	return tt.schedule.Next(t, tt.location)
}

// Tick is one scheduled run to create: QUEUED, or SKIPPED with its reason.
// Its TRIGGER_KIND is SCHEDULE.
type Tick struct {
	// At is the tick's instant, in UTC.
	At time.Time
	// RunKey is schedule:<UTC ISO instant>.
	RunKey string
	// RunDate is the tick's local date, YYYY-MM-DD.
	RunDate string
	// Skipped says the run is recorded SKIPPED, not QUEUED.
	Skipped bool
	// Reason is why the run exists: ReasonScheduled for a queued tick,
	// ReasonMissed or ReasonOverlap for a skipped one.
	Reason string
}

// Plan is what a pipeline's due ticks become.
type Plan struct {
	// Ticks are the runs to create, oldest first, each in its own commit.
	Ticks []Tick
	// MoreMissed says older missed ticks exist that the plan does not record
	// (beyond MaxMissedRecorded).
	MoreMissed bool
	// Next is the first tick after now: when to plan again.
	Next time.Time
}

// Due plans the ticks due by now. last is the latest tick already recorded
// (the zero time when none is): only later ticks are due. busy says the
// pipeline has queued or active work. The latest due tick (with CATCHUP Y,
// up to MAX_CATCHUP_RUNS of the latest) is queued, or recorded SKIPPED for
// the overlap while busy under OVERLAP_POLICY SKIP; the missed ticks before
// them are recorded SKIPPED, the MaxMissedRecorded most recent of them.
func (tt Timetable) Due(now, last time.Time, busy bool) Plan {
	after := tt.after
	if last.After(after) {
		after = last
	}
	plan := Plan{Next: tt.Next(maxTime(after, now))}
	ticks, more := tt.latest(after, now, tt.keep+MaxMissedRecorded)
	plan.MoreMissed = more
	missed := max(len(ticks)-tt.keep, 0)
	for i, at := range ticks {
		t := Tick{At: at, RunKey: RunKey(at), RunDate: at.In(tt.location).Format(time.DateOnly), Reason: ReasonScheduled}
		switch {
		case i < missed:
			t.Skipped, t.Reason = true, ReasonMissed
		case busy && tt.overlap == OverlapSkip:
			t.Skipped, t.Reason = true, ReasonOverlap
		}
		plan.Ticks = append(plan.Ticks, t)
	}
	return plan
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// latest returns the last n ticks in (after, until], oldest first, and
// whether earlier ticks exist there. It looks back from until over windows
// that double, so it never walks from a distant start.
func (tt Timetable) latest(after, until time.Time, n int) ([]time.Time, bool) {
	if !until.After(after) {
		return nil, false
	}
	span := until.Sub(after) // saturates for a distant start
	width := min(time.Duration(n)*time.Minute, span)
	for {
		from := after
		if width < span {
			from = until.Add(-width)
		}
		ticks, more := tt.between(from, until, n)
		if len(ticks) == n || from.Equal(after) {
			if !more && !from.Equal(after) {
				more = !tt.schedule.Next(after, tt.location).After(from)
			}
			return ticks, more
		}
		if width > span/2 {
			width = span
		} else {
			width *= 2
		}
	}
}

// between returns the last n ticks in (from, until], oldest first, and
// whether it dropped earlier ones.
func (tt Timetable) between(from, until time.Time, n int) ([]time.Time, bool) {
	var ticks []time.Time
	more := false
	for at := tt.schedule.Next(from, tt.location); !at.IsZero() && !at.After(until); at = tt.schedule.Next(at, tt.location) {
		if len(ticks) == n {
			ticks, more = ticks[1:], true
		}
		ticks = append(ticks, at)
	}
	return ticks, more
}
