package alert

import (
	"fmt"
	"html"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/etl-craft/etl-craft/internal/records"
)

// The columns of the table of tasks and of the digest.
var (
	TaskColumns   = []string{"TASK", "HANDLER", "STATUS", "ATTEMPTS", "ROWS WRITTEN", "ERROR"}
	DigestColumns = []string{"PIPELINE", "RUN", "STATUS", "STARTED", "ENDED", "SLA"}
)

// Cells are the task's cells under TaskColumns.
func (t TaskLine) Cells() []string {
	attempts, rows := "", ""
	if t.Status != NotRun {
		attempts = strconv.Itoa(t.Attempts)
	}
	if t.Rows != nil {
		rows = strconv.FormatInt(*t.Rows, 10)
	}
	return []string{t.Code, t.Handler, t.Status, attempts, rows, t.Error}
}

// DigestCells are a latest run's cells under DigestColumns.
func DigestCells(r records.Run) []string {
	return []string{r.PipelineCode, strconv.FormatInt(r.ID, 10), string(r.Status), stamp(r.Start), stamp(r.End), r.SLAStatus.String}
}

// ConsoleLabel introduces the link to the console's page of the run.
const ConsoleLabel = "Console"

// Text is the alert as plain text, the email's body: the author's body, the
// heading, the pipeline's description, then a run alert's table of tasks,
// their errors and the digest of latest runs, or an SLA breach's facts; and
// the console's page of the run.
func (m *Message) Text() string {
	var t strings.Builder
	if m.Body != "" {
		t.WriteString(m.Body + "\n\n")
	}
	t.WriteString(m.Heading() + "\n")
	if m.Pipeline.Description != "" {
		t.WriteString(m.Pipeline.Description + "\n")
	}
	t.WriteString("\n")
	if m.Event == SLABreach {
		for _, f := range m.Facts() {
			fmt.Fprintf(&t, "%-11s%s\n", f.Label+":", f.Value)
		}
	} else {
		rows := [][]string{TaskColumns[:5]}
		for _, l := range m.Tasks {
			rows = append(rows, l.Cells()[:5])
		}
		t.WriteString(textTable(rows))
		if errs := m.Errors(); len(errs) > 0 {
			t.WriteString("\nErrors:\n")
			for _, l := range errs {
				t.WriteString("  " + l.Code + ": " + strings.ReplaceAll(l.Error, "\n", "\n    ") + "\n")
			}
		}
		if d := m.Digest; d != nil {
			rows = [][]string{DigestColumns}
			for _, r := range d.Runs {
				rows = append(rows, DigestCells(r))
			}
			t.WriteString("\nLatest runs:\n" + textTable(rows))
			for _, miss := range d.Missing {
				t.WriteString(miss + "\n")
			}
		}
	}
	if m.Link != "" {
		t.WriteString("\n" + ConsoleLabel + ": " + m.Link + "\n")
	}
	return t.String()
}

// HTML is the alert as an HTML page, the email's alternative to Text: the
// same parts, the tables as HTML tables with each task's full error, every
// text escaped.
func (m *Message) HTML() string {
	var h strings.Builder
	h.WriteString("<!DOCTYPE html>\n<html><body style=\"font-family: sans-serif\">\n")
	if m.Body != "" {
		h.WriteString("<p>" + strings.ReplaceAll(html.EscapeString(m.Body), "\n", "<br>\n") + "</p>\n")
	}
	h.WriteString("<p><b>" + html.EscapeString(m.Heading()) + "</b></p>\n")
	if m.Pipeline.Description != "" {
		h.WriteString("<p>" + html.EscapeString(m.Pipeline.Description) + "</p>\n")
	}
	if m.Event == SLABreach {
		var rows [][]string
		for _, f := range m.Facts() {
			rows = append(rows, []string{f.Label, f.Value})
		}
		htmlTable(&h, nil, rows)
	} else {
		rows := make([][]string, len(m.Tasks))
		for i, l := range m.Tasks {
			rows[i] = l.Cells()
		}
		htmlTable(&h, TaskColumns, rows)
		if d := m.Digest; d != nil {
			h.WriteString("<p><b>Latest runs</b></p>\n")
			rows = make([][]string, len(d.Runs))
			for i, r := range d.Runs {
				rows[i] = DigestCells(r)
			}
			htmlTable(&h, DigestColumns, rows)
			for _, miss := range d.Missing {
				h.WriteString("<p>" + html.EscapeString(miss) + "</p>\n")
			}
		}
	}
	if m.Link != "" {
		h.WriteString("<p>" + ConsoleLabel + ": <a href=\"" + html.EscapeString(m.Link) + "\">" + html.EscapeString(m.Link) + "</a></p>\n")
	}
	h.WriteString("</body></html>\n")
	return h.String()
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

// htmlTable writes a table with a header row (none when columns is nil),
// every cell escaped.
func htmlTable(b *strings.Builder, columns []string, rows [][]string) {
	b.WriteString("<table border=\"1\" cellpadding=\"4\" style=\"border-collapse: collapse\">\n")
	if columns != nil {
		b.WriteString("<tr>")
		for _, c := range columns {
			b.WriteString("<th>" + html.EscapeString(c) + "</th>")
		}
		b.WriteString("</tr>\n")
	}
	for _, r := range rows {
		b.WriteString("<tr>")
		for _, c := range r {
			b.WriteString("<td style=\"white-space: pre-wrap\">" + html.EscapeString(c) + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}
