package schedule

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func timetable(t *testing.T, s Settings, fallback *time.Location) Timetable {
	t.Helper()
	if s.MaxCatchupRuns == 0 {
		s.MaxCatchupRuns = 1
	}
	if s.OverlapPolicy == "" {
		s.OverlapPolicy = OverlapSkip
	}
	tt, err := NewTimetable(s, fallback)
	if err != nil {
		t.Fatalf("NewTimetable(%+v): %v", s, err)
	}
	return tt
}

// summary writes each tick as "<run key> <run date> <QUEUED|SKIPPED: reason>".
func summary(p Plan) []string {
	var out []string
	for _, tk := range p.Ticks {
		state := "QUEUED"
		if tk.Skipped {
			state = "SKIPPED: " + tk.Reason
		} else if tk.Reason != ReasonScheduled {
			state += " with reason " + tk.Reason
		}
		if tk.RunKey != RunKey(tk.At) || tk.At.Location() != time.UTC {
			state += fmt.Sprintf(" (key %s for %v)", tk.RunKey, tk.At)
		}
		out = append(out, tk.RunKey+" "+tk.RunDate+" "+state)
	}
	return out
}

const (
	queued  = "QUEUED"
	missed  = "SKIPPED: " + ReasonMissed
	overlap = "SKIPPED: " + ReasonOverlap
)

