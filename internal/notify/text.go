package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/etl-craft/etl-craft/internal/alert"
)

// ellipsis ends a text that was cut.
const ellipsis = "…"

// units counts a text's length as the chat services do, in UTF-16 code
// units (a character outside the Basic Multilingual Plane, such as most
// emoji, counts two), which is never less than its characters.
func units(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// cut returns s escaped by escape, character by character, and cut, with
// an ellipsis, to at most max units: an escape is never split. An empty
// text gives fill, since the services refuse empty texts.
func cut(s string, max int, escape func(rune) string, fill string) string {
	if s == "" {
		s = fill
	}
	var b strings.Builder
	for _, r := range s {
		b.WriteString(escape(r))
	}
	if units(b.String()) <= max {
		return b.String()
	}
	b.Reset()
	n, room := 0, max-units(ellipsis)
	for _, r := range s {
		piece := escape(r)
		if n+units(piece) > room {
			break
		}
		b.WriteString(piece)
		n += units(piece)
	}
	return b.String() + ellipsis
}

// asIs writes a character as it is.
func asIs(r rune) string { return string(r) }

// taskSummary says how a task went after its code: "SQL · FAILED · 2
// attempts · 10 rows".
func taskSummary(t alert.TaskLine) string {
	parts := []string{t.Handler, t.Status}
	if t.Status != alert.NotRun {
		parts = append(parts, plural(t.Attempts, "attempt"))
	}
	if t.Rows != nil {
		parts = append(parts, plural(int(*t.Rows), "row")+" written")
	}
	return strings.Join(parts, " · ")
}

// digestSummary says how a latest run went: "run 42 · SUCCESS · started
// 2026-03-01 06:00:05 UTC · SLA MET".
func digestSummary(c []string) string {
	parts := []string{"run " + c[1], c[2]}
	if c[3] != "" {
		parts = append(parts, "started "+c[3])
	}
	if c[4] != "" {
		parts = append(parts, "ended "+c[4])
	}
	if c[5] != "" {
		parts = append(parts, "SLA "+c[5])
	}
	return strings.Join(parts, " · ")
}

// plural writes n and a noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// linkLabel names the console's page of the run.
func linkLabel(m *alert.Message) string {
	return fmt.Sprintf("Open run %d in the console", m.Run.ID)
}

// part is what one optional part of a message holds: n items of what
// (tasks, errors, latest runs); what is "" for a part holding none.
type part struct {
	what string
	n    int
}

// omitted are the parts a message had to leave out.
type omitted []part

// String says what was left out: "12 more tasks and 3 more errors are not
// shown: the email and the console show them all"; "" when nothing was.
func (o omitted) String() string {
	var said []string
	for _, what := range []string{"tasks", "errors", "latest runs"} {
		n := 0
		for _, p := range o {
			if p.what == what {
				n += p.n
			}
		}
		if n > 0 {
			said = append(said, fmt.Sprintf("%d more %s", n, what))
		}
	}
	if len(said) == 0 {
		return ""
	}
	return strings.Join(said, " and ") + " are not shown: the email and the console show them all"
}

// encode writes v as JSON for a chat service, which reads <, > and & as
// they are: they are not escaped as \u003c and the like, which would make
// a text several times longer.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
