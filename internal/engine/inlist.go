package engine

import (
	"strconv"
	"strings"
)

// InListMax bounds the values one IN list binds, well under the
// bind-parameter limits of both dialects (SQLite 32,766, PostgreSQL 65,535).
const InListMax = 500

// InList appends values to args and returns them with the placeholders that
// bind them, "$4, $5, $6" after three arguments, for an IN (...) list.
func InList[T any](args []any, values []T) ([]any, string) {
	marks := make([]string, len(values))
	for i, v := range values {
		args = append(args, v)
		marks[i] = "$" + strconv.Itoa(len(args))
	}
	return args, strings.Join(marks, ", ")
}

// InIDs appends ids to args as one argument and returns the condition that
// col is one of them. Unlike InList, the statement's text is the same
// whatever the number of ids, so that it is prepared once, and it binds
// one parameter however many there are.
func (db *DB) InIDs(args []any, col string, ids []int64) ([]any, string) {
	return append(args, db.d.idsArg(ids)), db.d.inIDs(col, len(args)+1)
}
