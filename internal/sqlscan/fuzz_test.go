package sqlscan

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fuzzSeeds start the fuzzer from each construct the splitter knows.
var fuzzSeeds = []string{
	"SELECT 1; SELECT 2",
	"SELECT 'a;b', 'it''s', '50%', ':name'; -- c;\nSELECT 2 /* ; */;",
	`SELECT "a;""b", ` + "`c;d`" + `, [e;f]; SELECT E'\';x'`,
	"/* a /* b; */ c; */ SELECT 1;\r\n-- tail",
	"CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; $$ LANGUAGE sql; DO $fn$ BEGIN; END $fn$; SELECT $1, a$$",
	"CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT CASE WHEN 1 THEN 2 END; UPDATE x SET a = 1; END; SELECT 3",
	"create temp trigger t before delete on x begin select 1; end /* c */ ; select 'unterminated",
}

func FuzzSplit(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, sql string, postgres bool) {
		d := SQLite
		if postgres {
			d = Postgres
		}
		got := Split(sql, d)
		lines := strings.Count(sql, "\n") + 1
		prev := 1
		for _, s := range got {
			if s.Text == "" || isSpace(s.Text[0]) || isSpace(s.Text[len(s.Text)-1]) {
				t.Fatalf("statement %q is empty or not trimmed", s.Text)
			}
			if !strings.Contains(sql, s.Text) {
				t.Fatalf("statement %q is not part of the input", s.Text)
			}
			if s.Line < prev || s.Line > lines {
				t.Fatalf("statement %q has line %d after line %d in a text of %d lines", s.Text, s.Line, prev, lines)
			}
			prev = s.Line
		}
		joined := strings.Join(texts(got), ";\n")
		if again := texts(Split(joined, d)); !reflect.DeepEqual(again, texts(got)) {
			t.Fatalf("re-splitting the joined statements changed them:\n first %q\nsecond %q", texts(got), again)
		}
	})
}

// FuzzScan checks that the tokens of any text, joined, give the text back
// exactly, and that splitting agrees with them: each statement runs from the
// start of a token to the end of one, and only whitespace, comments and
// semicolons lie between statements.
func FuzzScan(f *testing.F) {
	for _, s := range append(fuzzSeeds, "SELECT $$run_date, $$x1$$ y $$, $2 FROM t WHERE a <> 'b' -- $$c\r\n") {
		for d := range Task + 1 {
			f.Add(s, uint8(d))
		}
	}
	f.Fuzz(func(t *testing.T, sql string, dialect uint8) {
		d := Dialect(dialect % uint8(Task+1))
		tokens := Scan(sql, d)
		checkTokens(t, sql, d, tokens)
		checkSplit(t, sql, d, tokens, Split(sql, d))
	})
}

// checkTokens fails unless tokens cover sql exactly, in order, each with its
// line, and only the last is left open.
func checkTokens(t *testing.T, sql string, d Dialect, tokens []Token) {
	var joined strings.Builder
	line := 1
	for i, tok := range tokens {
		switch {
		case tok.Text == "" || tok.Pos != joined.Len():
			t.Fatalf("token %d %q is empty or does not start at %d", i, tok.Text, joined.Len())
		case tok.Line != line:
			t.Fatalf("token %d %q has line %d, want %d", i, tok.Text, tok.Line, line)
		case tok.Open && (i != len(tokens)-1 || tok.Kind == Space || tok.Kind == Word || tok.Kind == Symbol):
			t.Fatalf("token %d %q of kind %d is open", i, tok.Text, tok.Kind)
		case (tok.Kind == Space) != (strings.Trim(tok.Text, spaces) == ""),
			tok.Kind == Space && i > 0 && tokens[i-1].Kind == Space:
			t.Fatalf("token %d %q of kind %d is not one whole run of whitespace", i, tok.Text, tok.Kind)
		case tok.Kind == Substitution && d != Task:
			t.Fatalf("token %d %q is a substitution in dialect %d", i, tok.Text, d)
		}
		joined.WriteString(tok.Text)
		line += strings.Count(tok.Text, "\n")
	}
	if joined.String() != sql {
		t.Fatalf("the tokens joined give %q, not %q", joined.String(), sql)
	}
}

// checkSplit fails unless stmts are runs of tokens separated by whitespace,
// comments and semicolons, with semicolons inside a statement only in a
// SQLite trigger's body.
func checkSplit(t *testing.T, sql string, d Dialect, tokens []Token, stmts []Statement) {
	between := func(tok Token) bool {
		return tok.Kind == Space || tok.Kind == Comment || tok.Kind == Symbol && tok.Text == ";"
	}
	next := 0
	for _, s := range stmts {
		// The statement starts at the first token after the last semicolon
		// before its first token that is neither whitespace nor a comment.
		first := -1
		for i := next; i < len(tokens) && between(tokens[i]); i++ {
			switch {
			case tokens[i].Kind == Symbol:
				first = -1
			case tokens[i].Kind == Comment && first < 0:
				first = i
			}
			next = i + 1
		}
		if first < 0 {
			first = next
		}
		if first == len(tokens) || !strings.HasPrefix(sql[tokens[first].Pos:], s.Text) || tokens[first].Line != s.Line {
			t.Fatalf("statement %q (line %d) does not start at a token after the previous one", s.Text, s.Line)
		}
		end := tokens[first].Pos + len(s.Text)
		last := first
		for tokens[last].End() < end {
			last++
		}
		open := tokens[last].Open && strings.Trim(sql[end:tokens[last].End()], spaces) == ""
		if tokens[last].End() != end && !open || tokens[last].Kind == Space || tokens[last].Kind == Comment {
			t.Fatalf("statement %q does not end with a token", s.Text)
		}
		var words []string
		for _, tok := range tokens[first:last] {
			if tok.Kind == Word && len(words) < 3 {
				words = append(words, strings.ToUpper(tok.Text))
			}
			trigger := d == SQLite && slices.Contains(words, "TRIGGER") && words[0] == "CREATE"
			if tok.Kind == Symbol && tok.Text == ";" && !trigger {
				t.Fatalf("statement %q holds a semicolon outside a trigger body", s.Text)
			}
		}
		next = last + 1
	}
	for _, tok := range tokens[next:] {
		if !between(tok) {
			t.Fatalf("token %q after the last statement is in none", tok.Text)
		}
	}
}
