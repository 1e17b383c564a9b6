package schedule

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func instant(t *testing.T, text string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, text)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// ticks returns the first n ticks of expr after from, as local RFC 3339
// times in the zone, so the offsets show daylight saving.
func ticks(t *testing.T, expr, zoneName, from string, n int) []string {
	t.Helper()
	s, err := Parse(expr)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	loc := zone(t, zoneName)
	at := instant(t, from)
	var out []string
	for range n {
		next := s.Next(at, loc)
		if next.Location() != time.UTC {
			t.Fatalf("Next(%q) = %v; want a UTC time", expr, next)
		}
		if !next.After(at) {
			t.Fatalf("Next(%q, %v) = %v; want a later instant", expr, at, next)
		}
		out = append(out, next.In(loc).Format(time.RFC3339))
		at = next
	}
	return out
}

func TestNext(t *testing.T) {
	cases := []struct {
		name, expr, zone, from string
		want                   []string
	}{
		// New York springs forward at 02:00 on 8 March 2026, to 03:00.
		{"gap: moves to the first minute after it", "30 2 * * *", "America/New_York", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:30:00-04:00"}},
		{"gap: hourly", "0 * * * *", "America/New_York", "2026-03-08T00:30:00-05:00",
			[]string{"2026-03-08T01:00:00-05:00", "2026-03-08T03:00:00-04:00", "2026-03-08T04:00:00-04:00"}},
		{"gap: several ticks in it fire once", "*/20 2 * * *", "America/New_York", "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"}},
		{"gap: a tick after it still fires", "30 2,3 * * *", "America/New_York", "2026-03-08T00:00:00-05:00",
			[]string{"2026-03-08T03:00:00-04:00", "2026-03-08T03:30:00-04:00", "2026-03-09T02:30:00-04:00"}},
		// New York falls back at 02:00 on 1 November 2026, to 01:00.
		{"repeat: first occurrence only", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00-04:00",
			[]string{"2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"}},
		{"repeat: hourly", "0 * * * *", "America/New_York", "2026-11-01T00:30:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T02:00:00-05:00", "2026-11-01T03:00:00-05:00"}},
		{"repeat: every half hour", "*/30 1 * * *", "America/New_York", "2026-11-01T00:00:00-04:00",
			[]string{"2026-11-01T01:00:00-04:00", "2026-11-01T01:30:00-04:00", "2026-11-02T01:00:00-05:00"}},
		{"repeat: from inside it, the second occurrence does not fire", "30 1 * * *", "America/New_York", "2026-11-01T01:45:00-04:00",
			[]string{"2026-11-02T01:30:00-05:00"}},
		{"repeat: from the second pass", "40 1 * * *", "America/New_York", "2026-11-01T01:10:00-05:00",
			[]string{"2026-11-02T01:40:00-05:00"}},
		// Berlin springs forward at 02:00 on 29 March 2026, to 03:00.
		{"Berlin gap", "30 2 * * *", "Europe/Berlin", "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:30:00+02:00"}},
		{"Berlin gap and the hour after", "0 2,3 * * *", "Europe/Berlin", "2026-03-28T12:00:00+01:00",
			[]string{"2026-03-29T03:00:00+02:00", "2026-03-30T02:00:00+02:00"}},
		// Berlin falls back at 03:00 on 25 October 2026 (a Sunday), to 02:00.
		{"Berlin repeat", "30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00+02:00",
			[]string{"2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00"}},
		{"Berlin repeat, every quarter hour on Sundays", "*/15 2 * * SUN", "Europe/Berlin", "2026-10-25T00:00:00+02:00",
			[]string{"2026-10-25T02:00:00+02:00", "2026-10-25T02:15:00+02:00", "2026-10-25T02:30:00+02:00",
				"2026-10-25T02:45:00+02:00", "2026-11-01T02:00:00+01:00"}},
		{"Berlin gap, in the zone's rules beyond its table", "30 2 * * *", "Europe/Berlin", "2041-03-30T12:00:00+01:00",
			[]string{"2041-03-31T03:00:00+02:00", "2041-04-01T02:30:00+02:00"}},
		{"Berlin repeat, in the zone's rules beyond its table", "30 2 * * *", "Europe/Berlin", "2041-10-26T12:00:00+02:00",
			[]string{"2041-10-27T02:30:00+02:00", "2041-10-28T02:30:00+01:00"}},
		// Lord Howe Island moves its clocks by half an hour.
		{"half-hour gap", "15 2 * * *", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30",
			[]string{"2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"}},
		{"half-hour repeat", "45 1 * * *", "Australia/Lord_Howe", "2026-04-04T12:00:00+11:00",
			[]string{"2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"}},
		// Samoa skipped 30 December 2011 whole.
		{"a skipped day", "0 12 * * *", "Pacific/Apia", "2011-12-29T00:00:00-10:00",
			[]string{"2011-12-29T12:00:00-10:00", "2011-12-31T00:00:00+14:00", "2011-12-31T12:00:00+14:00"}},
		// Havana springs forward at midnight on 8 March 2026, to 01:00.
		{"gap over midnight", "0 0 * * *", "America/Havana", "2026-03-07T12:00:00-05:00",
			[]string{"2026-03-08T01:00:00-04:00", "2026-03-09T00:00:00-04:00"}},
		{"leap days", "0 0 29 2 *", "UTC", "2025-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"leap days across 2100, eight years apart", "0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z",
			[]string{"2104-02-29T00:00:00Z"}},
		{"leap day in a zone", "0 0 29 2 *", "Europe/Berlin", "2028-02-28T23:00:00Z",
			[]string{"2032-02-29T00:00:00+01:00"}},
		{"either rule: the 1st or a Monday", "0 12 1 * MON", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T12:00:00Z", "2026-01-05T12:00:00Z", "2026-01-12T12:00:00Z", "2026-01-19T12:00:00Z",
				"2026-01-26T12:00:00Z", "2026-02-01T12:00:00Z", "2026-02-02T12:00:00Z", "2026-02-09T12:00:00Z"}},
		{"either rule: a full range still restricts", "0 0 1-31 * MON", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z"}},
		{"a day field with * is unrestricted: both must match", "0 12 */10 * MON", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2026-05-11T12:00:00Z", "2026-06-01T12:00:00Z", "2026-08-31T12:00:00Z"}},
		{"31 February or Mondays", "0 0 31 2 MON", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2026-02-02T00:00:00Z", "2026-02-09T00:00:00Z"}},
		{"@hourly", "@hourly", "UTC", "2026-01-01T00:30:00Z", []string{"2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z"}},
		{"@daily", "@daily", "Europe/Berlin", "2026-01-01T00:30:00+01:00", []string{"2026-01-02T00:00:00+01:00"}},
		{"@weekly is Sunday midnight", "@weekly", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
		{"@monthly", "@monthly", "UTC", "2026-01-15T00:00:00Z", []string{"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z"}},
		{"@yearly", "@yearly", "UTC", "2026-01-15T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"@annually, any case", " @Annually ", "UTC", "2026-01-15T00:00:00Z", []string{"2027-01-01T00:00:00Z"}},
		{"names in any case", "0 9 * jan,JUL Mon-fri", "UTC", "2026-01-30T12:00:00Z",
			[]string{"2026-07-01T09:00:00Z", "2026-07-02T09:00:00Z", "2026-07-03T09:00:00Z", "2026-07-06T09:00:00Z"}},
		{"Sunday as 7", "0 0 * * 7", "UTC", "2026-01-01T00:00:00Z", []string{"2026-01-04T00:00:00Z", "2026-01-11T00:00:00Z"}},
		{"a range to 7", "0 0 * * 5-7", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z", "2026-01-04T00:00:00Z", "2026-01-09T00:00:00Z"}},
		{"a stepped range to 7", "0 0 * * 1-7/2", "UTC", "2026-01-04T12:00:00Z",
			[]string{"2026-01-05T00:00:00Z", "2026-01-07T00:00:00Z", "2026-01-09T00:00:00Z", "2026-01-11T00:00:00Z"}},
		{"a step that misses 7", "0 0 * * 2-7/2", "UTC", "2026-01-04T12:00:00Z",
			[]string{"2026-01-06T00:00:00Z", "2026-01-08T00:00:00Z", "2026-01-10T00:00:00Z", "2026-01-13T00:00:00Z"}},
		{"steps, ranges and lists", "*/20 9-10 1,15 * *", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T09:00:00Z", "2026-01-01T09:20:00Z", "2026-01-01T09:40:00Z", "2026-01-01T10:00:00Z",
				"2026-01-01T10:20:00Z", "2026-01-01T10:40:00Z", "2026-01-15T09:00:00Z"}},
		{"a start with a step", "5/20 8 * * *", "UTC", "2026-01-01T00:00:00Z",
			[]string{"2026-01-01T08:05:00Z", "2026-01-01T08:25:00Z", "2026-01-01T08:45:00Z", "2026-01-02T08:05:00Z"}},
		{"a stepped range", "0-30/15 8 * * *", "UTC", "2026-01-01T08:00:00Z",
			[]string{"2026-01-01T08:15:00Z", "2026-01-01T08:30:00Z", "2026-01-02T08:00:00Z"}},
		{"strictly after", "0 6 * * *", "UTC", "2026-01-04T06:00:00Z", []string{"2026-01-05T06:00:00Z"}},
		{"a sub-minute instant", "* * * * *", "UTC", "2026-01-04T06:00:00.5Z", []string{"2026-01-04T06:01:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ticks(t, c.expr, c.zone, c.from, len(c.want)); !slices.Equal(got, c.want) {
				t.Errorf("ticks of %q in %s after %s:\n got %v\nwant %v", c.expr, c.zone, c.from, got, c.want)
			}
		})
	}
}

// TestSameTicks checks spellings that must tick alike, over a year.
func TestSameTicks(t *testing.T) {
	groups := [][]string{
		{"0 0 * * 0", "0 0 * * 7", "0 0 * * SUN", "0 0 * * sun", "0 0 * * 7-7", "0 0 * * 7/3", "@weekly"},
		{"0 0 * * *", "0 0 * * 0-7", "0 0 * * 0-6", "0 0 * * SUN-SAT", "@daily", "0 0 1-31 * *"},
		{"0 0 * * 1,3,5,0", "0 0 * * 1-7/2", "0 0 * * MON,WED,FRI,SUN"},
		{"0 * * * *", "@hourly", "0 0-23 * * *", "0 */1 * * *"},
		{"0 0 1 * *", "@monthly", "0 0 1 JAN-DEC *", "0 0 1 */1 *"},
		{"0 0 1 1 *", "@yearly", "@annually", "0 0 1 jan *"},
		{"*/15 * * * *", "0,15,30,45 * * * *", "0-59/15 * * * *"},
	}
	for _, group := range groups {
		want := ticks(t, group[0], "Europe/Berlin", "2026-01-01T00:00:00Z", 400)
		for _, expr := range group[1:] {
			if got := ticks(t, expr, "Europe/Berlin", "2026-01-01T00:00:00Z", 400); !slices.Equal(got, want) {
				t.Errorf("%q ticks unlike %q:\n got %v\nwant %v", expr, group[0], got[:5], want[:5])
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"", "'' is empty: give five cron fields or one of @hourly, @daily, @weekly, @monthly, @yearly, @annually"},
		{"* * * *", "'* * * *' has 4 fields, not 5"},
		{"0 * * * * *", "'0 * * * * *' has 6 fields, not 5"},
		{"CRON_TZ=UTC 0 * * * *", "'CRON_TZ=UTC 0 * * * *' has 6 fields, not 5"},
		{"TZ=UTC * * * *", "'TZ=UTC * * * *': 'TZ=UTC' is not a valid minute (0-59): '=' is not allowed: use numbers, names, *, ranges a-b and steps /n"},
		{"@reboot", "'@reboot' is not a known macro (@hourly, @daily, @weekly, @monthly, @yearly, @annually)"},
		{"@every 1h", "'@every 1h' is not a known macro (@hourly, @daily, @weekly, @monthly, @yearly, @annually)"},
		{"@midnight", "'@midnight' is not a known macro (@hourly, @daily, @weekly, @monthly, @yearly, @annually)"},
		{"61 * * * *", "'61 * * * *': '61' is not a valid minute (0-59): end of range (61) above maximum (59)"},
		{"0 24 * * *", "'0 24 * * *': '24' is not a valid hour (0-23): end of range (24) above maximum (23)"},
		{"0 0 0 * *", "'0 0 0 * *': '0' is not a valid day of month (1-31): beginning of range (0) below minimum (1)"},
		{"0 0 * 13 *", "'0 0 * 13 *': '13' is not a valid month (1-12 or JAN-DEC): end of range (13) above maximum (12)"},
		{"0 0 * FOO *", "'0 0 * FOO *': 'FOO' is not a valid month (1-12 or JAN-DEC): expected a number or a name"},
		{"0 0 * * 8", "'0 0 * * 8': '8' is not a valid day of week (0-7 or SUN-SAT): 8 is above the maximum (7)"},
		{"0 0 * * 5-8", "'0 0 * * 5-8': '5-8' is not a valid day of week (0-7 or SUN-SAT): 8 is above the maximum (7)"},
		{"0 0 * * FRI-MON", "'0 0 * * FRI-MON': 'FRI-MON' is not a valid day of week (0-7 or SUN-SAT): beginning of range (5) beyond end of range (1)"},
		{"0 0 * * 7-3", "'0 0 * * 7-3': '7-3' is not a valid day of week (0-7 or SUN-SAT): a range from 7 (Sunday) can only end at 7"},
		{"0 0 * * 7/0", "'0 0 * * 7/0': '7/0' is not a valid day of week (0-7 or SUN-SAT): step '0' is not a positive number"},
		{"0 0 * * 1-7/x", "'0 0 * * 1-7/x': '1-7/x' is not a valid day of week (0-7 or SUN-SAT): step 'x' is not a positive number"},
		{"*/0 * * * *", "'*/0 * * * *': '*/0' is not a valid minute (0-59): step of range should be a positive number"},
		{"5/x * * * *", "'5/x * * * *': '5/x' is not a valid minute (0-59): expected a number"},
		{"1-2-3 * * * *", "'1-2-3 * * * *': '1-2-3' is not a valid minute (0-59): too many hyphens"},
		{"1/2/3 * * * *", "'1/2/3 * * * *': '1/2/3' is not a valid minute (0-59): too many slashes"},
		{"-1 * * * *", "'-1 * * * *': '-1' is not a valid minute (0-59): expected a number"},
		{"+5 * * * *", "'+5 * * * *': '+5' is not a valid minute (0-59): '+' is not allowed: use numbers, names, *, ranges a-b and steps /n"},
		{"? * * * *", "'? * * * *': '?' is not a valid minute (0-59): '?' is not allowed: use numbers, names, *, ranges a-b and steps /n"},
		{"1,,2 * * * *", "'1,,2 * * * *': '' is not a valid minute (0-59): an empty list item"},
		{"0 0 L * *", "'0 0 L * *': 'L' is not a valid day of month (1-31): expected a number"},
		{"0 0 30 2 *", "'0 0 30 2 *' matches no calendar date (such as 30 February)"},
		{"0 0 31 4,6,9,11 *", "'0 0 31 4,6,9,11 *' matches no calendar date (such as 30 February)"},
	}
	for _, c := range cases {
		_, err := Parse(c.expr)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Parse(%q) = %v; want an *Error", c.expr, err)
			continue
		}
		if err.Error() != c.want {
			t.Errorf("Parse(%q):\n got %s\nwant %s", c.expr, err, c.want)
		}
	}
}

func TestParseFields(t *testing.T) {
	_, err := Parse("0 0 * * FRI-MON")
	var e *Error
	if !errors.As(err, &e) || e.Field != "day of week" || e.Item != "FRI-MON" || e.Expr != "0 0 * * FRI-MON" {
		t.Fatalf("Parse error = %#v; want field day of week, item FRI-MON", err)
	}
	s, err := Parse("  */15 0-6,18-23 1,15 JAN-MAR,dec 0,7 ")
	if err != nil || s.String() != "*/15 0-6,18-23 1,15 JAN-MAR,dec 0,7" {
		t.Fatalf("Parse = %q, %v; want the trimmed expression", s, err)
	}
	if next := (Schedule{}).Next(time.Now(), nil); !next.IsZero() {
		t.Errorf("zero Schedule Next = %v; want the zero time", next)
	}
}

func TestNextDefaultsToUTC(t *testing.T) {
	s, err := Parse("0 6 * * *")
	if err != nil {
		t.Fatal(err)
	}
	from := instant(t, "2026-01-04T07:00:00+02:00")
	if got, want := s.Next(from, nil), instant(t, "2026-01-04T06:00:00Z"); !got.Equal(want) {
		t.Errorf("Next with a nil zone = %v; want %v", got, want)
	}
}

// TestRobfigAlone records where robfig's own parser and Next differ from
// cron's rules, which this package adapts; should an upgrade change one of
// them, the adaptation needs another look.
func TestRobfigAlone(t *testing.T) {
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	next := func(expr string, from time.Time) time.Time {
		t.Helper()
		s, err := parser.Parse(expr)
		if err != nil {
			t.Fatalf("robfig Parse(%q): %v", expr, err)
		}
		return s.Next(from)
	}
	ny := zone(t, "America/New_York")
	if got := next("30 2 * * *", time.Date(2026, 3, 7, 12, 0, 0, 0, ny)); got.Day() != 9 {
		t.Errorf("robfig in the gap: %v; it used to skip the day", got)
	}
	first := next("30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny))
	if second := next("30 1 * * *", first); second.Day() != 1 {
		t.Errorf("robfig in the repeated hour: %v then %v; it used to fire twice", first, second)
	}
	if got := next("0 0 29 2 *", time.Date(2096, 3, 1, 0, 0, 0, 0, time.UTC)); !got.IsZero() {
		t.Errorf("robfig past 2100: %v; it used to give up after five years", got)
	}
	if got := next("0 12 */10 * MON", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)); got.Day() != 1 {
		t.Errorf("robfig with */10 and MON: %v; it used to read */10 as a restriction", got)
	}
	for _, expr := range []string{"0 0 * * 7", "@DAILY"} {
		if _, err := parser.Parse(expr); err == nil {
			t.Errorf("robfig Parse(%q) succeeds; it used to refuse it", expr)
		}
	}
	for _, expr := range []string{"? * * * *", "+5 * * * *", "1,,2 * * * *", "@every 1h", "@midnight"} {
		if _, err := parser.Parse(expr); err != nil {
			t.Errorf("robfig Parse(%q): %v; it used to accept it", expr, err)
		}
	}
}
