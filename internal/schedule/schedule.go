// Package schedule computes a pipeline's schedule ticks, with no I/O: it
// parses RUN_SCHEDULE (five-field cron or a macro), finds the next tick in a
// time zone through daylight-saving changes, and plans which due ticks the
// server queues and which it records SKIPPED (catch-up and overlap).
//
// Cron fields are minute (0-59), hour (0-23), day of month (1-31), month
// (1-12 or JAN-DEC) and day of week (0-7 or SUN-SAT, Sunday being 0 or 7),
// each a list of values, ranges and steps (*/15, 1-5, 9-17/2, 5/10). When
// both day fields are restricted (neither contains *), a day matches when
// either matches, as in cron. The macros are @hourly, @daily, @weekly,
// @monthly, @yearly and @annually. Names and macros are case-insensitive.
//
// Ticks are wall-clock times in the schedule's zone: a tick that falls in a
// daylight-saving gap moves to the first minute after the gap, and a tick in
// a repeated hour fires once, at its first occurrence.
//
// The cron matching is github.com/robfig/cron/v3's, run on wall-clock times
// read as UTC, where no clock changes. This package adds what cron's rules
// need beyond it: day of week 7, the macro list, stricter syntax, errors
// that name the field, the star rule of the day fields, turning wall times
// into instants (the gap and repeat rules), and ticks further apart than
// its five-year search (29 February across 2100).
package schedule

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	// The IANA zone database, so zones load on hosts without one.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Schedule is a parsed RUN_SCHEDULE. The zero Schedule never ticks.
type Schedule struct {
	expr string
	spec *cron.SpecSchedule
}

// Error says why an expression is not a schedule.
type Error struct {
	// Expr is the expression as given.
	Expr string
	// Field is the cron field at fault ("minute", "hour", "day of month",
	// "month", "day of week"), "" when the expression as a whole is.
	Field string
	// Item is the list item of Field at fault.
	Item string
	// Problem is what is wrong.
	Problem string
}

// Error returns, for example, "'61 * * * *': '61' is not a valid minute
// (0-59): end of range (61) above maximum (59)", or "'* * * *' has 4
// fields, not 5".
func (e *Error) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("'%s' %s", e.Expr, e.Problem)
	}
	return fmt.Sprintf("'%s': '%s' is not a valid %s (%s): %s", e.Expr, e.Item, e.Field, fieldRange(e.Field), e.Problem)
}

// macros are the accepted macros; robfig's parser reads them (it knows more,
// such as @every, which are not cron's).
var macros = map[string]bool{"@hourly": true, "@daily": true, "@weekly": true, "@monthly": true, "@yearly": true, "@annually": true}

// MacroList names the macros, for messages.
const MacroList = "@hourly, @daily, @weekly, @monthly, @yearly, @annually"

// fields are the five cron fields in order, with robfig's option for each
// and the bit set of the parsed SpecSchedule it fills.
var fields = []struct {
	name   string
	option cron.ParseOption
	valid  string
	bits   func(*cron.SpecSchedule) *uint64
}{
	{"minute", cron.Minute, "0-59", func(s *cron.SpecSchedule) *uint64 { return &s.Minute }},
	{"hour", cron.Hour, "0-23", func(s *cron.SpecSchedule) *uint64 { return &s.Hour }},
	{"day of month", cron.Dom, "1-31", func(s *cron.SpecSchedule) *uint64 { return &s.Dom }},
	{"month", cron.Month, "1-12 or JAN-DEC", func(s *cron.SpecSchedule) *uint64 { return &s.Month }},
	{"day of week", cron.Dow, "0-7 or SUN-SAT", func(s *cron.SpecSchedule) *uint64 { return &s.Dow }},
}

const (
	dayOfMonth = 2
	dayOfWeek  = 4
)

// starBit is the bit robfig sets in a day field that it reads as
// unrestricted, which decides its either rule (SpecSchedule's dayMatches).
const starBit = 1 << 63

func fieldRange(name string) string {
	for _, f := range fields {
		if f.name == name {
			return f.valid
		}
	}
	return ""
}

