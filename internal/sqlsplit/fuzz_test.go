package sqlsplit

import (
	"reflect"
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
