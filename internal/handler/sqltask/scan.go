package sqltask

import "strings"

// itemKind is what a scanned item of SQL text is.
type itemKind int

const (
	word    itemKind = iota // a keyword or unquoted identifier
	number                  // a numeric literal
	token                   // a $$name substitution token
	symbol                  // any other single character
	comment                 // a -- or /* */ comment
)

// item is one piece of SQL outside string literals, quoted identifiers and
// dollar-quoted bodies, which the scanner reads whole and leaves out.
type item struct {
	kind itemKind
	text string
	pos  int // byte offset in the text
}

// scanned is the result of scanning a SQL text.
type scanned struct {
	items []item
	// open names a construct that runs to the end of the text unclosed
	// (a string literal, quoted identifier, comment or dollar-quoted body).
	open string
}

// scan reads SQL text the way PostgreSQL's lexer (and DuckDB's, derived
// from it) does, and returns the items outside literals: single-quoted
// strings (doubled quotes; an E'…' string also takes backslash escapes),
// double-quoted identifiers, -- and nested /* */ comments (kept as comment
// items) and $tag$ … $tag$ bodies. A $$ right before a letter or underscore
// starts a $$name token rather than an empty-tag dollar body.
func scan(sql string) scanned {
	var s scanned
	n := len(sql)
	for i := 0; i < n; {
		c := sql[i]
		switch {
		case isSpace(c):
			i++
		case c == '\'':
			i = s.quoted(sql, i, '\'', false)
		case c == '"':
			i = s.quoted(sql, i, '"', false)
		case c == '-' && i+1 < n && sql[i+1] == '-':
			end := strings.IndexByte(sql[i:], '\n')
			if end < 0 {
				end = n - i
			}
			s.items = append(s.items, item{comment, sql[i : i+end], i})
			i += end
		case c == '/' && i+1 < n && sql[i+1] == '*':
			i = s.blockComment(sql, i)
		case c == '$':
			i = s.dollar(sql, i)
		case isIdentStart(c):
			j := i + 1
			for j < n && isIdentPart(sql[j]) {
				j++
			}
			if j-i == 1 && (c == 'E' || c == 'e') && j < n && sql[j] == '\'' {
				i = s.quoted(sql, j, '\'', true)
				continue
			}
			s.items = append(s.items, item{word, sql[i:j], i})
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < n && (isIdentPart(sql[j]) || sql[j] == '.') {
				j++
			}
			s.items = append(s.items, item{number, sql[i:j], i})
			i = j
		default:
			s.items = append(s.items, item{symbol, sql[i : i+1], i})
			i++
		}
	}
	return s
}

// quoted skips a literal or quoted identifier opening at i and returns the
// offset after it.
func (s *scanned) quoted(sql string, i int, q byte, backslash bool) int {
	for j := i + 1; j < len(sql); j++ {
		switch {
		case backslash && sql[j] == '\\':
			j++
		case sql[j] == q && j+1 < len(sql) && sql[j+1] == q:
			j++
		case sql[j] == q:
			return j + 1
		}
	}
	if q == '"' {
		s.open = "a quoted identifier"
	} else {
		s.open = "a string literal"
	}
	return len(sql)
}

// blockComment records a nested /* */ comment opening at i.
func (s *scanned) blockComment(sql string, i int) int {
	depth := 0
	for j := i; j+1 < len(sql); j++ {
		switch {
		case sql[j] == '/' && sql[j+1] == '*':
			depth++
			j++
		case sql[j] == '*' && sql[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				s.items = append(s.items, item{comment, sql[i : j+1], i})
				return j + 1
			}
		}
	}
	s.open = "a /* comment"
	s.items = append(s.items, item{comment, sql[i:], i})
	return len(sql)
}

// dollar reads what starts with a $ at i: a $$name token, a dollar-quoted
// body, or a lone $ (such as $1).
func (s *scanned) dollar(sql string, i int) int {
	n := len(sql)
	if i+2 < n && sql[i+1] == '$' && isIdentStart(sql[i+2]) {
		j := i + 3
		for j < n && isIdentPart(sql[j]) && sql[j] != '$' {
			j++
		}
		s.items = append(s.items, item{token, sql[i:j], i})
		return j
	}
	j := i + 1
	if j < n && isIdentStart(sql[j]) {
		for j < n && isIdentPart(sql[j]) && sql[j] != '$' {
			j++
		}
	}
	if j < n && sql[j] == '$' {
		tag := sql[i : j+1]
		end := strings.Index(sql[j+1:], tag)
		if end < 0 {
			s.open = "a dollar-quoted body " + tag
			return n
		}
		return j + 1 + end + len(tag)
	}
	s.items = append(s.items, item{symbol, "$", i})
	return i + 1
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// isIdentStart reports whether c may start an unquoted identifier; bytes of
// multi-byte UTF-8 characters count as letters, as in PostgreSQL.
func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdentPart(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9') || c == '$'
}

// lineOf returns the 1-based line of a byte offset.
func lineOf(text string, pos int) int {
	return strings.Count(text[:pos], "\n") + 1
}
