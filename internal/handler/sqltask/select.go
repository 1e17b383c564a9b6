package sqltask

import (
	"errors"
	"strings"

	"github.com/etl-craft/etl-craft/internal/handler"
)

// Select is an SQL task's SELECT as a run sends it, and the table it writes.
type Select struct {
	// Target is TARGET_OBJECT as written.
	Target string
	// SQL is the one read-only statement, tokens substituted, without its
	// ;. It is "" for an action that takes no SELECT (DROP_TABLE).
	SQL string
}

// ReadSelect reads an SQL task's TARGET_OBJECT and SELECT with the tokens
// substituted as a run substitutes them, for the tools that read a task's
// SQL without running it (lineage). Problems of other parameters do not
// matter to it; a SELECT or target that cannot be read is an error naming
// every problem.
func ReadSelect(t *handler.Task) (Select, error) {
	s, failures, _ := readSpec(t)
	sel := Select{Target: s.target, SQL: s.source.text}
	if s.action == DropTable && len(s.parts) > 0 {
		return sel, nil
	}
	if sel.SQL == "" || len(s.parts) == 0 {
		return sel, errors.New(strings.Join(failures, "; "))
	}
	return sel, nil
}
