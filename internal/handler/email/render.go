package email

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/etl-craft/etl-craft/internal/records"
)

// notRun is the status shown for a task without a task run under the run.
const notRun = "NOT-RUN"

// taskLine is one row of the email's table of tasks.
type taskLine struct {
	code, handler, status, attempts, rows, err string
}

// lines returns the table of the run's tasks in wave order, the alert
// itself left out. Only the errors of the tasks that count (counted) are
// given: an alert's own, and why a watcher had nothing to watch, are none
// of the run's.
func (s *summary) lines() []taskLine {
	counted := counted(s.graph, s.rows)
	var out []taskLine
	for _, wave := range s.graph.Waves() {
		for _, t := range wave {
			if t.ID == s.self {
				continue
			}
			l := taskLine{code: t.Code, handler: t.Handler, status: notRun}
			if r, ok := s.rows[t.ID]; ok {
				l.status, l.attempts = string(r.Status), strconv.Itoa(r.AttemptCount)
				if counted[t.ID] {
					l.err = r.ErrorMessage.String
				}
				if r.RowsWritten.Valid {
					l.rows = strconv.FormatInt(r.RowsWritten.Int64, 10)
				}
			}
			out = append(out, l)
		}
	}
	return out
}

// heading is the line that says which run the email is about.
func (s *summary) heading() string {
	h := fmt.Sprintf("Pipeline %s, run %d (%s", s.graph.Pipeline.Code, s.run.ID, s.run.Key)
	if s.run.RunDate != "" {
		h += ", run date " + s.run.RunDate
	}
	if s.run.Start.Valid {
		h += ", started " + stamp(s.run.Start)
	}
	return h + "): " + string(s.outcome)
}

// stamp writes a time as UTC to the second, "" when NULL.
func stamp(t records.Time) string {
	if !t.Valid {
		return ""
	}
	return t.Time.UTC().Format(time.DateTime) + " UTC"
}

// digestLine is one row of the digest of latest runs.
func digestLine(r records.Run) []string {
	return []string{r.PipelineCode, strconv.FormatInt(r.ID, 10), string(r.Status), stamp(r.Start), stamp(r.End), r.SLAStatus.String}
}

var (
	taskColumns   = []string{"TASK", "HANDLER", "STATUS", "ATTEMPTS", "ROWS WRITTEN", "ERROR"}
	digestColumns = []string{"PIPELINE", "RUN", "STATUS", "STARTED", "ENDED", "SLA"}
)

// render writes the email's plain-text body and its HTML alternative: the
// task's body, the heading, the table of tasks and, when asked for, the
// digest of latest runs.
func (s *summary) render(body string) (text, htm string) {
	lines := s.lines()
	var t strings.Builder
	if body = strings.TrimRight(body, "\n"); body != "" {
		t.WriteString(body + "\n\n")
	}
	t.WriteString(s.heading() + "\n\n")
	rows := [][]string{taskColumns[:5]}
	var errs []string
	for _, l := range lines {
		rows = append(rows, []string{l.code, l.handler, l.status, l.attempts, l.rows})
		if l.err != "" {
			errs = append(errs, "  "+l.code+": "+strings.ReplaceAll(l.err, "\n", "\n    "))
		}
	}
	t.WriteString(textTable(rows))
	if len(errs) > 0 {
		t.WriteString("\nErrors:\n" + strings.Join(errs, "\n") + "\n")
	}
	if s.digest != nil || s.missing != nil {
		rows = [][]string{digestColumns}
		for _, r := range s.digest {
			rows = append(rows, digestLine(r))
		}
		t.WriteString("\nLatest runs:\n" + textTable(rows))
		for _, m := range s.missing {
			t.WriteString(m + "\n")
		}
	}

	var h strings.Builder
	h.WriteString("<!DOCTYPE html>\n<html><body style=\"font-family: sans-serif\">\n")
	if body != "" {
		h.WriteString("<p>" + strings.ReplaceAll(html.EscapeString(body), "\n", "<br>\n") + "</p>\n")
	}
	h.WriteString("<p><b>" + html.EscapeString(s.heading()) + "</b></p>\n")
	rows = make([][]string, len(lines))
	for i, l := range lines {
		rows[i] = []string{l.code, l.handler, l.status, l.attempts, l.rows, l.err}
	}
	htmlTable(&h, taskColumns, rows)
	if s.digest != nil || s.missing != nil {
		h.WriteString("<p><b>Latest runs</b></p>\n")
		rows = make([][]string, len(s.digest))
		for i, r := range s.digest {
			rows[i] = digestLine(r)
		}
		htmlTable(&h, digestColumns, rows)
		for _, m := range s.missing {
			h.WriteString("<p>" + html.EscapeString(m) + "</p>\n")
		}
	}
	h.WriteString("</body></html>\n")
	return t.String(), h.String()
}

// textTable lines up the rows in columns two spaces apart, without
// trailing blanks.
func textTable(rows [][]string) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	lines := strings.SplitAfter(b.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \n")
		if l != "" {
			lines[i] += "\n"
		}
	}
	return strings.Join(lines, "")
}

// htmlTable writes a table with a header row, every cell escaped.
func htmlTable(b *strings.Builder, columns []string, rows [][]string) {
	b.WriteString("<table border=\"1\" cellpadding=\"4\" style=\"border-collapse: collapse\">\n<tr>")
	for _, c := range columns {
		b.WriteString("<th>" + html.EscapeString(c) + "</th>")
	}
	b.WriteString("</tr>\n")
	for _, r := range rows {
		b.WriteString("<tr>")
		for _, c := range r {
			b.WriteString("<td style=\"white-space: pre-wrap\">" + html.EscapeString(c) + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}