// Parse reads a five-field cron expression or a macro. The error is an
// *Error naming the field and what is wrong.
func Parse(expr string) (Schedule, error) {
	text := strings.TrimSpace(expr)
	if text == "" {
		return Schedule{}, &Error{Expr: expr, Problem: "is empty: give five cron fields or one of " + MacroList}
	}
	if strings.HasPrefix(text, "@") {
		macro := strings.ToLower(text)
		if !macros[macro] {
			return Schedule{}, &Error{Expr: expr, Problem: "is not a known macro (" + MacroList + ")"}
		}
		s, err := cron.ParseStandard(macro)
		if err != nil {
			return Schedule{}, &Error{Expr: expr, Problem: err.Error()}
		}
		return Schedule{expr: text, spec: s.(*cron.SpecSchedule)}, nil
	}
	parts := strings.Fields(text)
	if len(parts) != len(fields) {
		return Schedule{}, &Error{Expr: expr, Problem: fmt.Sprintf("has %d fields, not 5", len(parts))}
	}
	// Seconds are always 0; Location Local makes Next use the zone of the
	// time it is given.
	spec := &cron.SpecSchedule{Second: 1, Location: time.Local}
	for i, part := range parts {
		f := fields[i]
		var set uint64
		for _, item := range strings.Split(part, ",") {
			b, err := itemBits(i, item)
			if err != nil {
				return Schedule{}, &Error{Expr: expr, Field: f.name, Item: item, Problem: err.Error()}
			}
			set |= b
		}
		if i == dayOfMonth || i == dayOfWeek {
			// Cron's either rule: a day field is unrestricted when it contains *,
			// so */2 restricts nothing for it, where robfig would say it does.
			set &^= starBit
			if strings.Contains(part, "*") {
				set |= starBit
			}
		}
		*f.bits(spec) = set
	}
	s := Schedule{expr: text, spec: spec}
	// Every month/day combination that exists at all exists in 2000–2004
	// (2000 being a leap year).
	if s.spec.Next(time.Date(1999, 12, 31, 23, 59, 0, 0, time.UTC)).IsZero() {
		return Schedule{}, &Error{Expr: expr, Problem: "matches no calendar date (such as 30 February)"}
	}
	return s, nil
}

// itemBits parses one list item of field i into robfig's bit set.
func itemBits(i int, item string) (uint64, error) {
	if item == "" {
		return 0, errors.New("an empty list item")
	}
	for _, r := range item {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '*' || r == '-' || r == '/') {
			return 0, fmt.Errorf("'%c' is not allowed: use numbers, names, *, ranges a-b and steps /n", r)
		}
	}
	if i == dayOfWeek {
		return dayOfWeekBits(item)
	}
	return fieldBits(i, item)
}

// fieldBits parses item as field i with robfig's parser.
func fieldBits(i int, item string) (uint64, error) {
	f := fields[i]
	s, err := cron.NewParser(f.option).Parse(item)
	if err != nil {
		msg := strings.TrimSuffix(err.Error(), ": "+item)
		if strings.HasPrefix(msg, "failed to parse int") {
			msg = "expected a number"
			if strings.Contains(f.valid, " or ") {
				msg += " or a name"
			}
		}
		return 0, errors.New(msg)
	}
	return *f.bits(s.(*cron.SpecSchedule)), nil
}

// dayOfWeekBits parses a day-of-week item, reading 7 as Sunday as cron
// does; robfig knows only 0-6.
func dayOfWeekBits(item string) (uint64, error) {
	base, stepText, stepped := strings.Cut(item, "/")
	from, to, ranged := strings.Cut(base, "-")
	for _, v := range []string{from, to} {
		// robfig would name its own maximum, 6.
		if n, err := strconv.Atoi(v); err == nil && n > 7 {
			return 0, fmt.Errorf("%d is above the maximum (7)", n)
		}
	}
	if !isSeven(from) && !(ranged && isSeven(to)) {
		return fieldBits(dayOfWeek, item)
	}
	step := 1
	if stepped {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("step '%s' is not a positive number", stepText)
		}
		step = n
	}
	const sunday = 1 << 0
	if isSeven(from) {
		if ranged && !isSeven(to) {
			return 0, fmt.Errorf("a range from 7 (Sunday) can only end at 7")
		}
		return sunday, nil
	}
	// from-7/step: from-6/step, and Sunday when a step lands on 7.
	rest := ""
	if stepped {
		rest = "/" + stepText
	}
	set, err := fieldBits(dayOfWeek, from+"-6"+rest)
	if err != nil {
		return 0, err
	}
	if (7-bits.TrailingZeros64(set))%step == 0 {
		set |= sunday
	}
	return set, nil
}

