package catalog

import (
	"strings"

	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// Tokens splits SQL text into the tokens a snapshot compares, read by
// sqlscan with PostgreSQL's rules (the SQLite schema text compared holds
// none of the constructs where SQLite's differ): comments and whitespace
// are dropped; identifiers and keywords are unquoted ("x" and `x`) and
// lower-cased; string literals, numbers and parameters are kept verbatim,
// quotes included; a dollar quote of any tag becomes "$$" and its body is
// read as tokens too; runs of operator characters form one token; every
// other character is a token of its own.
func Tokens(sql string) []string {
	var out []string
	tokens := sqlscan.Scan(sql, sqlscan.Postgres)
	for i := 0; i < len(tokens); i++ {
		t := tokens[i]
		switch t.Kind {
		case sqlscan.Space, sqlscan.Comment:
		case sqlscan.Word:
			out = append(out, strings.ToLower(t.Text))
		case sqlscan.Identifier:
			q := t.Text[:1]
			inner := strings.TrimSuffix(t.Text[1:], q)
			out = append(out, strings.ToLower(strings.ReplaceAll(inner, q+q, q)))
		case sqlscan.DollarQuoted:
			tag := t.Tag()
			body := strings.TrimPrefix(t.Text, tag)
			if !t.Open {
				body = strings.TrimSuffix(body, tag)
			}
			out = append(out, "$$")
			out = append(out, Tokens(body)...)
			if !t.Open {
				out = append(out, "$$")
			}
		case sqlscan.Symbol:
			j := i + 1
			for isOperator(t) && j < len(tokens) && isOperator(tokens[j]) {
				j++
			}
			var run strings.Builder
			for _, u := range tokens[i:j] {
				run.WriteString(u.Text)
			}
			out = append(out, run.String())
			i = j - 1
		default:
			out = append(out, t.Text)
		}
	}
	return out
}

// Normalize returns the tokens of sql joined by single spaces.
func Normalize(sql string) string { return strings.Join(Tokens(sql), " ") }

// isOperator reports whether t is a character that forms operators.
func isOperator(t sqlscan.Token) bool {
	return t.Kind == sqlscan.Symbol && strings.Contains("+-*/<>=~!@#%^&|?:", t.Text)
}
