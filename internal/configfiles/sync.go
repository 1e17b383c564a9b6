package configfiles

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/report"
)

// The operations of a change.
const (
	OpInsert     = "insert"
	OpUpdate     = "update"
	OpReactivate = "reactivate"
	OpRetire     = "retire"
)

// Change is one row a sync inserts, updates, reactivates or retires.
type Change struct {
	Op   string
	File string
	// Row is the row's merge key, its parts joined by slashes.
	Row string
	// Details name the values that change, as COLUMN: old -> new.
	Details []string
}

// SyncRequest says how to sync a Set into the Engine DB.
type SyncRequest struct {
	// Apply commits the changes when validation passes; otherwise (plan)
	// they are rolled back.
	Apply bool
	// Validate is the validation run inside the transaction on the result;
	// its PipelineCode is ignored.
	Validate inspect.ValidateRequest
}

// Result is what a sync changed (or would change) and what validation found.
type Result struct {
	Changes    []Change
	Validation report.Validation
	// Applied reports whether the changes were committed.
	Applied bool
}

// Label is the AUD_METADATA_CHANGES.MIGRATION value of a sync's changes:
// config@ and the first 12 hex digits of the revision.
func (s *Set) Label() string { return "config@" + s.Short() }

// errRollback ends a transaction that must not commit.
var errRollback = errors.New("rolled back")

// Sync merges the files into the Engine DB in one transaction: by key,
// inserting new active rows, updating changed ones in place (ids kept),
// reactivating retired rows the files make active, retiring rows the files
// retire, and retiring every active row no file holds. It then validates
// the result inside the transaction, and commits only when req.Apply is set
// and nothing failed. The changes are captured in AUD_METADATA_CHANGES with
// the set's Label. Apply holds the MIGRATE lock, as migrate does. An Engine DB without the CFG_ tables is exit 12; a row
// the database refuses is exit 25, naming its file and line.
func Sync(ctx context.Context, db *engine.DB, s *Set, req SyncRequest) (Result, error) {
	if err := Ready(ctx, db); err != nil {
		return Result{}, err
	}
	if req.Apply {
		held, err := lock.Acquire(ctx, db, lock.Migrate, 0)
		if err != nil {
			return Result{}, err
		}
		defer held.Release()
	}
	var res Result
	err := db.Tx(engine.WithMigration(ctx, s.Label()), func(tx *engine.Tx) error {
		for i := range s.tables {
			changes, err := merge(ctx, tx, &s.tables[i])
			if err != nil {
				return err
			}
			res.Changes = append(res.Changes, changes...)
		}
		vreq := req.Validate
		vreq.PipelineCode = ""
		v, err := inspect.Validate(ctx, tx, vreq)
		if err != nil {
			return err
		}
		res.Validation = v
		if !req.Apply || v.Failed > 0 {
			return errRollback
		}
		return nil
	})
	if errors.Is(err, errRollback) {
		return res, nil
	}
	if err != nil {
		return Result{}, err
	}
	res.Applied = true
	return res, nil
}

// Ready checks that the Engine DB holds the CFG_ tables (exit 12 when not).
func Ready(ctx context.Context, db *engine.DB) error {
	tables, err := db.Tables(ctx)
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not list the Engine DB's tables")
	}
	have := map[string]bool{}
	for _, t := range tables {
		have[strings.ToUpper(t)] = true
	}
	for _, f := range files {
		if !have[f.table] {
			return exit.Errorf(exit.EngineDB, "the Engine DB (%s, schema %s) has no %s table: run `etl-craft setup` first",
				db.Kind().Label(), db.Schema(), f.table)
		}
	}
	return nil
}

// dbRow is a row of a CFG_ table as the files spell it.
type dbRow struct {
	id     int64
	values map[string]string
}

