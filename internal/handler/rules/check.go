package rules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The target's columns that decide a rule's scope.
const (
	colPipelineRunID = "PIPELINE_RUN_ID"
	colActiveFlag    = "ACTIVE_FLAG"
)

// keysPerQuery bounds the standing keys one query checks again.
const keysPerQuery = 500

// checker runs one rule's queries against its target.
type checker struct {
	w      warehouse.Warehouse
	t      *handler.Task
	log    *slog.Logger
	r      rule
	table  string // the quoted target
	key    string // CAST(t.<key> AS VARCHAR)
	runCol string // the quoted PIPELINE_RUN_ID column, "" when the target has none
	active string // the quoted ACTIVE_FLAG column, "" when the target has none
	stmt   ruleSQL
}

// newChecker reads the rule's statement and the target's columns.
func newChecker(ctx context.Context, w warehouse.Warehouse, t *handler.Task, log *slog.Logger, r rule) (*checker, error) {
	stmt, problems := readSQL(r)
	if len(problems) > 0 {
		return nil, exit.Errorf(exit.Metadata, "%s", strings.Join(problems, "; "))
	}
	tbl, key, err := sqltask.ParseTarget(w, r.target)
	if err != nil {
		return nil, exit.Errorf(exit.Metadata, "business rule %s: TARGET_TABLE %s: %v", r.name, r.target, err)
	}
	cols, err := w.Columns(ctx, tbl.Schema, tbl.Name)
	if err != nil {
		return nil, exit.Wrap(exit.Handler, err, "business rule %s: could not read the columns of %s", r.name, r.target)
	}
	if len(cols) == 0 {
		return nil, &exit.Error{Code: exit.Handler, Err: &absentTarget{rule: r, key: key}}
	}
	find := func(name string) string {
		i := slices.IndexFunc(cols, func(c warehouse.ColumnInfo) bool { return strings.EqualFold(c.Name, name) })
		if i < 0 {
			return ""
		}
		return w.Quote(cols[i].Name)
	}
	keyCol := find(strings.TrimSpace(r.key))
	if keyCol == "" {
		return nil, exit.Errorf(exit.Metadata, "business rule %s: the TARGET_TABLE %s has no column %s (BUSINESS_RULE_KEY_COLUMN)", r.name, r.target, r.key)
	}
	return &checker{w: w, t: t, log: log, r: r, table: warehouse.Qualify(w, tbl), key: "CAST(t." + keyCol + " AS VARCHAR)",
		runCol: find(colPipelineRunID), active: find(colActiveFlag), stmt: stmt}, nil
}

