// Package freetext is the one rule for the free text people give etl-craft
// to store (reasons, run keys, token names, actors): no control or format
// characters. It also says how text is printed, whenever it was stored:
// every control character, and every character that reorders the text
// around it, written as a visible escape, so that stored text can neither
// drive a terminal nor disguise a line. The command line, the HTTP API and
// the web console all call it.
package freetext

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Forbidden reports whether r may not appear in stored free text: a control
// character (C0, DEL or C1, line breaks and tabs included) or a format
// character (Unicode category Cf, such as U+200B or the bidirectional
// overrides).
func Forbidden(r rune) bool { return unicode.IsControl(r) || unicode.In(r, unicode.Cf) }

// Check refuses text that holds a forbidden character or is not UTF-8, with
// an error that names the first such character; the caller names the
// field. Text without any is nil.
func Check(s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("is not valid UTF-8 text")
	}
	for _, r := range s {
		if Forbidden(r) {
			return fmt.Errorf("contains a control or format character (%U): use printable text only", r)
		}
	}
	return nil
}

// hidden reports whether printing r as it is could fool a reader: a
// control character, or a character that reorders the text around it (the
// bidirectional marks, embeddings, overrides and isolates). Other format
// characters, such as the joiners of emoji and of Persian words, print as
// they are.
func hidden(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f:
		return true // C0 and DEL
	case r < 0x80:
		return false
	case r <= 0x9f:
		return true // C1
	}
	// Unicode's Bidi_Control characters.
	return r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// Visible returns s for one field of text output: every hidden character,
// line breaks and tabs included, and every byte that is not UTF-8 written
// as an escape (\n, \t, \r, \u001b, \xff). The escapes of characters are
// JSON's too.
func Visible(s string) string {
	return escape(s, func(rune) bool { return false })
}

// escape writes s with its hidden characters, but those keep reports, and
// its bytes that are not UTF-8 escaped.
func escape(s string, keep func(rune) bool) string {
	if clean([]byte(s), keep) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !hidden(r) || keep(r):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		default:
			fmt.Fprintf(&b, `\u%04x`, r) // every hidden character is in the Basic Multilingual Plane
		}
		i += size
	}
	return b.String()
}

// clean reports whether escape leaves p as it is.
func clean(p []byte, keep func(rune) bool) bool {
	for i := 0; i < len(p); {
		if c := p[i]; c >= 0x20 && c < 0x7f {
			i++ // printable ASCII, most of any output
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 || hidden(r) && !keep(r) {
			return false
		}
		i += size
	}
	return true
}

// Writer passes text on to an output with every hidden character but line
// breaks and tabs, which lay out the output itself, written as an escape,
// as Visible writes them. A character split between two writes is kept
// until the next one completes it; Flush writes what is left.
type Writer struct {
	w    io.Writer
	tail []byte
}

// NewWriter returns a Writer to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// layout reports whether r lays out the output: a line break or a tab.
func layout(r rune) bool { return r == '\n' || r == '\t' }

// Write writes p, escaped, and reports all of it written.
func (w *Writer) Write(p []byte) (int, error) {
	n := len(p)
	if len(w.tail) > 0 {
		p = append(w.tail, p...)
		w.tail = nil
	}
	// Keep an incomplete character at the end for the next write.
	if cut := incompleteTail(p); cut < len(p) {
		w.tail = append([]byte(nil), p[cut:]...)
		p = p[:cut]
	}
	var err error
	if clean(p, layout) {
		_, err = w.w.Write(p)
	} else {
		_, err = io.WriteString(w.w, escape(string(p), layout))
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes the incomplete character a last write left, escaped.
func (w *Writer) Flush() error {
	if len(w.tail) == 0 {
		return nil
	}
	s := escape(string(w.tail), layout)
	w.tail = nil
	_, err := io.WriteString(w.w, s)
	return err
}

// incompleteTail returns where the incomplete UTF-8 sequence that ends p
// starts, len(p) when p ends whole.
func incompleteTail(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return i
			}
			break
		}
	}
	return len(p)
}
