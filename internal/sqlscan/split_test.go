package sqlscan

import (
	"reflect"
	"strings"
	"testing"
)

// both marks a case that splits the same way on both dialects.
var both = []Dialect{SQLite, Postgres}

func dialectName(d Dialect) string {
	if d == Postgres {
		return "postgres"
	}
	return "sqlite"
}

func texts(stmts []Statement) []string {
	out := make([]string, len(stmts))
	for i, s := range stmts {
		out[i] = s.Text
	}
	return out
}

func TestSplitTexts(t *testing.T) {
	cases := []struct {
		name     string
		dialects []Dialect
		in       string
		want     []string
	}{
		{"empty", both, "", nil},
		{"only whitespace and comments", both, " \n-- one\n/* two; */\n\t", nil},
		{"empty statements", both, ";;\n ; ;", nil},
		{"two statements", both, "SELECT 1; SELECT 2;", []string{"SELECT 1", "SELECT 2"}},
		{"no final semicolon", both, "SELECT 1;\nSELECT 2\n", []string{"SELECT 1", "SELECT 2"}},
		{"semicolon in literal", both, "INSERT INTO t VALUES ('a;b'); SELECT 2",
			[]string{"INSERT INTO t VALUES ('a;b')", "SELECT 2"}},
		{"percent in literal", both, "SELECT '50%'; SELECT 1", []string{"SELECT '50%'", "SELECT 1"}},
		{"colons in literal", both, "SELECT ':name', '12:30';", []string{"SELECT ':name', '12:30'"}},
		{"doubled quote", both, "SELECT 'it''s; fine'; SELECT 2", []string{"SELECT 'it''s; fine'", "SELECT 2"}},
		{"comment marker in literal", both, "SELECT '-- ;'; SELECT '/* ; */'",
			[]string{"SELECT '-- ;'", "SELECT '/* ; */'"}},
		{"double-quoted identifier", both, `SELECT 1 AS "a;""b"; SELECT 2`,
			[]string{`SELECT 1 AS "a;""b"`, "SELECT 2"}},
		{"back-quoted identifier", both, "SELECT 1 AS `a;``b`; SELECT 2",
			[]string{"SELECT 1 AS `a;``b`", "SELECT 2"}},
		{"line comment holding a semicolon", both, "SELECT 1 -- not here; nor here\n, 2; SELECT 3",
			[]string{"SELECT 1 -- not here; nor here\n, 2", "SELECT 3"}},
		{"block comment holding a semicolon", both, "SELECT /* a; b */ 1; SELECT 2",
			[]string{"SELECT /* a; b */ 1", "SELECT 2"}},
		{"leading comments stay", both, "SELECT 1;\n-- the second\n/* really */ SELECT 2;",
			[]string{"SELECT 1", "-- the second\n/* really */ SELECT 2"}},
		{"trailing comments leave", both, "SELECT 1 -- the end\n;\nSELECT 2 /* x */ ; -- done\n",
			[]string{"SELECT 1", "SELECT 2"}},
		{"comment-only remainder dropped", both, "SELECT 1;\n-- nothing more\n", []string{"SELECT 1"}},
		{"unterminated literal", both, "SELECT 'a; b", []string{"SELECT 'a; b"}},
		{"unterminated identifier", both, `SELECT "a; b`, []string{`SELECT "a; b`}},
		{"unterminated block comment", both, "SELECT 1; /* a; b", []string{"SELECT 1"}},
		{"question marks and percent signs", both, "SELECT a % 2 FROM t WHERE b = ?; SELECT 1",
			[]string{"SELECT a % 2 FROM t WHERE b = ?", "SELECT 1"}},

		{"escape string", []Dialect{Postgres}, `SELECT E'a\'; b'; SELECT 2`,
			[]string{`SELECT E'a\'; b'`, "SELECT 2"}},
		{"lower-case escape string", []Dialect{Postgres}, `SELECT e'\\'; SELECT 2`,
			[]string{`SELECT e'\\'`, "SELECT 2"}},
		{"backslash in a standard string", []Dialect{Postgres}, `SELECT 'a\'; SELECT 2`,
			[]string{`SELECT 'a\'`, "SELECT 2"}},
		{"E ending a word is no prefix", []Dialect{Postgres}, `SELECT name'\'; SELECT 2`,
			[]string{`SELECT name'\'`, "SELECT 2"}},
		{"backslash on SQLite", []Dialect{SQLite}, `SELECT E'a\'; SELECT 2`,
			[]string{`SELECT E'a\'`, "SELECT 2"}},
		{"nested block comment", []Dialect{Postgres}, "SELECT /* a /* b; */ c; */ 1; SELECT 2",
			[]string{"SELECT /* a /* b; */ c; */ 1", "SELECT 2"}},
		{"block comments do not nest on SQLite", []Dialect{SQLite}, "SELECT /* a /* b */ 1; SELECT 2",
			[]string{"SELECT /* a /* b */ 1", "SELECT 2"}},
		{"carriage return ends a PostgreSQL line comment", []Dialect{Postgres}, "SELECT 1 -- c\r; SELECT 2",
			[]string{"SELECT 1", "SELECT 2"}},
		{"carriage return does not end a SQLite line comment", []Dialect{SQLite}, "SELECT 1 -- c\r; SELECT 2\nSELECT 3",
			[]string{"SELECT 1 -- c\r; SELECT 2\nSELECT 3"}},
		{"bracketed identifier", []Dialect{SQLite}, "SELECT 1 AS [a;b]; SELECT 2",
			[]string{"SELECT 1 AS [a;b]", "SELECT 2"}},
		{"brackets are not quotes on PostgreSQL", []Dialect{Postgres}, "SELECT ARRAY[1;2]",
			[]string{"SELECT ARRAY[1", "2]"}},
		{"empty dollar tag", []Dialect{Postgres},
			"CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; SELECT 2 $$ LANGUAGE sql; SELECT f()",
			[]string{"CREATE FUNCTION f() RETURNS int AS $$ SELECT 1; SELECT 2 $$ LANGUAGE sql", "SELECT f()"}},
		{"named dollar tag", []Dialect{Postgres},
			"DO $fn$ BEGIN PERFORM 1; PERFORM '$$'; END $fn$; SELECT 2",
			[]string{"DO $fn$ BEGIN PERFORM 1; PERFORM '$$'; END $fn$", "SELECT 2"}},
		{"other tag inside a body", []Dialect{Postgres}, "SELECT $a$ $b$; $a$; SELECT 2",
			[]string{"SELECT $a$ $b$; $a$", "SELECT 2"}},
		{"tags are case-sensitive", []Dialect{Postgres}, "SELECT $a$ $A$; $a$; SELECT 2",
			[]string{"SELECT $a$ $A$; $a$", "SELECT 2"}},
		{"positional parameter", []Dialect{Postgres}, "SELECT $1; SELECT $2$x",
			[]string{"SELECT $1", "SELECT $2$x"}},
		{"dollar inside a word", []Dialect{Postgres}, "SELECT a$$; SELECT 2",
			[]string{"SELECT a$$", "SELECT 2"}},
		{"number before a dollar quote", []Dialect{Postgres}, "SELECT 1$$;$$; SELECT 2",
			[]string{"SELECT 1$$;$$", "SELECT 2"}},
		{"unterminated dollar quote", []Dialect{Postgres}, "SELECT $x$ a; b", []string{"SELECT $x$ a; b"}},
		{"dollars are plain on SQLite", []Dialect{SQLite}, "SELECT $$; $$", []string{"SELECT $$", "$$"}},
		{"PostgreSQL triggers have no body", []Dialect{Postgres},
			"CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW EXECUTE FUNCTION f(); SELECT 1",
			[]string{"CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW EXECUTE FUNCTION f()", "SELECT 1"}},
	}
	for _, c := range cases {
		for _, d := range c.dialects {
			t.Run(c.name+"/"+dialectName(d), func(t *testing.T) {
				got := texts(Split(c.in, d))
				if len(got) == 0 {
					got = nil
				}
				if !reflect.DeepEqual(got, c.want) {
					t.Errorf("Split(%q):\n got %q\nwant %q", c.in, got, c.want)
				}
			})
		}
	}
}

