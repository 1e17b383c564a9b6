// Package sqlscan is etl-craft's one lexer of SQL. Scan reads a text as a
// stream of tokens that, joined, give the text back exactly; Split builds on
// it to cut a text, such as a migration file, into its statements, and other
// packages build on it to compare SQL by its tokens (engine/catalog) and to
// read a SQL task's SELECT (handler/sqltask). Nothing is bound or
// substituted: colons, percent signs and question marks are plain text.
//
// These constructs are read whole, each as one token:
//
//   - a single-quoted string literal, where a doubled quote stands for one; on
//     PostgreSQL an escape string E'…' (the E alone, right before the quote)
//     also takes a backslash as escaping the next character;
//   - a double-quoted or back-quoted identifier, where a doubled quote stands
//     for one; on SQLite also a bracketed identifier […];
//   - a line comment, from -- to the end of the line (on PostgreSQL a carriage
//     return ends it too);
//   - a block comment /* … */, nested on PostgreSQL and not on SQLite;
//   - on PostgreSQL, a dollar-quoted body $tag$ … $tag$, where the tag is
//     empty or a letter or underscore followed by letters, digits and
//     underscores, and a positional parameter $1; a dollar sign inside a word
//     (a$b$) belongs to the word;
//   - in a SQL task's text (Task), also an etl-craft token $$name.
//
// Besides those, a token is a run of whitespace, a word (a keyword or an
// unquoted identifier), a number, or any other single byte. A construct
// that is not closed runs to the end of the text.
//
// Whitespace means space, tab, line feed, carriage return, form feed and
// vertical tab. Lines are 1-based and counted by line feeds.
package sqlscan

import "strings"

// Dialect says whose SQL rules a text follows.
type Dialect int

// The dialects the scanner knows.
const (
	// SQLite follows SQLite's tokenizer, with trigger bodies kept whole by
	// Split.
	SQLite Dialect = iota
	// Postgres follows PostgreSQL's lexer (and DuckDB's, derived from it),
	// with dollar quoting, escape strings and nested block comments.
	Postgres
	// Task is the text of a SQL task's SELECT: PostgreSQL's rules, where a
	// $$ right before a letter or underscore starts an etl-craft token
	// ($$run_date) rather than an empty-tag dollar-quoted body.
	Task
)

// postgres reports whether d follows PostgreSQL's lexer.
func (d Dialect) postgres() bool { return d == Postgres || d == Task }

// Kind is what a token is.
type Kind int

// The kinds of token.
const (
	Space        Kind = iota // a run of whitespace
	Comment                  // a -- line comment or a /* */ block comment
	Word                     // a keyword or an unquoted identifier
	Number                   // a numeric literal
	String                   // a string literal, '…' or E'…'
	Identifier               // a quoted identifier, "…", `…` or […]
	DollarQuoted             // a dollar-quoted body $tag$ … $tag$
	Param                    // a positional parameter $1
	Substitution             // an etl-craft token $$name (Task only)
	Symbol                   // any other single byte
)

// Token is one token of a SQL text.
type Token struct {
	Kind Kind
	Text string // the token as written
	Pos  int    // its byte offset in the text
	Line int    // the line of its first byte
	// Open is set on a string, quoted identifier, block comment or
	// dollar-quoted body that the text ends before closing.
	Open bool
}

// End returns the offset just past the token.
func (t Token) End() int { return t.Pos + len(t.Text) }

// Tag returns the $tag$ that opens a dollar-quoted token, and "" for a
// token of any other kind.
func (t Token) Tag() string {
	if t.Kind != DollarQuoted {
		return ""
	}
	return t.Text[:strings.IndexByte(t.Text[1:], '$')+2]
}

// Scan returns the tokens of sql, read with d's rules. It never fails:
// malformed SQL is read as far as the rules go and left for the database to
// judge.
func Scan(sql string, d Dialect) []Token {
	var out []Token
	line := 1
	for pos := 0; pos < len(sql); {
		kind, end, closed := lex(sql, pos, d)
		t := Token{Kind: kind, Text: sql[pos:end], Pos: pos, Line: line, Open: !closed}
		out = append(out, t)
		line += strings.Count(t.Text, "\n")
		pos = end
	}
	return out
}

