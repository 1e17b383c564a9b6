package console

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/freetext"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// statusView is how a page shows a status: its word, an icon beside it
// (status is never told by colour alone) and the CSS class that colours
// it.
type statusView struct {
	Word, Icon, Class string
}

// notRun is the status of a task without a row under a run.
var notRun = statusView{Word: "NOT RUN", Icon: "·", Class: "st-none"}

// statusOf returns the view of a run's, task run's or attempt's status;
// an empty status is notRun.
func statusOf(status string) statusView {
	v := statusView{Word: status}
	switch status {
	case "":
		return notRun
	case string(records.RunSuccess):
		v.Icon, v.Class = "✓", "st-ok"
	case string(records.RunFailed), string(records.AttemptTimedOut), string(records.AttemptLost):
		v.Icon, v.Class = "✗", "st-bad"
	case string(records.RunInProgress), string(records.AttemptRunning), string(records.AttemptClaimed):
		v.Icon, v.Class = "▶", "st-run"
	case string(records.RunQueued):
		v.Icon, v.Class = "◷", "st-wait"
	case string(records.RunSkipped):
		v.Icon, v.Class = "↷", "st-skip"
	case string(records.RunCancelled):
		v.Icon, v.Class = "⊘", "st-stop"
	default:
		// A state that is no stored status, such as explain's WAITING.
		v.Icon, v.Class = "•", "st-none"
	}
	return v
}

// sla returns the view of a run's SLA status, MET or BREACHED.
func sla(status string) statusView {
	switch status {
	case string(records.SLAMet):
		return statusView{Word: status, Icon: "✓", Class: "st-ok"}
	case string(records.SLABreached):
		return statusView{Word: status, Icon: "✗", Class: "st-bad"}
	}
	return statusView{Word: status, Icon: "?", Class: "st-none"}
}

// statusPtr is statusOf a nullable status.
func statusPtr(s *string) statusView {
	if s == nil {
		return notRun
	}
	return statusOf(*s)
}

// timeHTML writes a moment as a <time> element: UTC in its text and its
// title, which the page's script turns into the viewer's time zone, keeping
// UTC on hover.
func timeHTML(t time.Time) template.HTML {
	if t.IsZero() {
		return "—"
	}
	u := t.UTC()
	text := u.Format("2006-01-02 15:04:05") + " UTC"
	return template.HTML(fmt.Sprintf(`<time datetime="%s" title="%s">%s</time>`, u.Format(time.RFC3339), text, text))
}

// instantHTML is timeHTML of a nullable instant.
func instantHTML(i *report.Instant) template.HTML {
	if i == nil {
		return "—"
	}
	return timeHTML(i.Time)
}

// duration writes seconds as the largest two units: 0.4s, 45s, 3m 07s,
// 2h 05m, 3d 04h; "—" for nil.
func duration(seconds *float64) string {
	if seconds == nil {
		return "—"
	}
	return span(time.Duration(*seconds * float64(time.Second)))
}

// span writes a duration as duration does, under ten seconds to the tenth.
func span(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.1fs", max(d.Seconds(), 0))
	}
	s := int64(math.Round(d.Seconds()))
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm %02ds", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%dh %02dm", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%dd %02dh", s/86400, s%86400/3600)
}

// between is the duration from start to end, or to now without an end;
// nil without a start.
func between(start, end records.Time, now time.Time) *float64 {
	if !start.Valid {
		return nil
	}
	until := now
	if end.Valid {
		until = end.Time
	}
	s := until.Sub(start.Time).Seconds()
	return &s
}

// firstLine is the first line of text, with a mark when more follows.
func firstLine(s string) string {
	line, rest, _ := strings.Cut(s, "\n")
	if strings.TrimSpace(rest) != "" {
		return line + " …"
	}
	return line
}

// visible writes stored text as text output does (freetext.Visible): its
// control and reordering characters as escapes. html/template escapes the
// markup.
func visible(s string) string { return freetext.Visible(s) }

// lines writes stored text of many lines (an error message, a log) as the
// text outputs do: line breaks and tabs kept, every other control or
// reordering character as an escape (freetext.Writer).
func lines(s string) string {
	var b strings.Builder
	w := freetext.NewWriter(&b)
	w.Write([]byte(s))
	w.Flush()
	return b.String()
}

// deref returns *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// count writes a nullable count, "—" for nil.
func count(n *int64) string {
	if n == nil {
		return "—"
	}
	return fmt.Sprint(*n)
}
