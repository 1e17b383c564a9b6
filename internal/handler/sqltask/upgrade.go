package sqltask

import (
	"context"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/suggest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// configuredTask is an active SQL or PYTHON task of an active pipeline with
// its active parameters.
type configuredTask struct {
	pipeline, task, handler string
	params                  map[string]string
}

// label names the task as PIPELINE.TASK.
func (c configuredTask) label() string { return c.pipeline + "." + c.task }

// configuredTasks reads every active SQL and PYTHON task of the active
// pipelines, ordered by pipeline and task code.
func configuredTasks(ctx context.Context, q engine.Querier) ([]configuredTask, error) {
	rows, err := q.QueryContext(ctx, `SELECT p.PIPELINE_CODE, t.TASK_CODE, t.HANDLER, tp.PARAMETER_NAME, tp.PARAMETER_VALUE
FROM CFG_TASKS t
JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y'
JOIN CFG_TASK_PARAMETERS tp ON tp.TASK_ID = t.TASK_ID AND tp.ACTIVE_FLAG = 'Y'
WHERE t.ACTIVE_FLAG = 'Y' AND t.HANDLER IN ($1, $2)
ORDER BY p.PIPELINE_CODE, t.TASK_CODE`, pipeline.HandlerSQL, pipeline.HandlerPython)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the configured tasks")
	}
	defer rows.Close()
	var out []configuredTask
	for rows.Next() {
		var c configuredTask
		var name string
		var v *string
		if err := rows.Scan(&c.pipeline, &c.task, &c.handler, &name, &v); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read the configured tasks")
		}
		if n := len(out); n == 0 || out[n-1].pipeline != c.pipeline || out[n-1].task != c.task {
			c.params = map[string]string{}
			out = append(out, c)
		}
		if v != nil {
			out[len(out)-1].params[name] = *v
		}
	}
	return out, exit.Wrap(exit.EngineDB, rows.Err(), "could not read the configured tasks")
}

// Upgrade is what upgrade-targets found, and did or would do, for one
// configured target.
type Upgrade struct {
	// Target is the TARGET_OBJECT as the first task writing it names it.
	Target string
	// Exists is false when the target is not in the warehouse yet.
	Exists bool
	// Added are the identity columns it lacked, as created.
	Added []string
	// SQL are the statements adding them.
	SQL []string
}

// UpgradeTargets adds the run-identity columns PIPELINE_ID,
// PIPELINE_RUN_ID and TASK_RUN_ID, nullable BIGINTs, to the existing
// targets of the configured SQL tasks (any action but DROP_TABLE) and,
// unless action names one, of the ingestion scripts. Historical rows keep
// NULL in them. action and target narrow the targets; dryRun only returns
// the statements. Each target is altered in a transaction of its own.
func UpgradeTargets(ctx context.Context, db *engine.DB, w warehouse.Warehouse, action, target string, dryRun bool) ([]Upgrade, error) {
	upgradable := without(Actions, DropTable)
	if action != "" && !slices.Contains(upgradable, action) {
		return nil, exit.Errorf(exit.Usage, "--action %s: use one of %s%s", action, strings.Join(upgradable, ", "), suggest.DidYouMean(action, upgradable))
	}
	wantKey := ""
	if target != "" {
		_, key, err := ParseTarget(w, target)
		if err != nil {
			return nil, err
		}
		wantKey = key
	}
	tasks, err := configuredTasks(ctx, db)
	if err != nil {
		return nil, err
	}
	var out []Upgrade
	seen := map[string]bool{}
	for _, c := range tasks {
		name := strings.TrimSpace(c.params[pTarget])
		act := strings.TrimSpace(c.params[pAction])
		switch {
		case name == "",
			c.handler == pipeline.HandlerSQL && (!slices.Contains(upgradable, act) || (action != "" && act != action)),
			c.handler == pipeline.HandlerPython && action != "":
			continue
		}
		table, key, err := ParseTarget(w, name)
		if err != nil || seen[key] || (wantKey != "" && key != wantKey) {
			continue // validate reports malformed names
		}
		seen[key] = true
		u, err := upgradeTarget(ctx, w, name, table, dryRun)
		if err != nil {
			return out, err
		}
		out = append(out, u)
	}
	return out, nil
}

// upgradeTarget adds the identity columns one target lacks.
func upgradeTarget(ctx context.Context, w warehouse.Warehouse, name string, table warehouse.Table, dryRun bool) (Upgrade, error) {
	u := Upgrade{Target: name}
	a, err := warehouse.ActionsOf(w)
	if err != nil {
		return u, err
	}
	tx, err := w.Begin(ctx, table)
	if err != nil {
		return u, err
	}
	defer tx.Rollback()
	cols, err := a.DescribeTable(ctx, tx, table)
	if err != nil {
		return u, exit.Wrap(exit.Handler, err, "could not read the columns of %s", name)
	}
	if u.Exists = len(cols) > 0; !u.Exists {
		return u, nil
	}
	for _, c := range missing(cols, IdentityColumns) {
		col := w.Fold(c)
		u.Added = append(u.Added, col)
		u.SQL = append(u.SQL, w.AddColumn(table, warehouse.Column{Name: col, Type: warehouse.BigInt}))
	}
	if dryRun || len(u.SQL) == 0 {
		return u, nil
	}
	for _, s := range u.SQL {
		if _, err := tx.Exec(ctx, s); err != nil {
			return u, exit.Wrap(exit.Handler, err, "adding the identity columns to %s failed (%s)", name, s)
		}
	}
	return u, exit.Wrap(exit.Handler, tx.Commit(), "adding the identity columns to %s failed", name)
}