// lex reads the token starting at pos and returns its kind, its end and
// whether it is closed (tokens that need no closing are).
func lex(src string, pos int, d Dialect) (kind Kind, end int, closed bool) {
	c := src[pos]
	rest := src[pos:]
	switch {
	case isSpace(c):
		end = pos + 1
		for end < len(src) && isSpace(src[end]) {
			end++
		}
		return Space, end, true
	case strings.HasPrefix(rest, "--"):
		return Comment, lineCommentEnd(src, pos, d), true
	case strings.HasPrefix(rest, "/*"):
		end, closed = blockCommentEnd(src, pos, d)
		return Comment, end, closed
	case c == '\'':
		end, closed = quotedEnd(src, pos, '\'', false)
		return String, end, closed
	case c == '"' || c == '`':
		end, closed = quotedEnd(src, pos, c, false)
		return Identifier, end, closed
	case c == '[' && d == SQLite:
		if i := strings.IndexByte(rest[1:], ']'); i >= 0 {
			return Identifier, pos + 1 + i + 1, true
		}
		return Identifier, len(src), false
	case c == '$' && d.postgres():
		return dollar(src, pos, d)
	case isWordStart(c):
		end = pos + 1
		for end < len(src) && isWordPart(src[end]) {
			end++
		}
		if d.postgres() && end == pos+1 && (c == 'e' || c == 'E') && end < len(src) && src[end] == '\'' {
			end, closed = quotedEnd(src, end, '\'', true)
			return String, end, closed
		}
		return Word, end, true
	case isDigit(c):
		end = pos + 1
		for end < len(src) && (isWordStart(src[end]) || isDigit(src[end]) || src[end] == '.') {
			end++
		}
		return Number, end, true
	}
	return Symbol, pos + 1, true
}

// lineCommentEnd returns the end of the line comment at pos: the line
// break, which is not part of it, or the end of the text.
func lineCommentEnd(src string, pos int, d Dialect) int {
	stop := "\n"
	if d.postgres() {
		stop = "\n\r"
	}
	if i := strings.IndexAny(src[pos:], stop); i >= 0 {
		return pos + i
	}
	return len(src)
}

// blockCommentEnd returns the end of the block comment at pos and whether
// it is closed.
func blockCommentEnd(src string, pos int, d Dialect) (int, bool) {
	if !d.postgres() {
		if i := strings.Index(src[pos+2:], "*/"); i >= 0 {
			return pos + 2 + i + 2, true
		}
		return len(src), false
	}
	depth := 0
	for i := pos; i < len(src); {
		switch {
		case strings.HasPrefix(src[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(src[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i, true
			}
		default:
			i++
		}
	}
	return len(src), false
}

// dollar reads what starts with a dollar sign at pos on PostgreSQL: an
// etl-craft token (Task only), a dollar-quoted body, a positional parameter
// or a lone dollar sign.
func dollar(src string, pos int, d Dialect) (Kind, int, bool) {
	n := len(src)
	if d == Task && pos+2 < n && src[pos+1] == '$' && isWordStart(src[pos+2]) {
		j := pos + 3
		for j < n && (isWordStart(src[j]) || isDigit(src[j])) {
			j++
		}
		return Substitution, j, true
	}
	i := pos + 1
	if i < n && isDigit(src[i]) {
		for i < n && isDigit(src[i]) {
			i++
		}
		return Param, i, true
	}
	if i < n && isWordStart(src[i]) {
		for i < n && (isWordStart(src[i]) || isDigit(src[i])) {
			i++
		}
	}
	if i >= n || src[i] != '$' {
		return Symbol, pos + 1, true
	}
	tag := src[pos : i+1]
	if j := strings.Index(src[i+1:], tag); j >= 0 {
		return DollarQuoted, i + 1 + j + len(tag), true
	}
	return DollarQuoted, n, false
}

// quotedEnd returns the end of the quoted token whose opening quote is at
// open, and whether it is closed: a doubled quote stands for one, and with
// backslash a backslash escapes the next byte.
func quotedEnd(src string, open int, quote byte, backslash bool) (int, bool) {
	for i := open + 1; i < len(src); i++ {
		switch src[i] {
		case '\\':
			if backslash {
				i++
			}
		case quote:
			if i+1 < len(src) && src[i+1] == quote {
				i++
				continue
			}
			return i + 1, true
		}
	}
	return len(src), false
}

// spaces are the bytes that count as whitespace.
const spaces = " \t\n\r\f\v"

func isSpace(c byte) bool { return strings.IndexByte(spaces, c) >= 0 }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isWordStart reports whether c may start an identifier or keyword: a letter,
// an underscore or a byte of a multi-byte UTF-8 character.
func isWordStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c >= 0x80
}

// isWordPart reports whether c may continue an identifier or keyword.
func isWordPart(c byte) bool { return isWordStart(c) || isDigit(c) || c == '$' }