func TestDue(t *testing.T) {
	daily := Settings{RunSchedule: "0 6 * * *", Timezone: "Europe/Berlin", StartDate: "2026-01-01"}
	catchup := daily
	catchup.Catchup, catchup.MaxCatchupRuns = true, 2
	queue := catchup
	queue.OverlapPolicy = OverlapQueue
	day := func(d int, state string) string {
		return fmt.Sprintf("schedule:2026-01-%02dT05:00:00+00:00 2026-01-%02d %s", d, d, state)
	}
	cases := []struct {
		name      string
		settings  Settings
		now, last string
		busy      bool
		want      []string
		next      string
	}{
		{"catch-up Y: the latest MAX_CATCHUP_RUNS queued oldest first, older ones missed", catchup,
			"2026-01-05T12:00:00Z", "", false,
			[]string{day(1, missed), day(2, missed), day(3, missed), day(4, queued), day(5, queued)}, "2026-01-06T05:00:00Z"},
		{"catch-up N: only the latest queued", daily,
			"2026-01-05T12:00:00Z", "", false,
			[]string{day(1, missed), day(2, missed), day(3, missed), day(4, missed), day(5, queued)}, "2026-01-06T05:00:00Z"},
		{"a restart after the latest tick creates none again", catchup,
			"2026-01-05T12:00:00Z", "2026-01-05T05:00:00Z", false, nil, "2026-01-06T05:00:00Z"},
		{"only ticks after the last recorded one", catchup,
			"2026-01-05T12:00:00Z", "2026-01-03T05:00:00Z", false,
			[]string{day(4, queued), day(5, queued)}, "2026-01-06T05:00:00Z"},
		{"a tick is due at its instant", daily,
			"2026-01-06T05:00:00Z", "2026-01-05T05:00:00Z", false, []string{day(6, queued)}, "2026-01-07T05:00:00Z"},
		{"nothing due before the first tick", daily,
			"2026-01-01T04:59:59Z", "", false, nil, "2026-01-01T05:00:00Z"},
		{"overlap SKIP while busy: the due ticks are skipped", catchup,
			"2026-01-05T12:00:00Z", "", true,
			[]string{day(1, missed), day(2, missed), day(3, missed), day(4, overlap), day(5, overlap)}, "2026-01-06T05:00:00Z"},
		{"overlap SKIP while busy, one tick", daily,
			"2026-01-06T05:00:30Z", "2026-01-05T05:00:00Z", true, []string{day(6, overlap)}, "2026-01-07T05:00:00Z"},
		{"overlap QUEUE while busy: the due ticks stay queued", queue,
			"2026-01-05T12:00:00Z", "", true,
			[]string{day(1, missed), day(2, missed), day(3, missed), day(4, queued), day(5, queued)}, "2026-01-06T05:00:00Z"},
		{"the start date includes its local date, whose midnight is the day before in UTC",
			Settings{RunSchedule: "0 0 * * *", Timezone: "Europe/Berlin", StartDate: "2026-01-04"},
			"2026-01-04T12:00:00Z", "", false,
			[]string{"schedule:2026-01-03T23:00:00+00:00 2026-01-04 " + queued}, "2026-01-04T23:00:00Z"},
		{"the run date is the local date",
			Settings{RunSchedule: "30 0 * * *", Timezone: "America/New_York", StartDate: "2026-01-04"},
			"2026-01-04T06:00:00Z", "", false,
			[]string{"schedule:2026-01-04T05:30:00+00:00 2026-01-04 " + queued}, "2026-01-05T05:30:00Z"},
		{"the start date over a gap at midnight starts at the gap's end",
			Settings{RunSchedule: "0 * * * *", Timezone: "America/Havana", StartDate: "2026-03-08", Catchup: true, MaxCatchupRuns: 5},
			"2026-03-08T06:30:00Z", "", false,
			[]string{"schedule:2026-03-08T05:00:00+00:00 2026-03-08 " + queued, "schedule:2026-03-08T06:00:00+00:00 2026-03-08 " + queued},
			"2026-03-08T07:00:00Z"},
		{"without a start date, ticks come strictly after the creation time",
			Settings{RunSchedule: "0 6 * * *", Created: instantUTC("2026-01-04T06:00:00Z")},
			"2026-01-05T06:00:00Z", "", false,
			[]string{"schedule:2026-01-05T06:00:00+00:00 2026-01-05 " + queued}, "2026-01-06T06:00:00Z"},
		{"a tick just after creation is due",
			Settings{RunSchedule: "0 6 * * *", Created: instantUTC("2026-01-04T05:59:59Z")},
			"2026-01-05T06:00:00Z", "", false,
			[]string{"schedule:2026-01-04T06:00:00+00:00 2026-01-04 " + missed, "schedule:2026-01-05T06:00:00+00:00 2026-01-05 " + queued},
			"2026-01-06T06:00:00Z"},
		{"a repeated hour gives one run",
			Settings{RunSchedule: "30 1 * * *", Timezone: "America/New_York", StartDate: "2026-11-01", Catchup: true, MaxCatchupRuns: 5},
			"2026-11-01T12:00:00Z", "", false,
			[]string{"schedule:2026-11-01T05:30:00+00:00 2026-11-01 " + queued}, "2026-11-02T06:30:00Z"},
		{"leap days from a start decades ago",
			Settings{RunSchedule: "0 0 29 2 *", StartDate: "1990-01-01"},
			"2026-06-01T00:00:00Z", "", false,
			[]string{"schedule:1992-02-29T00:00:00+00:00 1992-02-29 " + missed, "schedule:1996-02-29T00:00:00+00:00 1996-02-29 " + missed,
				"schedule:2000-02-29T00:00:00+00:00 2000-02-29 " + missed, "schedule:2004-02-29T00:00:00+00:00 2004-02-29 " + missed,
				"schedule:2008-02-29T00:00:00+00:00 2008-02-29 " + missed, "schedule:2012-02-29T00:00:00+00:00 2012-02-29 " + missed,
				"schedule:2016-02-29T00:00:00+00:00 2016-02-29 " + missed, "schedule:2020-02-29T00:00:00+00:00 2020-02-29 " + missed,
				"schedule:2024-02-29T00:00:00+00:00 2024-02-29 " + queued},
			"2028-02-29T00:00:00Z"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tt := timetable(t, c.settings, nil)
			var last time.Time
			if c.last != "" {
				last = instant(t, c.last)
			}
			p := tt.Due(instant(t, c.now), last, c.busy)
			if got := summary(p); !slices.Equal(got, c.want) {
				t.Errorf("ticks:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(c.want, "\n     "))
			}
			if p.MoreMissed {
				t.Errorf("MoreMissed = true; want false")
			}
			if !p.Next.Equal(instant(t, c.next)) || p.Next.Location() != time.UTC {
				t.Errorf("Next = %v; want %s", p.Next, c.next)
			}
		})
	}
}

func instantUTC(text string) time.Time {
	at, err := time.Parse(time.RFC3339, text)
	if err != nil {
		panic(err)
	}
	return at
}