// breaking returns the keys that break the rule: among the rows in scope
// (this run's, or every row when the task is forced) and among the rows of
// the standing keys, wherever they came from.
func (c *checker) breaking(ctx context.Context, standing map[string]struct{}) (map[string]bool, error) {
	tx, err := c.w.Begin(ctx)
	if err != nil {
		return nil, exit.Wrap(exit.Handler, err, "business rule %s: could not begin a warehouse transaction", c.r.name)
	}
	defer tx.Rollback()
	out := map[string]bool{}
	b := &warehouse.Binder{D: c.w}
	var scope []string
	if c.runCol != "" && !c.t.Force {
		scope = append(scope, "t."+c.runCol+" = "+b.BigInt(c.t.PipelineRunID))
	}
	if err := c.collect(ctx, tx, b, scope, out); err != nil {
		return nil, err
	}
	if len(scope) == 0 { // every row was checked
		return out, nil
	}
	left := slices.Sorted(maps.Keys(standing))
	left = slices.DeleteFunc(left, func(k string) bool { return out[k] })
	for chunk := range slices.Chunk(left, keysPerQuery) {
		b := &warehouse.Binder{D: c.w}
		marks := make([]string, len(chunk))
		for i, k := range chunk {
			marks[i] = b.Text(k)
		}
		if err := c.collect(ctx, tx, b, []string{c.key + " IN (" + strings.Join(marks, ", ") + ")"}, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// collect adds to out the keys of the target's rows that meet the
// conditions, are active versions and break the rule.
func (c *checker) collect(ctx context.Context, tx warehouse.Tx, b *warehouse.Binder, conds []string, out map[string]bool) error {
	q := c.query(b, conds)
	c.log.Debug("running a statement", "rule", c.r.name, "statement", q)
	rows, err := tx.Query(ctx, q, b.Args...)
	if err != nil {
		return c.failed(ctx, err)
	}
	defer rows.Close()
	for rows.Next() {
		var k *string
		if err := rows.Scan(&k); err != nil {
			return c.failed(ctx, err)
		}
		if k != nil {
			out[*k] = true
		}
	}
	if err := rows.Err(); err != nil {
		return c.failed(ctx, err)
	}
	return nil
}

// query is the SELECT of the keys of the target's rows that meet the
// conditions, are active versions and break the rule, its values bound in b.
func (c *checker) query(b *warehouse.Binder, conds []string) string {
	if c.active != "" {
		conds = append(conds, "t."+c.active+" = 'Y'")
	}
	conds = append(conds, "EXISTS (\n"+c.stmt.bound(b, c.t)+"\n)")
	return "SELECT DISTINCT " + c.key + " FROM " + c.table + " AS t\nWHERE " + strings.Join(conds, "\n  AND ")
}

// absentTarget is a rule whose TARGET_TABLE does not exist.
type absentTarget struct {
	rule rule
	key  string // the table, lower-case catalog.schema.table
}

func (e *absentTarget) Error() string {
	return fmt.Sprintf("business rule %s: the TARGET_TABLE %s does not exist", e.rule.name, e.rule.target)
}

// CheckWarehouse reviews the task's active rules against the warehouse for
// validate, beyond what Check finds in their text: each rule's target table
// must exist with its key column, and its SQL must run there, which the
// warehouse tells by preparing the rule's query on no row (WHERE 1 = 0, in a
// transaction rolled back). A target table that does not exist yet is no
// failure when a task that runs before this one creates it (t.Upstream):
// then what can be checked is (createdUpstream), and the rest is a note,
// one per target and creator, naming its rules. It reads no row and changes
// nothing.
func (h rulesHandler) CheckWarehouse(ctx context.Context, w warehouse.Warehouse, t *handler.Task) (failures, warnings, notes []string) {
	if h.db == nil {
		return nil, nil, nil
	}
	all, err := taskRules(ctx, h.db, t.PipelineID, t.TaskCode)
	if err != nil {
		return []string{err.Error()}, nil, nil
	}
	waiting := map[string][]string{} // a note's text: the rules it is about
	for _, wave := range wavesOf(all) {
		for _, r := range wave {
			if _, problems := readSQL(r); len(problems) > 0 || strings.TrimSpace(r.key) == "" {
				continue // Check reports them
			}
			problem, absent := dryRun(ctx, w, t, r)
			if absent != nil {
				var note string
				if problem, note = createdUpstream(ctx, w, t, absent); note != "" {
					if waiting[note] == nil {
						notes = append(notes, note)
					}
					waiting[note] = append(waiting[note], r.name)
				}
			}
			if problem != "" {
				failures = append(failures, problem)
			}
		}
	}
	for i, note := range notes {
		notes[i] = rulesNamed(waiting[note]) + ": " + note
	}
	return failures, nil, notes
}

// rulesNamed names one rule, "business rule A", or several, "business
// rules A, B and C".
func rulesNamed(names []string) string {
	if len(names) == 1 {
		return "business rule " + names[0]
	}
	return "business rules " + strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// createdUpstream checks a rule whose target table does not exist against
// the tasks that run before the rule's: one of them must create it (an SQL
// CREATE_TABLE or SETUP_TABLE, or a script that names it its
// TARGET_OBJECT), or the rule fails. When an SQL task creates it and the
// warehouse can describe that task's SELECT now, the rule's key column must
// be among the columns it will have. What is left to its first run (the
// key column when the SELECT cannot be described yet, the rule's SQL) is
// said in the note.
func createdUpstream(ctx context.Context, w warehouse.Warehouse, t *handler.Task, absent *absentTarget) (failure, note string) {
	r := absent.rule
	var creator *handler.Upstream
	for i, u := range t.Upstream {
		if _, creates := sqltask.Creates(u.Params); !sqltask.NamesTarget(u.Params[handler.ParamTargetObject], absent.key) ||
			(u.Handler == pipeline.HandlerSQL && !creates) {
			continue
		}
		if creator == nil || (creator.Handler != pipeline.HandlerSQL && u.Handler == pipeline.HandlerSQL) {
			creator = &t.Upstream[i]
		}
	}
	if creator == nil {
		return absent.Error() + ", and no task that runs before " + t.TaskCode + " creates it", ""
	}
	how := creator.Handler
	if creator.Handler == pipeline.HandlerSQL {
		how, _ = sqltask.Creates(creator.Params)
	}
	by := fmt.Sprintf("%s (%s), which runs before %s", creator.Name(), how, t.TaskCode)
	head := fmt.Sprintf("the TARGET_TABLE %s does not exist yet: %s, creates it", r.target, by)
	later := fmt.Sprintf("so the key column %s and the rule's SQL are checked at its first run", r.key)
	if creator.Handler != pipeline.HandlerSQL {
		return "", head + "; its columns are known once it has run, " + later
	}
	cols, err := sqltask.TargetColumns(ctx, w, &handler.Task{PipelineCode: creator.PipelineCode, TaskCode: creator.TaskCode,
		Params: creator.Params, ProjectDir: t.ProjectDir})
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		return "", fmt.Sprintf("%s; its SELECT cannot be described before the tables it reads exist (%s), %s", head, first, later)
	}
	if !slices.ContainsFunc(cols, func(c string) bool { return strings.EqualFold(c, strings.TrimSpace(r.key)) }) {
		return fmt.Sprintf("business rule %s: the TARGET_TABLE %s does not exist yet, and %s, creates it without the column %s (BUSINESS_RULE_KEY_COLUMN): it will have %s",
			r.name, r.target, by, r.key, strings.Join(cols, ", ")), ""
	}
	return "", fmt.Sprintf("%s with the key column %s; the rule's SQL is checked at its first run", head, r.key)
}

// dryRun prepares the rule's query on no row and returns what is wrong with
// the rule on the warehouse, or ""; absent is set when that is its target
// table, which does not exist.
func dryRun(ctx context.Context, w warehouse.Warehouse, t *handler.Task, r rule) (problem string, absent *absentTarget) {
	c, err := newChecker(ctx, w, t, slog.New(slog.DiscardHandler), r)
	if errors.As(err, &absent) {
		return err.Error(), absent
	}
	if err != nil {
		return err.Error(), nil
	}
	tx, err := w.Begin(ctx)
	if err != nil {
		return fmt.Sprintf("business rule %s: could not begin a warehouse transaction to check it: %v", r.name, err), nil
	}
	defer tx.Rollback()
	b := &warehouse.Binder{D: w}
	rows, err := tx.Query(ctx, c.query(b, []string{"1 = 0"}), b.Args...)
	if err == nil {
		err = rows.Err()
		rows.Close()
	}
	if err != nil {
		return fmt.Sprintf("business rule %s: BUSINESS_RULE_SQL does not run against %s: %v", r.name, r.target, err), nil
	}
	return "", nil
}

// failed names the rule of a failed query; when the attempt's context
// ended, the error says so.
func (c *checker) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return exit.Wrap(exit.Handler, err, "business rule %s failed on %s", c.r.name, c.r.target)
}
