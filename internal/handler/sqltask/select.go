package sqltask

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/warehouse"
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

// Creates returns an SQL task's action and whether it creates its target
// when it does not exist (CREATE_TABLE, SETUP_TABLE), so that a task after
// it may find the table before it ever existed.
func Creates(params map[string]string) (action string, ok bool) {
	action = strings.ToUpper(strings.TrimSpace(params[pAction]))
	return action, action == CreateTable || action == SetupTable
}

// TargetColumns returns the columns an SQL task that creates its target
// (Creates) gives it, as far as the warehouse can tell before the task ever
// ran: the SELECT's own columns, which the warehouse describes by planning
// the SELECT on no row in a transaction rolled back (it reads and changes
// nothing), then the engine columns its action adds (SETUP_TABLE without
// SETUP_FOR: every engine column its pipeline's writer might add). The
// error says why the SELECT cannot be described, such as a table it reads
// that does not exist yet.
func TargetColumns(ctx context.Context, w warehouse.Warehouse, t *handler.Task) ([]string, error) {
	sel, err := ReadSelect(t)
	if err != nil {
		return nil, err
	}
	tx, err := w.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	cols, err := columnNames(ctx, tx, shapeQuery(sel.SQL))
	if err != nil {
		return nil, err
	}
	action := strings.ToUpper(strings.TrimSpace(t.Params[pAction]))
	engine := append(auditColumns(action), colRowID)
	if action == SetupTable {
		engine = engineColumns
		if writer := strings.ToUpper(strings.TrimSpace(t.Params[pSetupFor])); writer != "" {
			engine = append(auditColumns(writer), colRowID)
		}
	}
	for _, c := range engine {
		if !slices.ContainsFunc(cols, func(have string) bool { return strings.EqualFold(have, c) }) {
			cols = append(cols, w.Fold(c))
		}
	}
	return cols, nil
}
