package docsite

import (
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// Edge kinds: a column copied as it is, a column computed by an expression,
// and a table-level link (the fallback, and scripts' SOURCE_OBJECT).
const (
	KindCopy       = "copy"
	KindExpression = "expression"
	KindTable      = "table"
)

// Lineage levels: column edges from a tracer, or table edges only.
const (
	LevelColumn = "column"
	LevelTable  = "table"
)

// Lineage is what feeds each table: the edges from a source to a target,
// and, per task, whether it could be traced.
type Lineage struct {
	// Level is LevelColumn when the edges name columns, LevelTable when they
	// link tables only (TableLevel).
	Level string
	Edges []Edge
	// Tasks are the SQL and script tasks, in pipeline and task order.
	Tasks []TaskTrace
}

// Edge is one link: Target ← Source, through Task. A table-level edge has
// empty columns; a target column fed by no source (a constant, COUNT(*))
// has an empty Source.Table.
type Edge struct {
	Task   string // PIPE.task
	Target ColumnRef
	Source ColumnRef
	// Kind is KindCopy, KindExpression or KindTable; Expression is the
	// expression's text for KindExpression.
	Kind       string
	Expression string
}

// ColumnRef is a table (lower-case schema.table) and one of its columns, ""
// for the table itself.
type ColumnRef struct{ Table, Column string }

// TaskTrace is one task's lineage: its target and the tables it reads, or
// why it could not be traced.
type TaskTrace struct {
	Task    string // PIPE.task
	Target  string
	Sources []string
	Traced  bool
	Reason  string // why not traced
}

// Untraced returns the tasks that could not be traced, in order.
func (l *Lineage) Untraced() []TaskTrace {
	var out []TaskTrace
	for _, t := range l.Tasks {
		if !t.Traced {
			out = append(out, t)
		}
	}
	return out
}

// TableName is a table as lineage joins tables: lower case, unquoted, with
// the warehouse's default database (catalog) left off.
func TableName(name, defaultDatabase string) string {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(name)), ".")
	for i, p := range parts {
		parts[i] = strings.Trim(p, "\"`[]")
	}
	if len(parts) == 3 && defaultDatabase != "" && parts[0] == strings.ToLower(defaultDatabase) {
		parts = parts[1:]
	}
	return strings.Join(parts, ".")
}

// TableLevel is the fallback lineage, built from the Engine DB alone: each
// SQL task links the tables its SELECT reads (found from its tokens, CTE
// names left out) to its TARGET_OBJECT, and each script its SOURCE_OBJECT to
// its TARGET_OBJECT. It names no column. A SQL task whose SELECT cannot be
// read, or whose tokens are not one query, is not traced.
func TableLevel(c *Catalog, defaultDatabase string) *Lineage {
	l := &Lineage{Level: LevelTable}
	for _, p := range c.Pipelines {
		for _, t := range p.Tasks {
			target := TableName(t.Params["TARGET_OBJECT"], defaultDatabase)
			var sources []string
			switch t.Handler {
			case pipeline.HandlerSQL:
				tr := TaskTrace{Task: t.Name(), Target: target}
				switch tables, reason := readTables(t, defaultDatabase); {
				case target == "":
					tr.Reason = "TARGET_OBJECT is not set"
				case reason != "":
					tr.Reason = reason
				default:
					tr.Traced, tr.Sources, sources = true, tables, tables
				}
				l.Tasks = append(l.Tasks, tr)
			case pipeline.HandlerPython:
				if src := TableName(t.Params["SOURCE_OBJECT"], defaultDatabase); src != "" {
					sources = []string{src}
				}
				l.Tasks = append(l.Tasks, TaskTrace{Task: t.Name(), Target: target, Sources: sources, Traced: true})
			}
			if target == "" {
				continue
			}
			for _, s := range sources {
				l.Edges = append(l.Edges, Edge{Task: t.Name(), Target: ColumnRef{Table: target}, Source: ColumnRef{Table: s}, Kind: KindTable})
			}
		}
	}
	return l
}

