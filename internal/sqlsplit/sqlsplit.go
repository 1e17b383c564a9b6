// Package sqlsplit cuts a SQL text, such as a migration file, into the
// statements it holds, so that each can be sent to the database exactly as
// written. Nothing is bound or substituted: colons, percent signs and
// question marks are plain text to this package.
//
// The text is read as a stream of tokens. A semicolon ends a statement unless
// it is inside one of these, which are read whole:
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
//     underscores ($1 is a parameter, not a tag), and a dollar sign inside a
//     word (a$b$) belongs to the word;
//   - on SQLite, the body of a trigger: a statement whose first words are
//     CREATE [TEMP|TEMPORARY] TRIGGER runs until a semicolon that follows the
//     word END that itself follows a semicolon (… ; END;), the rule of
//     SQLite's own sqlite3_complete. So semicolons of the body's statements
//     do not split it, and the END of a CASE … END inside it does not end it.
//
// A construct that is not closed runs to the end of the text (less the
// whitespace at its end).
//
// Whitespace means space, tab, line feed, carriage return, form feed and
// vertical tab. Each statement's Text runs from its first character that is
// not whitespace, so comments before a statement stay with it, to the end of
// its last token: whitespace and comments between the last token and the
// separating semicolon are left out, and so is the semicolon. A piece holding
// only whitespace and comments is dropped. Line is the 1-based line, counted
// by line feeds, of the first character of Text.
//
// Joining the statements' texts with ";\n" gives a text that splits into the
// same statements.
package sqlsplit

import "strings"

// Dialect says whose SQL rules a text follows.
type Dialect int

// The dialects the splitter knows.
const (
	// SQLite follows SQLite's tokenizer, with trigger bodies kept whole.
	SQLite Dialect = iota
	// Postgres follows PostgreSQL's lexer, with dollar quoting, escape
	// strings and nested block comments.
	Postgres
)

// Statement is one statement of a SQL text: its text (trimmed, without the
// separating semicolon) and the 1-based line where it starts in the input.
type Statement struct {
	Text string
	Line int
}

// Split returns the statements of sql in order, following the rules of the
// package documentation. It never fails: malformed SQL is split as far as the
// rules go and left for the database to judge.
func Split(sql string, d Dialect) []Statement {
	s := splitter{src: sql, d: d, line: 1, start: -1}
	for s.pos < len(sql) {
		s.step()
	}
	s.emit()
	return s.out
}

// splitter holds the state of one Split call.
type splitter struct {
	src string
	d   Dialect
	pos int

	start int // offset of the current statement's first non-whitespace byte, or -1
	end   int // offset just past the current statement's last token; 0 when it has none
	trig  trigger

	line    int // the line of offset counted
	counted int
	out     []Statement
}

// step reads what starts at pos: whitespace, a comment, a separating
// semicolon or a token.
func (s *splitter) step() {
	c := s.src[s.pos]
	switch {
	case isSpace(c):
		s.pos++
		return
	case s.at("--"):
		s.mark()
		s.pos = s.lineCommentEnd()
		return
	case s.at("/*"):
		s.mark()
		s.pos = s.blockCommentEnd()
		return
	case c == ';' && s.trig.inBody():
		s.mark()
		s.pos++
		s.end = s.pos
		s.trig = trigSemi
		return
	case c == ';':
		s.emit()
		s.pos++
		return
	}
	s.mark()
	from := s.pos
	s.pos = s.tokenEnd()
	s.end = s.pos
	if s.d == SQLite {
		s.trig.next(s.src[from:s.pos])
	}
}

// at reports whether the text at pos starts with prefix.
func (s *splitter) at(prefix string) bool {
	return strings.HasPrefix(s.src[s.pos:], prefix)
}

// mark records pos as the start of the current statement if it has none.
func (s *splitter) mark() {
	if s.start < 0 {
		s.start = s.pos
	}
}

// emit ends the current statement, keeping it when it holds a token.
func (s *splitter) emit() {
	if s.end > s.start && s.start >= 0 {
		s.line += strings.Count(s.src[s.counted:s.start], "\n")
		s.counted = s.start
		// Only a construct left open at the end of the text can end in
		// whitespace; it is trimmed like the rest.
		text := strings.TrimRight(s.src[s.start:s.end], spaces)
		s.out = append(s.out, Statement{Text: text, Line: s.line})
	}
	s.start, s.end = -1, 0
	s.trig = trigStart
}

