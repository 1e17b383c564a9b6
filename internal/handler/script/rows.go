package script

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The first batch of task.load rows crosses the pipe as one line: R and
// the JSON array of the rows, each an array of values, as Python's json
// module writes it. parseRows reads it without reflection; it gives what
// decodeJSON would (json.Number, string, bool, nil, and for objects and
// nested arrays their decoded form).
//
// The batches after it cross as PostgreSQL's COPY text format (see
// copyPrefix): a PostgreSQL server reads them as they are; for any other
// warehouse copyRows decodes them into the values the bulk load takes.

// rowsPrefix starts a line holding a batch of rows.
const rowsPrefix = 'R'

// parseRows reads a JSON array of arrays of values.
func parseRows(b []byte) ([][]any, error) {
	p := rowParser{b: b}
	if err := p.expect('['); err != nil {
		return nil, err
	}
	var rows [][]any
	if p.peek() == ']' {
		p.i++
		return rows, nil
	}
	width := 0
	for {
		if err := p.expect('['); err != nil {
			return nil, err
		}
		row := make([]any, 0, width)
		if p.peek() == ']' {
			p.i++
		} else {
			for {
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				row = append(row, v)
				c, err := p.next()
				if err != nil {
					return nil, err
				}
				if c == ']' {
					break
				}
				if c != ',' {
					return nil, p.fail("a , or ] after a value")
				}
			}
		}
		width = len(row)
		rows = append(rows, row)
		c, err := p.next()
		if err != nil {
			return nil, err
		}
		if c == ']' {
			return rows, nil
		}
		if c != ',' {
			return nil, p.fail("a , or ] after a row")
		}
	}
}

// rowParser is a position in a batch's text.
type rowParser struct {
	b []byte
	i int
}

func (p *rowParser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t' || p.b[p.i] == '\r' || p.b[p.i] == '\n') {
		p.i++
	}
}

func (p *rowParser) peek() byte {
	p.space()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *rowParser) next() (byte, error) {
	c := p.peek()
	if c == 0 {
		return 0, p.fail("more")
	}
	p.i++
	return c, nil
}

func (p *rowParser) expect(c byte) error {
	if got, err := p.next(); err != nil || got != c {
		return p.fail(fmt.Sprintf("%q", c))
	}
	return nil
}

func (p *rowParser) fail(want string) error {
	return fmt.Errorf("unreadable batch of rows at byte %d: expected %s", p.i, want)
}

// value reads one value.
func (p *rowParser) value() (any, error) {
	switch c := p.peek(); {
	case c == '"':
		start := p.i
		p.i++
		plain := true
		for p.i < len(p.b) && p.b[p.i] != '"' {
			if p.b[p.i] == '\\' {
				plain = false
				p.i++
			}
			p.i++
		}
		if p.i >= len(p.b) {
			return nil, p.fail("the end of a string")
		}
		p.i++
		if plain {
			return string(p.b[start+1 : p.i-1]), nil
		}
		var s string
		err := json.Unmarshal(p.b[start:p.i], &s)
		return s, err
	case c == 'n', c == 't', c == 'f':
		for _, w := range []struct {
			text string
			v    any
		}{{"null", nil}, {"true", true}, {"false", false}} {
			if bytes.HasPrefix(p.b[p.i:], []byte(w.text)) {
				p.i += len(w.text)
				return w.v, nil
			}
		}
		return nil, p.fail("a value")
	case c == '-' || (c >= '0' && c <= '9'):
		start := p.i
		for p.i < len(p.b) && (p.b[p.i] == '-' || p.b[p.i] == '+' || p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E' ||
			(p.b[p.i] >= '0' && p.b[p.i] <= '9')) {
			p.i++
		}
		return json.Number(p.b[start:p.i]), nil
	case c == '{' || c == '[':
		d := json.NewDecoder(bytes.NewReader(p.b[p.i:]))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		p.i += int(d.InputOffset())
		return v, nil
	}
	return nil, p.fail("a value")
}

// copyRows decodes a batch of COPY text for the columns of a load of
// target: rows ending in a newline, fields separated by tabs, \N for NULL,
// and the format's backslash escapes. Each field becomes the value its
// column's type reads from that text, as the PostgreSQL server would read
// it and as loadValue reads the same value sent as JSON: integers as int64
// (text that is none as text, which the bulk load refuses as it refuses
// the same JSON), booleans, timestamps and dates as parseBool and
// parseTime read them, decimals and everything else as text.
func copyRows(target warehouse.Table, cols []warehouse.Column, text []byte) ([][]any, error) {
	s := string(text) // one copy for the batch: the plain fields are substrings of it
	n := strings.Count(s, "\n")
	if s != "" && s[len(s)-1] != '\n' {
		return nil, exit.Errorf(exit.Handler, "a batch of COPY text for the load of %s ends in the middle of a row", target.Full())
	}
	rows := make([][]any, n)
	vals := make([]any, n*len(cols))
	for r := range rows {
		end := strings.IndexByte(s, '\n')
		line := s[:end]
		s = s[end+1:]
		if w := strings.Count(line, "\t") + 1; w != len(cols) {
			return nil, exit.Errorf(exit.Handler, "a row of the load of %s has %d values for its %d columns", target.Full(), w, len(cols))
		}
		row := vals[r*len(cols) : (r+1)*len(cols) : (r+1)*len(cols)]
		for i, c := range cols {
			field := line
			if i < len(cols)-1 {
				tab := strings.IndexByte(line, '\t')
				field, line = line[:tab], line[tab+1:]
			}
			var err error
			if row[i], err = copyValue(field, c.Type); err != nil {
				return nil, exit.Wrap(exit.Handler, err, "column %s of the load of %s", c.Name, target.Full())
			}
		}
		rows[r] = row
	}
	return rows, nil
}

// copyValue reads one field of COPY text for a column of type t (see
// copyRows).
func copyValue(f string, t warehouse.Type) (any, error) {
	if f == `\N` {
		return nil, nil
	}
	if strings.IndexByte(f, '\\') >= 0 {
		f = copyUnescape(f)
	}
	switch t {
	case warehouse.BigInt:
		if n, err := strconv.ParseInt(f, 10, 64); err == nil {
			return n, nil
		}
	case warehouse.Boolean:
		return parseBool(f)
	case warehouse.Date, warehouse.Timestamp:
		return parseTime(f)
	}
	return f, nil
}

// copyUnescape reads the backslash escapes of a field of COPY text as the
// PostgreSQL server does: \b \f \n \r \t \v, one to three octal digits,
// \x and one or two hexadecimal digits, and a backslash before any other
// character stands for that character.
func copyUnescape(f string) string {
	var b strings.Builder
	b.Grow(len(f))
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c != '\\' || i+1 == len(f) {
			b.WriteByte(c)
			continue
		}
		i++
		switch c = f[i]; c {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := c - '0'
			for k := 0; k < 2 && i+1 < len(f) && f[i+1] >= '0' && f[i+1] <= '7'; k++ {
				i++
				v = v<<3 | (f[i] - '0')
			}
			b.WriteByte(v)
		case 'x':
			j := i + 1
			for j < len(f) && j < i+3 && isHex(f[j]) {
				j++
			}
			if j == i+1 {
				b.WriteByte('x')
				continue
			}
			v, _ := strconv.ParseUint(f[i+1:j], 16, 8)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