// readTables returns the tables a SQL task's SELECT reads, or why they
// cannot be told.
func readTables(t *Task, defaultDatabase string) ([]string, string) {
	if t.SQLError != "" {
		return nil, t.SQLError
	}
	var toks []sqlscan.Token
	for _, tok := range sqlscan.Scan(t.SQL, sqlscan.Task) {
		if tok.Open {
			return nil, "its SELECT has an unclosed quote or comment"
		}
		if tok.Kind != sqlscan.Space && tok.Kind != sqlscan.Comment {
			toks = append(toks, tok)
		}
	}
	for len(toks) > 0 && toks[len(toks)-1].Text == ";" {
		toks = toks[:len(toks)-1]
	}
	if len(toks) == 0 {
		return nil, "its SELECT is empty"
	}
	if first := strings.ToUpper(toks[0].Text); first != "SELECT" && first != "WITH" && first != "(" {
		return nil, "its SQL is not a SELECT: it starts with " + toks[0].Text
	}
	depth := 0
	for _, tok := range toks {
		switch tok.Text {
		case "(":
			depth++
		case ")":
			depth--
		case ";":
			if depth == 0 {
				return nil, "its SQL holds more than one statement"
			}
		}
		if depth < 0 {
			return nil, "its SELECT closes a parenthesis it never opened"
		}
	}
	if depth != 0 {
		return nil, "its SELECT leaves a parenthesis open"
	}
	// A CTE is name [(columns)] AS ( after WITH, RECURSIVE or a comma.
	ctes := map[string]bool{}
	for i := 1; i+2 < len(toks); i++ {
		if prev := strings.ToUpper(toks[i-1].Text); (prev != "WITH" && prev != "RECURSIVE" && prev != ",") || !isName(toks[i]) {
			continue
		}
		j := i + 1
		if toks[j].Text == "(" {
			for j < len(toks) && toks[j].Text != ")" {
				j++
			}
			j++
		}
		if j+1 < len(toks) && strings.EqualFold(toks[j].Text, "AS") && toks[j+1].Text == "(" {
			ctes[TableName(toks[i].Text, "")] = true
		}
	}
	var tables []string
	for i := 0; i < len(toks); i++ {
		if kw := strings.ToUpper(toks[i].Text); toks[i].Kind != sqlscan.Word || (kw != "FROM" && kw != "JOIN") {
			continue
		}
		for j := i + 1; j < len(toks); {
			for j < len(toks) && (strings.EqualFold(toks[j].Text, "LATERAL") || strings.EqualFold(toks[j].Text, "ONLY")) {
				j++
			}
			name, next := qualifiedName(toks, j)
			if name != "" && (next >= len(toks) || toks[next].Text != "(") {
				if n := TableName(name, defaultDatabase); !ctes[n] && !slices.Contains(tables, n) {
					tables = append(tables, n)
				}
			}
			// A comma at the FROM's own level lists another table.
			j = skipToCommaOrEnd(toks, next)
			if j >= len(toks) || toks[j].Text != "," {
				break
			}
			j++
		}
	}
	slices.Sort(tables)
	return tables, ""
}

// isName reports whether the token can name a table or a CTE.
func isName(t sqlscan.Token) bool { return t.Kind == sqlscan.Word || t.Kind == sqlscan.Identifier }

// qualifiedName reads name(.name)* from toks[i], returning it and the index
// after it; "" when toks[i] is no name.
func qualifiedName(toks []sqlscan.Token, i int) (string, int) {
	if i >= len(toks) || !isName(toks[i]) || keywords[strings.ToUpper(toks[i].Text)] {
		return "", i
	}
	name := toks[i].Text
	i++
	for i+1 < len(toks) && toks[i].Text == "." && isName(toks[i+1]) {
		name += "." + toks[i+1].Text
		i += 2
	}
	return name, i
}

// skipToCommaOrEnd moves past a table reference's alias, join condition or
// parenthesised part to the next comma at the same level, stopping at a
// keyword that ends the FROM list or at a closing parenthesis of an outer
// level.
func skipToCommaOrEnd(toks []sqlscan.Token, i int) int {
	depth := 0
	for ; i < len(toks); i++ {
		switch t := toks[i].Text; {
		case t == "(":
			depth++
		case t == ")":
			if depth == 0 {
				return i
			}
			depth--
		case depth > 0:
		case t == ",":
			return i
		case toks[i].Kind == sqlscan.Word && fromEnds[strings.ToUpper(t)]:
			return i
		}
	}
	return i
}

// fromEnds are the keywords after which a FROM list has ended.
var fromEnds = map[string]bool{
	"WHERE": true, "GROUP": true, "HAVING": true, "ORDER": true, "LIMIT": true, "UNION": true,
	"EXCEPT": true, "INTERSECT": true, "JOIN": true, "ON": true, "USING": true, "WINDOW": true,
	"QUALIFY": true, "INNER": true, "LEFT": true, "RIGHT": true, "FULL": true, "CROSS": true,
	"NATURAL": true, "SELECT": true, "OFFSET": true, "FETCH": true,
}

// keywords are words that follow FROM or JOIN without naming a table.
var keywords = map[string]bool{"SELECT": true, "VALUES": true, "UNNEST": true}
