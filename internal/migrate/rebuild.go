package migrate

import (
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/catalog"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// rebuildSuffix ends the name of the new table a rebuild creates: a file
// that rebuilds X creates X_new, copies X into it, drops X and renames X_new.
const rebuildSuffix = "_new"

// rebuildPlan reads what a rebuild-metadata file does: every table it
// rebuilds (each CREATE TABLE <X>_new) with the columns of the new
// definition, and every index, trigger and view it drops on purpose.
func rebuildPlan(text string) engine.RebuildPlan {
	var plan engine.RebuildPlan
	for _, s := range sqlscan.Split(text, sqlscan.SQLite) {
		tokens := catalog.Tokens(s.Text)
		switch {
		case isCreateTable(tokens):
			if t, ok := rebuiltTable(tokens); ok {
				plan.Tables = append(plan.Tables, t)
			}
		case len(tokens) >= 3 && tokens[0] == "drop" && isSchemaObject(tokens[1]):
			name := tokens[2:]
			if len(name) >= 3 && name[0] == "if" && name[1] == "exists" {
				name = name[2:]
			}
			plan.Dropped = append(plan.Dropped, objectName(name))
		}
	}
	return plan
}

func isCreateTable(tokens []string) bool {
	return len(tokens) > 2 && tokens[0] == "create" && tokens[1] == "table"
}

func isSchemaObject(kind string) bool {
	return kind == "index" || kind == "trigger" || kind == "view"
}

// objectName returns the name that starts tokens, without a schema qualifier.
func objectName(tokens []string) string {
	if len(tokens) >= 3 && tokens[1] == "." {
		return tokens[2]
	}
	return tokens[0]
}

// rebuiltTable reads CREATE TABLE <X>_new (...): the table X and the name of
// each column definition. Items that start with a constraint keyword are
// table constraints, not columns.
func rebuiltTable(tokens []string) (engine.RebuiltTable, bool) {
	rest := tokens[2:]
	if len(rest) >= 3 && rest[0] == "if" && rest[1] == "not" && rest[2] == "exists" {
		rest = rest[3:]
	}
	if len(rest) == 0 {
		return engine.RebuiltTable{}, false
	}
	name := objectName(rest)
	if !strings.HasSuffix(name, rebuildSuffix) || len(name) == len(rebuildSuffix) {
		return engine.RebuiltTable{}, false
	}
	t := engine.RebuiltTable{Name: strings.ToUpper(strings.TrimSuffix(name, rebuildSuffix))}
	open := -1
	for i, tok := range rest {
		if tok == "(" {
			open = i
			break
		}
	}
	if open < 0 {
		return engine.RebuiltTable{}, false
	}
	depth, start := 1, true
	for _, tok := range rest[open+1:] {
		switch {
		case tok == "(":
			depth++
		case tok == ")":
			depth--
		case depth == 1 && tok == ",":
			start = true
			continue
		case depth == 1 && start:
			if !tableConstraintKeywords[tok] {
				t.Columns = append(t.Columns, strings.ToUpper(tok))
			}
		}
		start = false
	}
	return t, true
}

// tableConstraintKeywords start the items of a CREATE TABLE body that are
// not column definitions.
var tableConstraintKeywords = map[string]bool{
	"constraint": true, "check": true, "primary": true, "unique": true, "foreign": true,
}
