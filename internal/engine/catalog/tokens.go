package catalog

import "strings"

// Tokens splits SQL text into the tokens a snapshot compares: comments and
// whitespace are dropped; identifiers and keywords are unquoted ("x" and
// `x`; brackets are PostgreSQL array punctuation) and lower-cased; string literals are kept verbatim, quotes included;
// a PostgreSQL dollar quote of any tag becomes "$$" and its body is read as
// tokens too; runs of operator characters form one token; every other
// character is a token of its own.
func Tokens(sql string) []string {
	var out []string
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return out
			}
			i += j + 1
		case strings.HasPrefix(sql[i:], "/*"):
			j := strings.Index(sql[i+2:], "*/")
			if j < 0 {
				return out
			}
			i += j + 4
		case c == '\'':
			j := quoteEnd(sql, i, '\'')
			out = append(out, sql[i:j])
			i = j
		case c == '"' || c == '`':
			j := quoteEnd(sql, i, c)
			inner := strings.TrimSuffix(sql[i+1:j], string(c))
			out = append(out, strings.ToLower(strings.ReplaceAll(inner, string([]byte{c, c}), string(c))))
			i = j
		case c == '$' && dollarTagEnd(sql, i) > 0:
			out = append(out, "$$")
			i = dollarTagEnd(sql, i)
		case isWordStart(c):
			j := i + 1
			for j < len(sql) && isWordPart(sql[j]) {
				j++
			}
			out = append(out, strings.ToLower(sql[i:j]))
			i = j
		case c >= '0' && c <= '9' || c == '$':
			j := i + 1
			for j < len(sql) && (sql[j] >= '0' && sql[j] <= '9' || sql[j] == '.') {
				j++
			}
			out = append(out, sql[i:j])
			i = j
		case strings.IndexByte(operatorChars, c) >= 0:
			j := i + 1
			for j < len(sql) && strings.IndexByte(operatorChars, sql[j]) >= 0 && !strings.HasPrefix(sql[j:], "--") {
				j++
			}
			out = append(out, sql[i:j])
			i = j
		default:
			out = append(out, string(c))
			i++
		}
	}
	return out
}

// Normalize returns the tokens of sql joined by single spaces.
func Normalize(sql string) string { return strings.Join(Tokens(sql), " ") }

const operatorChars = "+-*/<>=~!@#%^&|?:"

func isWordStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func isWordPart(c byte) bool { return isWordStart(c) || c >= '0' && c <= '9' || c == '$' }

// quoteEnd returns the index just past the quoted text opening at i, where
// a doubled quote character stands for itself.
func quoteEnd(s string, i int, q byte) int {
	for j := i + 1; j < len(s); j++ {
		if s[j] != q {
			continue
		}
		if j+1 < len(s) && s[j+1] == q {
			j++
			continue
		}
		return j + 1
	}
	return len(s)
}

// dollarTagEnd returns the index just past a dollar-quote tag ($$ or $tag$)
// opening at i, or 0 when there is none ($1 is a parameter, not a tag).
func dollarTagEnd(s string, i int) int {
	j := i + 1
	for j < len(s) && (isWordStart(s[j]) || j > i+1 && s[j] >= '0' && s[j] <= '9') {
		j++
	}
	if j < len(s) && s[j] == '$' {
		return j + 1
	}
	return 0
}