// currentRows reads the representative row of every key of the file's
// table, and the keys in their order.
func currentRows(ctx context.Context, q engine.Querier, f *file) (map[string]dbRow, []string, error) {
	rows, err := q.QueryContext(ctx, f.current)
	if err != nil {
		return nil, nil, exit.Wrap(exit.EngineDB, err, "could not read %s", f.table)
	}
	defer rows.Close()
	cols := f.header()
	out := map[string]dbRow{}
	var order []string
	for rows.Next() {
		id := int64(0)
		vals := make([]sql.NullString, len(cols))
		dest := []any{&id}
		for i := range vals {
			dest = append(dest, &vals[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, exit.Wrap(exit.EngineDB, err, "could not read %s", f.table)
		}
		r := dbRow{id: id, values: map[string]string{}}
		for i, c := range cols {
			r.values[c] = vals[i].String
		}
		k := fileRow{values: r.values}.key(f)
		if _, ok := out[k]; !ok { // the first row of a key represents it
			out[k] = r
			order = append(order, k)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, exit.Wrap(exit.EngineDB, err, "could not read %s", f.table)
	}
	return out, order, nil
}

// merge applies one file's rows and retires the active rows it does not hold.
func merge(ctx context.Context, tx *engine.Tx, t *fileRows) ([]Change, error) {
	f := t.f
	current, order, err := currentRows(ctx, tx, f)
	if err != nil {
		return nil, err
	}
	var changes []Change
	inFile := map[string]bool{}
	for _, row := range t.rows {
		k := row.key(f)
		inFile[k] = true
		cur, exists := current[k]
		active := row.values[colActive] == "Y"
		var op string
		var details []string
		switch {
		case !exists && !active:
			continue // a retired row that was never created
		case !exists:
			op = OpInsert
		case cur.values[colActive] == "N" && !active:
			continue // stays retired
		default:
			details = differences(f, cur.values, row.values)
			switch {
			case cur.values[colActive] == "N":
				op = OpReactivate
			case !active:
				op = OpRetire
			case len(details) > 0:
				op = OpUpdate
			default:
				continue
			}
		}
		if err := write(ctx, tx, t, row, cur, op); err != nil {
			return nil, err
		}
		changes = append(changes, Change{Op: op, File: f.name, Row: k, Details: details})
	}
	for _, k := range order {
		if cur := current[k]; !inFile[k] && cur.values[colActive] == "Y" {
			if err := retire(ctx, tx, f, cur.id); err != nil {
				return nil, exit.Wrap(exit.EngineDB, err, "could not retire %s %s", f.table, k)
			}
			changes = append(changes, Change{Op: OpRetire, File: f.name, Row: k, Details: []string{"not in the files"}})
		}
	}
	return changes, nil
}

// differences names the value columns (ACTIVE_FLAG aside) whose file value
// differs from the Engine DB's, as COLUMN: old -> new.
func differences(f *file, cur, next map[string]string) []string {
	var out []string
	for _, c := range f.values {
		if c != colActive && !same(c, cur[c], next[c]) {
			out = append(out, fmt.Sprintf("%s: %s -> %s", c, shown(cur[c]), shown(next[c])))
		}
	}
	return out
}

// shown writes a value in a change's details: quoted, or NULL when empty.
func shown(v string) string {
	if v == "" {
		return "NULL"
	}
	return strconv.Quote(v)
}

// same reports whether two spellings of a column's value are equal: as
// numbers for numeric columns, as JSON values for JSON columns.
func same(column, a, b string) bool {
	if a == b {
		return true
	}
	if a == "" || b == "" {
		return false
	}
	switch {
	case numericColumns[column] || integerColumns[column]:
		x, errx := strconv.ParseFloat(a, 64)
		y, erry := strconv.ParseFloat(b, 64)
		return errx == nil && erry == nil && x == y
	case jsonColumns[column]:
		var x, y any
		return json.Unmarshal([]byte(a), &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
	}
	return false
}

// write inserts the row, or updates the existing row cur in place. The
// table and column names are this package's constants (unquoted, so that
// PostgreSQL folds them as its catalog spells them); values are bound.
func write(ctx context.Context, tx *engine.Tx, t *fileRows, row fileRow, cur dbRow, op string) error {
	f := t.f
	var cols []string
	var args []any
	add := func(c string, v any) { cols = append(cols, c); args = append(args, v) }
	if op == OpInsert {
		for _, c := range f.direct {
			add(c, row.values[c])
		}
		for _, r := range f.refs {
			id, err := resolve(ctx, tx, r, row.values)
			if err != nil {
				return rowError(t, row, r, err)
			}
			add(r.column, id)
		}
	}
	for _, c := range f.values {
		add(c, value(c, row.values[c]))
	}
	params := make([]string, len(cols))
	for i, c := range cols {
		params[i] = fmt.Sprintf("$%d", i+1)
		if jsonColumns[c] {
			params[i] = tx.JSONParam(i + 1)
		}
	}
	var query string
	if op == OpInsert {
		query = fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", f.table, strings.Join(cols, ", "), strings.Join(params, ", "))
	} else {
		sets := make([]string, len(cols))
		for i, c := range cols {
			sets[i] = c + " = " + params[i]
		}
		args = append(args, cur.id)
		query = fmt.Sprintf("UPDATE %s SET %s WHERE %s = $%d", f.table, strings.Join(sets, ", "), f.id, len(args))
	}
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return exit.Wrap(exit.ConfigFiles, err, "%s:%d: the Engine DB refused the row (%s %s)", f.name, row.line, op, row.key(f))
	}
	return nil
}

// value is the argument a file value is bound as: NULL when empty, an
// integer for the integer columns, else the text.
func value(column, v string) any {
	if v == "" {
		return nil
	}
	if integerColumns[column] {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return v
}

// errNoParent is a code that names no row of the Engine DB.
var errNoParent = errors.New("no such row")

// resolve returns the id a ref's codes name: the active pipeline (or task)
// with the code, else its newest retired row.
func resolve(ctx context.Context, tx *engine.Tx, r ref, values map[string]string) (int64, error) {
	var id int64
	var err error
	if r.task == "" {
		err = tx.QueryRowContext(ctx, `SELECT x.PIPELINE_ID FROM CFG_PIPELINES x WHERE x.PIPELINE_CODE = $1
			ORDER BY `+representative+`, x.PIPELINE_ID DESC LIMIT 1`, values[r.pipeline]).Scan(&id)
	} else {
		err = tx.QueryRowContext(ctx, `SELECT x.TASK_ID FROM CFG_TASKS x
			JOIN CFG_PIPELINES p ON p.PIPELINE_ID = x.PIPELINE_ID
			WHERE p.PIPELINE_CODE = $1 AND x.TASK_CODE = $2
			ORDER BY `+representative+`, CASE WHEN p.ACTIVE_FLAG = 'Y' THEN 0 ELSE 1 END, x.TASK_ID DESC LIMIT 1`,
			values[r.pipeline], values[r.task]).Scan(&id)
	}
	if engine.IsNoRows(err) {
		return 0, errNoParent
	}
	return id, err
}

// rowError is the error of a ref that could not be resolved.
func rowError(t *fileRows, row fileRow, r ref, err error) error {
	column, what := r.pipeline, "pipeline "+row.values[r.pipeline]
	if r.task != "" {
		column, what = r.task, "task "+row.values[r.pipeline]+"."+row.values[r.task]
	}
	if errors.Is(err, errNoParent) {
		return exit.Errorf(exit.ConfigFiles, "%s:%d:%d: %s has no row in the Engine DB: it is retired in the files and was never created",
			t.f.name, row.line, max(t.column[column], 1), what)
	}
	return exit.Wrap(exit.EngineDB, err, "could not look up %s", what)
}

// retire sets a row's ACTIVE_FLAG to N.
func retire(ctx context.Context, tx *engine.Tx, f *file, id int64) error {
	_, err := tx.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET ACTIVE_FLAG = 'N' WHERE %s = $1", f.table, f.id), id)
	return err
}
