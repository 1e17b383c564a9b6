package migrate

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// codeRule is the rule for pipeline and task codes: an ASCII letter, then
// letters, digits and underscores, at most 128 characters.
var codeRule = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,127}$`)

// ValidCode reports whether a pipeline or task code follows the rule.
func ValidCode(code string) bool { return codeRule.MatchString(code) }

// checkCodes lists every pipeline and task code, active or not, that breaks
// the rule, and refuses to go on while there is one.
func checkCodes(ctx context.Context, db *engine.DB) error {
	var bad []string
	for _, c := range []struct{ table, id, code string }{
		{"CFG_PIPELINES", "PIPELINE_ID", "PIPELINE_CODE"},
		{"CFG_TASKS", "TASK_ID", "TASK_CODE"},
	} {
		rows, err := db.QueryContext(ctx, fmt.Sprintf("SELECT %s, %s FROM %s ORDER BY %s", c.id, c.code, c.table, c.id))
		if err != nil {
			return exit.Wrap(exit.Migration, err, "could not read %s to check its codes", c.table)
		}
		for rows.Next() {
			var id int64
			var code string
			if err := rows.Scan(&id, &code); err != nil {
				rows.Close()
				return exit.Wrap(exit.Migration, err, "could not read %s", c.table)
			}
			if !ValidCode(code) {
				bad = append(bad, fmt.Sprintf("%s.%s %q (%s=%d)", c.table, c.code, code, c.id, id))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return exit.Wrap(exit.Migration, err, "could not read %s", c.table)
		}
	}
	if len(bad) > 0 {
		return exit.Errorf(exit.Migration,
			"nothing was applied: %d pipeline or task code(s) break the code rule (an ASCII letter, then letters, digits and underscores, at most 128 characters), inactive rows included:\n  %s\nrename them with UPDATE statements in the sqlite3 shell or psql (an Engine DB that still needs this check has no write guards yet), then run `etl-craft migrate` again",
			len(bad), strings.Join(bad, "\n  "))
	}
	return nil
}