// TestDueBound: a schedule of every minute with a start date ten years ago
// records only the MaxMissedRecorded most recent missed ticks.
func TestDueBound(t *testing.T) {
	tt := timetable(t, Settings{RunSchedule: "* * * * *", StartDate: "2016-01-01", Catchup: true, MaxCatchupRuns: 3}, nil)
	now := instant(t, "2026-01-04T06:00:30Z")
	p := tt.Due(now, time.Time{}, false)
	if len(p.Ticks) != 3+MaxMissedRecorded || !p.MoreMissed {
		t.Fatalf("%d ticks, MoreMissed %v; want %d and true", len(p.Ticks), p.MoreMissed, 3+MaxMissedRecorded)
	}
	first := now.Truncate(time.Minute).Add(-time.Duration(len(p.Ticks)-1) * time.Minute)
	for i, tk := range p.Ticks {
		if want := first.Add(time.Duration(i) * time.Minute); !tk.At.Equal(want) {
			t.Fatalf("tick %d at %v; want %v", i, tk.At, want)
		}
		if wantSkipped := i < MaxMissedRecorded; tk.Skipped != wantSkipped || (tk.Skipped && tk.Reason != ReasonMissed) {
			t.Fatalf("tick %d skipped %v (%s); want skipped %v", i, tk.Skipped, tk.Reason, wantSkipped)
		}
	}

	// The bound's edge: exactly as many due ticks as a plan records, then one more.
	for _, c := range []struct {
		created string
		ticks   int
		more    bool
	}{
		{"2026-01-04T04:17:30Z", 3 + MaxMissedRecorded, false},
		{"2026-01-04T04:16:30Z", 3 + MaxMissedRecorded, true},
		{"2026-01-04T05:58:30Z", 2, false},
	} {
		tt := timetable(t, Settings{RunSchedule: "* * * * *", Created: instant(t, c.created), Catchup: true, MaxCatchupRuns: 3}, nil)
		p := tt.Due(now, time.Time{}, false)
		if len(p.Ticks) != c.ticks || p.MoreMissed != c.more || !p.Ticks[len(p.Ticks)-1].At.Equal(now.Truncate(time.Minute)) {
			t.Errorf("created %s: %d ticks, MoreMissed %v; want %d, %v, the last at %v", c.created, len(p.Ticks), p.MoreMissed, c.ticks, c.more, now)
		}
	}

	// A start in year 1, where the span overflows a time.Duration.
	tt = timetable(t, Settings{RunSchedule: "* * * * *", StartDate: "0001-01-01"}, nil)
	if p := tt.Due(now, time.Time{}, false); len(p.Ticks) != 1+MaxMissedRecorded || !p.MoreMissed {
		t.Errorf("from year 1: %d ticks, MoreMissed %v; want %d and true", len(p.Ticks), p.MoreMissed, 1+MaxMissedRecorded)
	}
	tt = timetable(t, Settings{RunSchedule: "0 0 29 2 *", StartDate: "0001-01-01"}, nil)
	if p := tt.Due(now, time.Time{}, false); len(p.Ticks) != 1+MaxMissedRecorded || !p.MoreMissed ||
		p.Ticks[len(p.Ticks)-1].RunKey != "schedule:2024-02-29T00:00:00+00:00" {
		t.Errorf("leap days from year 1: %d ticks, MoreMissed %v; want %d and true", len(p.Ticks), p.MoreMissed, 1+MaxMissedRecorded)
	}
}

func TestTimetableZone(t *testing.T) {
	berlin := zone(t, "Europe/Berlin")
	cases := []struct {
		name     string
		timezone string
		fallback *time.Location
		want     string
	}{
		{"SCHEDULE_TIMEZONE", "America/New_York", berlin, "America/New_York"},
		{"Orchestration.Timezone when NULL", "", berlin, "Europe/Berlin"},
		{"UTC without either", "", nil, "UTC"},
	}
	for _, c := range cases {
		tt := timetable(t, Settings{RunSchedule: "@daily", Timezone: c.timezone, StartDate: "2026-01-04"}, c.fallback)
		if got := tt.Location().String(); got != c.want {
			t.Errorf("%s: zone %s; want %s", c.name, got, c.want)
		}
		if tt.Schedule().String() != "@daily" {
			t.Errorf("%s: schedule %q; want @daily", c.name, tt.Schedule())
		}
		// Before the start, the next tick is the start date's midnight.
		if got, want := tt.Next(instant(t, "2020-01-01T00:00:00Z")), time.Date(2026, 1, 4, 0, 0, 0, 0, tt.Location()); !got.Equal(want) {
			t.Errorf("%s: Next before the start = %v; want %v", c.name, got, want)
		}
	}
}

