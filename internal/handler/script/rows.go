package script

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A batch of task.load rows crosses the pipe as one line: R and the JSON
// array of the rows, each an array of values, as Python's json module
// writes it. parseRows reads it without reflection; it gives what
// decodeJSON would (json.Number, string, bool, nil, and for objects and
// nested arrays their decoded form).

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