func (s *splitter) lineCommentEnd() int {
	stop := "\n"
	if s.d == Postgres {
		stop = "\n\r"
	}
	if i := strings.IndexAny(s.src[s.pos:], stop); i >= 0 {
		return s.pos + i
	}
	return len(s.src)
}

func (s *splitter) blockCommentEnd() int {
	if s.d != Postgres {
		if i := strings.Index(s.src[s.pos+2:], "*/"); i >= 0 {
			return s.pos + 2 + i + 2
		}
		return len(s.src)
	}
	depth := 0
	for i := s.pos; i < len(s.src); {
		switch {
		case strings.HasPrefix(s.src[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(s.src[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return len(s.src)
}

// tokenEnd returns the end of the token starting at pos.
func (s *splitter) tokenEnd() int {
	c := s.src[s.pos]
	switch {
	case c == '\'':
		return quotedEnd(s.src, s.pos, '\'', false)
	case c == '"' || c == '`':
		return quotedEnd(s.src, s.pos, c, false)
	case c == '[' && s.d == SQLite:
		if i := strings.IndexByte(s.src[s.pos+1:], ']'); i >= 0 {
			return s.pos + 1 + i + 1
		}
		return len(s.src)
	case c == '$' && s.d == Postgres:
		return s.dollarEnd()
	case isWordStart(c):
		end := s.pos + 1
		for end < len(s.src) && isWordPart(s.src[end]) {
			end++
		}
		if s.d == Postgres && end == s.pos+1 && (c == 'e' || c == 'E') && end < len(s.src) && s.src[end] == '\'' {
			return quotedEnd(s.src, end, '\'', true)
		}
		return end
	case isDigit(c):
		end := s.pos + 1
		for end < len(s.src) && (isWordStart(s.src[end]) || isDigit(s.src[end]) || s.src[end] == '.') {
			end++
		}
		return end
	}
	return s.pos + 1
}

// dollarEnd returns the end of a dollar-quoted body starting at pos, or just
// past the dollar sign when no valid opening tag starts there.
func (s *splitter) dollarEnd() int {
	i := s.pos + 1
	if i < len(s.src) && isWordStart(s.src[i]) {
		for i < len(s.src) && (isWordStart(s.src[i]) || isDigit(s.src[i])) {
			i++
		}
	}
	if i >= len(s.src) || s.src[i] != '$' {
		return s.pos + 1
	}
	tag := s.src[s.pos : i+1]
	if j := strings.Index(s.src[i+1:], tag); j >= 0 {
		return i + 1 + j + len(tag)
	}
	return len(s.src)
}

// quotedEnd returns the end of the quoted token whose opening quote is at
// open: a doubled quote stands for one, and with backslash a backslash
// escapes the next byte.
func quotedEnd(src string, open int, quote byte, backslash bool) int {
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
			return i + 1
		}
	}
	return len(src)
}

// trigger follows a SQLite statement's tokens the way sqlite3_complete does,
// to know whether a semicolon ends the statement or belongs to a trigger body.
// Its zero value is the state at a statement's start. PostgreSQL statements
// never leave that state: their trigger definitions have no body.
type trigger int

const (
	trigStart  trigger = iota // no token yet
	trigCreate                // CREATE [TEMP]
	trigPlain                 // any other statement: a semicolon separates
	trigBody                  // inside CREATE TRIGGER …
	trigSemi                  // body, right after a semicolon
	trigEnd                   // body, right after "; END"
)

// inBody reports whether a semicolon in this state belongs to a trigger
// body rather than ending the statement.
func (t trigger) inBody() bool { return t == trigBody || t == trigSemi }

// next moves past one token of the statement other than a semicolon.
func (t *trigger) next(tok string) {
	switch *t {
	case trigStart:
		*t = trigPlain
		if strings.EqualFold(tok, "CREATE") {
			*t = trigCreate
		}
	case trigCreate:
		switch {
		case strings.EqualFold(tok, "TEMP") || strings.EqualFold(tok, "TEMPORARY"):
		case strings.EqualFold(tok, "TRIGGER"):
			*t = trigBody
		default:
			*t = trigPlain
		}
	case trigSemi:
		*t = trigBody
		if strings.EqualFold(tok, "END") {
			*t = trigEnd
		}
	case trigEnd:
		*t = trigBody
	}
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