func TestSplitSQLiteTriggers(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"several body statements and a CASE",
			`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
CREATE TRIGGER trg_t AFTER INSERT ON t
BEGIN
  UPDATE t SET v = CASE WHEN NEW.v IS NULL THEN 'none; really' ELSE NEW.v END WHERE id = NEW.id;
  -- a comment; with a semicolon
  INSERT INTO log VALUES (CASE NEW.id WHEN 1 THEN 'one' END);
  SELECT RAISE(ABORT, 'no; way') WHERE NEW.id < 0;
END;
INSERT INTO t (v) VALUES ('x');
-- trailing remark
`,
			[]string{
				"CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)",
				`CREATE TRIGGER trg_t AFTER INSERT ON t
BEGIN
  UPDATE t SET v = CASE WHEN NEW.v IS NULL THEN 'none; really' ELSE NEW.v END WHERE id = NEW.id;
  -- a comment; with a semicolon
  INSERT INTO log VALUES (CASE NEW.id WHEN 1 THEN 'one' END);
  SELECT RAISE(ABORT, 'no; way') WHERE NEW.id < 0;
END`,
				"INSERT INTO t (v) VALUES ('x')",
			}},
		{"temp trigger with lower-case words and a leading comment",
			"-- guard\ncreate temporary trigger g before delete on t begin select 1; end ; select 2",
			[]string{"-- guard\ncreate temporary trigger g before delete on t begin select 1; end", "select 2"}},
		{"TEMP trigger",
			"CREATE TEMP TRIGGER g BEFORE DELETE ON t BEGIN SELECT 1; SELECT 2; END; SELECT 3",
			[]string{"CREATE TEMP TRIGGER g BEFORE DELETE ON t BEGIN SELECT 1; SELECT 2; END", "SELECT 3"}},
		{"comment between END and its semicolon",
			"CREATE TRIGGER g AFTER UPDATE ON t BEGIN SELECT 1; END /* done */ ; SELECT 2",
			[]string{"CREATE TRIGGER g AFTER UPDATE ON t BEGIN SELECT 1; END", "SELECT 2"}},
		{"END not after a semicolon does not end the body",
			"CREATE TRIGGER g AFTER UPDATE ON t BEGIN SELECT CASE WHEN 1 THEN 2 END; END; SELECT 3",
			[]string{"CREATE TRIGGER g AFTER UPDATE ON t BEGIN SELECT CASE WHEN 1 THEN 2 END; END", "SELECT 3"}},
		{"unterminated trigger runs to the end",
			"CREATE TRIGGER g AFTER UPDATE ON t BEGIN SELECT 1; SELECT 2; -- no end\n",
			[]string{"CREATE TRIGGER g AFTER UPDATE ON t BEGIN SELECT 1; SELECT 2;"}},
		{"other CREATE statements split normally",
			"CREATE TEMP TABLE x (a); CREATE INDEX i ON x (a); SELECT 'TRIGGER'; CREATE VIEW v AS SELECT 1",
			[]string{"CREATE TEMP TABLE x (a)", "CREATE INDEX i ON x (a)", "SELECT 'TRIGGER'", "CREATE VIEW v AS SELECT 1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := texts(Split(c.in, SQLite))
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Split(%q):\n got %q\nwant %q", c.in, got, c.want)
			}
		})
	}
}