func TestTimetableErrors(t *testing.T) {
	ok := Settings{RunSchedule: "0 6 * * *", MaxCatchupRuns: 1, OverlapPolicy: OverlapSkip, StartDate: "2026-01-04"}
	cases := []struct {
		name   string
		change func(*Settings)
		want   string
	}{
		{"cron field", func(s *Settings) { s.RunSchedule = "61 * * * *" },
			"RUN_SCHEDULE '61 * * * *': '61' is not a valid minute (0-59): end of range (61) above maximum (59)"},
		{"cron", func(s *Settings) { s.RunSchedule = "0 6 * *" }, "RUN_SCHEDULE '0 6 * *' has 4 fields, not 5"},
		{"no schedule", func(s *Settings) { s.RunSchedule = "" },
			"RUN_SCHEDULE '' is empty: give five cron fields or one of @hourly, @daily, @weekly, @monthly, @yearly, @annually"},
		{"zone", func(s *Settings) { s.Timezone = "Mars/Olympus" },
			"SCHEDULE_TIMEZONE 'Mars/Olympus' is not an IANA time zone name, such as Europe/Berlin or UTC"},
		{"the host's zone", func(s *Settings) { s.Timezone = "Local" },
			"SCHEDULE_TIMEZONE 'Local' is not an IANA time zone name, such as Europe/Berlin or UTC"},
		{"catch-up runs", func(s *Settings) { s.MaxCatchupRuns = 0 }, "MAX_CATCHUP_RUNS is 0: it must be at least 1"},
		{"overlap", func(s *Settings) { s.OverlapPolicy = "WAIT" }, "OVERLAP_POLICY 'WAIT' is not SKIP or QUEUE"},
		{"start date", func(s *Settings) { s.StartDate = "2026-13-01" }, "SCHEDULE_START_DATE '2026-13-01' is not a date YYYY-MM-DD"},
		{"start date with a time", func(s *Settings) { s.StartDate = "2026-01-04 00:00:00" },
			"SCHEDULE_START_DATE '2026-01-04 00:00:00' is not a date YYYY-MM-DD"},
		{"no start", func(s *Settings) { s.StartDate = "" },
			"SCHEDULE_START_DATE and the creation time are both unknown: ticks have no start"},
	}
	for _, c := range cases {
		s := ok
		c.change(&s)
		_, err := NewTimetable(s, nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: NewTimetable error\n got %v\nwant %s", c.name, err, c.want)
		}
	}
	if _, err := NewTimetable(ok, nil); err != nil {
		t.Errorf("NewTimetable(%+v): %v", ok, err)
	}
}

func TestRunKey(t *testing.T) {
	at := time.Date(2026, 1, 4, 7, 0, 0, 0, zone(t, "Europe/Berlin"))
	key := RunKey(at)
	if key != "schedule:2026-01-04T06:00:00+00:00" {
		t.Fatalf("RunKey = %s", key)
	}
	for _, k := range []string{key, "schedule:2026-01-04T06:00:00Z"} {
		back, err := ParseRunKey(k)
		if err != nil || !back.Equal(at) || back.Location() != time.UTC {
			t.Errorf("ParseRunKey(%s) = %v, %v; want %v in UTC", k, back, err, at)
		}
	}
	for _, bad := range []string{"schedule:2026-01-04T07:00:00+01:00", "manual:2026-01-04T06:00:00+00:00", "schedule:", "schedule:tomorrow", "2026-01-04T06:00:00+00:00"} {
		_, err := ParseRunKey(bad)
		want := "RUN_KEY '" + bad + "' is not schedule:<UTC ISO instant>, such as schedule:2026-01-04T06:00:00+00:00"
		if err == nil || err.Error() != want {
			t.Errorf("ParseRunKey(%s) error\n got %v\nwant %s", bad, err, want)
		}
	}
}
