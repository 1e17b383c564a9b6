package sqlscan

import (
	"reflect"
	"testing"
)

// kinds returns "kind:text" for each token of sql other than whitespace.
func kinds(sql string, d Dialect) []string {
	names := map[Kind]string{Comment: "comment", Word: "word", Number: "number", String: "string",
		Identifier: "ident", DollarQuoted: "dollar", Param: "param", Substitution: "subst", Symbol: "symbol"}
	var out []string
	for _, t := range Scan(sql, d) {
		if t.Kind != Space {
			out = append(out, names[t.Kind]+":"+t.Text)
		}
	}
	return out
}

func TestScanKinds(t *testing.T) {
	cases := []struct {
		d    Dialect
		in   string
		want []string
	}{
		{SQLite, "SELECT a1$, 1.5e3, 'it''s', \"q\"\"x\", `b`, [c d] -- end",
			[]string{"word:SELECT", "word:a1$", "symbol:,", "number:1.5e3", "symbol:,", "string:'it''s'", "symbol:,",
				`ident:"q""x"`, "symbol:,", "ident:`b`", "symbol:,", "ident:[c d]", "comment:-- end"}},
		{SQLite, "E'\\' $$ /* a /* b */ c */", []string{"word:E", `string:'\'`, "symbol:$", "symbol:$",
			"comment:/* a /* b */", "word:c", "symbol:*", "symbol:/"}},
		{Postgres, "E'\\'' ARRAY[1] /* a /* b */ c */ $1 $a$ x $b$ $a$ $$ y $$ $$run_date",
			[]string{`string:E'\''`, "word:ARRAY", "symbol:[", "number:1", "symbol:]", "comment:/* a /* b */ c */",
				"param:$1", "dollar:$a$ x $b$ $a$", "dollar:$$ y $$", "dollar:$$run_date"}},
		{Task, "SELECT $$run_date, $$x1$$ y $$, $1 -- c\r$$pipeline_id",
			[]string{"word:SELECT", "subst:$$run_date", "symbol:,", "subst:$$x1", "dollar:$$ y $$", "symbol:,",
				"param:$1", "comment:-- c", "subst:$$pipeline_id"}},
	}
	for _, c := range cases {
		if got := kinds(c.in, c.d); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Scan(%q, %d):\n got %q\nwant %q", c.in, c.d, got, c.want)
		}
	}
}

// A construct the text ends inside is one open token running to the end;
// a line comment at the end is closed by it.
func TestScanOpen(t *testing.T) {
	for _, c := range []struct {
		d    Dialect
		in   string
		kind Kind
		open bool
	}{
		{Postgres, "SELECT 'a", String, true},
		{Postgres, "SELECT E'a\\'", String, true},
		{Postgres, `SELECT "a""`, Identifier, true},
		{SQLite, "SELECT [a", Identifier, true},
		{Postgres, "SELECT /* a /* b */", Comment, true},
		{SQLite, "SELECT /* a /* b */", Comment, false},
		{Postgres, "SELECT $x$ a $x", DollarQuoted, true},
		{Postgres, "SELECT 1 -- a", Comment, false},
		{Postgres, "SELECT 'a'", String, false},
	} {
		tokens := Scan(c.in, c.d)
		last := tokens[len(tokens)-1]
		if last.Kind != c.kind || last.Open != c.open || last.End() != len(c.in) {
			t.Errorf("Scan(%q): last token %+v, want kind %d open %t", c.in, last, c.kind, c.open)
		}
	}
	if tag := Scan("$body$ x $body$", Postgres)[0].Tag(); tag != "$body$" {
		t.Errorf("tag %q", tag)
	}
}

func TestScanLines(t *testing.T) {
	var got []int
	for _, tok := range Scan("a\n'b\nc' d\r\n\n-- e\n/* f\n*/ g", SQLite) {
		if tok.Kind != Space {
			got = append(got, tok.Line)
		}
	}
	if want := []int{1, 2, 3, 5, 6, 7}; !reflect.DeepEqual(got, want) {
		t.Errorf("lines %v, want %v", got, want)
	}
}