func TestSplitPostgresFunctionBodies(t *testing.T) {
	in := `CREATE OR REPLACE FUNCTION etl_craft_guard() RETURNS trigger AS $$
BEGIN
  IF current_setting('etl_craft.actor', true) IS NULL THEN
    RAISE EXCEPTION 'metadata is written only by etl-craft; use a migration';
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION stamp() RETURNS trigger AS $fn$
BEGIN
  NEW.updated_at := now(); -- $$ is not the end here
  RETURN NEW;
END;
$fn$ LANGUAGE plpgsql;
`
	got := Split(in, Postgres)
	if len(got) != 2 {
		t.Fatalf("got %d statements, want 2: %q", len(got), texts(got))
	}
	for i, s := range got {
		if !strings.HasPrefix(s.Text, "CREATE OR REPLACE FUNCTION") || !strings.HasSuffix(s.Text, "LANGUAGE plpgsql") {
			t.Errorf("statement %d is cut wrongly: %q", i+1, s.Text)
		}
	}
	if want := []int{1, 10}; got[0].Line != want[0] || got[1].Line != want[1] {
		t.Errorf("lines = %d, %d; want %v", got[0].Line, got[1].Line, want)
	}
}

func TestSplitLines(t *testing.T) {
	in := "\n\nSELECT 1;  SELECT 2\n;\n\n  -- about three\n  SELECT\n 3;\r\n\r\nSELECT 'a\nb'; SELECT 5"
	want := []Statement{
		{Text: "SELECT 1", Line: 3},
		{Text: "SELECT 2", Line: 3},
		{Text: "-- about three\n  SELECT\n 3", Line: 6},
		{Text: "SELECT 'a\nb'", Line: 10},
		{Text: "SELECT 5", Line: 11},
	}
	for _, d := range both {
		if got := Split(in, d); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Split lines:\n got %+v\nwant %+v", dialectName(d), got, want)
		}
	}
}
