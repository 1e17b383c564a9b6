package sqlscan

import "strings"

// Statement is one statement of a SQL text: its text (trimmed, without the
// separating semicolon) and the 1-based line where it starts in the input.
type Statement struct {
	Text string
	Line int
}

// Split returns the statements of sql in order. A semicolon token ends a
// statement, unless it is inside the body of a SQLite trigger: a statement
// whose first words are CREATE [TEMP|TEMPORARY] TRIGGER runs until a
// semicolon that follows the word END that itself follows a semicolon
// (… ; END;), the rule of SQLite's own sqlite3_complete. So semicolons of the
// body's statements do not split it, and the END of a CASE … END inside it
// does not end it.
//
// Each statement's Text runs from its first token that is not whitespace, so
// comments before a statement stay with it, to the end of its last token
// that is neither whitespace nor a comment, less any whitespace a construct
// left open at the end of the text ends in: whitespace and comments between
// the last token and the separating semicolon are left out, and so is the
// semicolon. A piece holding only whitespace and comments is dropped. Line
// is the line of the first byte of Text.
//
// Joining the statements' texts with ";\n" gives a text that splits into the
// same statements. Split never fails: malformed SQL is split as far as the
// rules go and left for the database to judge.
func Split(sql string, d Dialect) []Statement {
	var out []Statement
	var first *Token // the current statement's first token
	end := 0         // offset just past its last token, 0 when it has none
	trig := trigStart
	emit := func() {
		if first != nil && end > first.Pos {
			// Only a construct left open at the end of the text can end in
			// whitespace; it is trimmed like the rest.
			text := strings.TrimRight(sql[first.Pos:end], spaces)
			out = append(out, Statement{Text: text, Line: first.Line})
		}
		first, end, trig = nil, 0, trigStart
	}
	tokens := Scan(sql, d)
	for i := range tokens {
		t := &tokens[i]
		semicolon := t.Kind == Symbol && t.Text == ";"
		switch {
		case t.Kind == Space:
			continue
		case semicolon && !trig.inBody():
			emit()
			continue
		}
		if first == nil {
			first = t
		}
		if t.Kind == Comment {
			continue
		}
		end = t.End()
		switch {
		case semicolon:
			trig = trigSemi
		case d == SQLite:
			trig.next(t.Text)
		}
	}
	emit()
	return out
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
