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