func isSeven(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n == 7
}

// String returns the expression as parsed (trimmed).
func (s Schedule) String() string { return s.expr }

// maxSearches bounds the five-year searches of robfig's Next that wallNext
// chains, to 10,000 years: a parsed schedule ticks at least every eight
// years (29 February across 2100), so two searches find any tick.
const maxSearches = 2000

// maxRepeats bounds the wall-clock ticks Next passes over that resolve to
// instants not after the one given (those of a repeated hour's second pass).
const maxRepeats = 100000

// Next returns the first tick strictly after the instant, in UTC, with the
// schedule evaluated in loc (nil means UTC). It returns the zero time when
// there is none (the zero Schedule, or none within 10,000 years).
//
// robfig's matching runs on wall-clock times (read as UTC, where no clock
// changes); each wall-clock tick then becomes an instant in loc: a wall time
// in a gap becomes the gap's end, a repeated one its first occurrence.
func (s Schedule) Next(after time.Time, loc *time.Location) time.Time {
	if s.spec == nil {
		return time.Time{}
	}
	if loc == nil {
		loc = time.UTC
	}
	wall := wallClock(after.In(loc))
	for range maxRepeats {
		if wall = s.wallNext(wall); wall.IsZero() {
			return time.Time{}
		}
		// Not after: a repeated hour's wall time whose first occurrence has passed.
		if at := instantOf(wall, loc); at.After(after) {
			return at.UTC()
		}
	}
	return time.Time{}
}

// wallNext returns the first wall-clock tick after wall, both read as UTC.
func (s Schedule) wallNext(wall time.Time) time.Time {
	for range maxSearches {
		if next := s.spec.Next(wall); !next.IsZero() {
			return next
		}
		// None through the end of wall's year + 5: none to pass over.
		wall = wall.AddDate(5, 0, 0)
	}
	return time.Time{}
}

// wallClock returns t's wall-clock time in its zone, read as UTC.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// instantOf returns the first instant whose wall clock in loc reads wall
// (read as UTC), or, when a daylight-saving gap skips that wall time, the
// gap's end: the first valid time after it. time.Date alone picks either
// occurrence of a repeated time and moves a skipped one either way.
func instantOf(wall time.Time, loc *time.Location) time.Time {
	guess := time.Date(wall.Year(), wall.Month(), wall.Day(), wall.Hour(), wall.Minute(), wall.Second(), wall.Nanosecond(), loc)
	// The offsets in force around wall: clock changes are more than a day apart.
	var first, lo, hi time.Time
	for _, d := range []time.Duration{-24 * time.Hour, 0, 24 * time.Hour} {
		_, offset := guess.Add(d).Zone()
		at := wall.Add(-time.Duration(offset) * time.Second)
		if wallClock(at.In(loc)).Equal(wall) && (first.IsZero() || at.Before(first)) {
			first = at
		}
		if lo.IsZero() || at.Before(lo) {
			lo = at
		}
		if hi.IsZero() || at.After(hi) {
			hi = at
		}
	}
	if !first.IsZero() {
		return first
	}
	// In a gap: the clock jumps over wall between lo (read in the larger
	// offset, before the jump) and hi (in the smaller one, after it). Find
	// the jump to the second.
	lo, hi = lo.Truncate(time.Second), hi.Truncate(time.Second)
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if wallClock(mid.In(loc)).After(wall) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
