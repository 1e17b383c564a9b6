package sqltask

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// RehashResult is what rehash found, and did or would do, for a target.
type RehashResult struct {
	// Rows is how many rows the target holds (every SCD2 version included).
	Rows int64
	// SQL is the statement recomputing every HASH_KEY.
	SQL string
}

// Rehash recomputes the HASH_KEY of every row of a merge target, SCD2
// history included, with change hash version 2 in one statement, then
// records version 2 in the Engine DB. The hashed columns are the merge
// contract of the active SCD1_MERGE and SCD2_MERGE tasks writing the
// target, which must agree. dryRun counts the rows and returns the statement
// without changing anything. The warehouse and the Engine DB commit
// separately: after a failure in between, rehash again.
func Rehash(ctx context.Context, db *engine.DB, w warehouse.Warehouse, target string, dryRun bool) (RehashResult, error) {
	var r RehashResult
	a, err := warehouse.ActionsOf(w)
	if err != nil {
		return r, err
	}
	table, key, err := ParseTarget(w, target)
	if err != nil {
		return r, err
	}
	tasks, err := configuredTasks(ctx, db)
	if err != nil {
		return r, err
	}
	keys, compare, err := mergeContract(tasks, target, key)
	if err != nil {
		return r, err
	}
	tx, err := w.Begin(ctx, table)
	if err != nil {
		return r, err
	}
	defer tx.Rollback()
	tcols, err := a.DescribeTable(ctx, tx, table)
	switch {
	case err != nil:
		return r, exit.Wrap(exit.Handler, err, "could not read the columns of %s", target)
	case len(tcols) == 0:
		return r, exit.Errorf(exit.SQLGuard, "%s: the target %s does not exist", target, table.Full())
	}
	hashCol, ok := column(tcols, colHashKey)
	if !ok {
		return r, exit.Errorf(exit.SQLGuard, "%s has no HASH_KEY column: only SCD1_MERGE and SCD2_MERGE targets are rehashed", target)
	}
	in, err := contractColumns(w, tcols, keys, compare)
	if err != nil {
		return r, exit.Errorf(exit.SQLGuard, "%s: %v", target, err)
	}
	hash, err := warehouse.ChangeHash(a, in)
	if err != nil {
		return r, exit.Errorf(exit.SQLGuard, "%s: %s cannot be hashed: %v", target, pCompareColumns, err)
	}
	if r.Rows, err = queryCount(ctx, tx, "SELECT COUNT(*) FROM "+warehouse.Qualify(w, table)); err != nil {
		return r, exit.Wrap(exit.Handler, err, "counting the rows of %s failed", target)
	}
	r.SQL = "UPDATE " + warehouse.Qualify(w, table) + " SET " + w.Quote(hashCol.Name) + " = " + hash
	if dryRun {
		return r, nil
	}
	if _, err := tx.Exec(ctx, r.SQL); err != nil {
		return r, exit.Wrap(exit.Handler, err, "rehashing %s failed", target)
	}
	if err := tx.Commit(); err != nil {
		return r, exit.Wrap(exit.Handler, err, "rehashing %s failed", target)
	}
	return r, NewEngineState(db, 0, 0).SetHashVersion(ctx, key, 2)
}

// mergeContract returns the MERGE_KEY and MERGE_COMPARE_COLUMNS (nil: the
// default) that every active merge task writing the target agrees on.
func mergeContract(tasks []configuredTask, target, key string) (keys, compare []string, err error) {
	var first *configuredTask
	for i, c := range tasks {
		act := strings.TrimSpace(c.params[pAction])
		if c.handler != pipeline.HandlerSQL || !slices.Contains(merges, act) || !NamesTarget(c.params[pTarget], key) {
			continue
		}
		k, kerr := columnList(pMergeKey, c.params[pMergeKey])
		cmp, cerr := columnList(pCompareColumns, c.params[pCompareColumns])
		if kerr != nil || cerr != nil || len(k) == 0 {
			return nil, nil, exit.Errorf(exit.SQLGuard, "%s merges into %s without a valid %s and %s: run etl-craft validate and fix it first",
				c.label(), target, pMergeKey, pCompareColumns)
		}
		if first == nil {
			first, keys, compare = &tasks[i], k, cmp
			continue
		}
		if !sameNames(k, keys) || !sameNames(cmp, compare) {
			return nil, nil, exit.Errorf(exit.SQLGuard,
				"%s and %s merge into %s with different %s or %s: rehash needs one common ordered merge contract, so make them agree",
				first.label(), c.label(), target, pMergeKey, pCompareColumns)
		}
	}
	if first == nil {
		return nil, nil, exit.Errorf(exit.SQLGuard,
			"no active SCD1_MERGE or SCD2_MERGE task writes %s: rehash needs one common ordered merge contract (%s, %s) from the tasks merging into it",
			target, pMergeKey, pCompareColumns)
	}
	return keys, compare, nil
}

// sameNames reports whether two column lists are equal, in order, in any case.
func sameNames(a, b []string) bool {
	return slices.EqualFunc(a, b, strings.EqualFold)
}

// contractColumns returns the hash inputs of a merge contract over the
// target's own columns.
func contractColumns(d warehouse.Dialect, tcols []warehouse.ColumnInfo, keys, compare []string) ([]warehouse.HashColumn, error) {
	var cols []warehouse.ColumnInfo
	if compare == nil {
		cols = defaultCompare(tcols, keys)
	}
	for _, name := range compare {
		c, ok := column(tcols, name)
		if !ok {
			return nil, fmt.Errorf("%s names %s, which the target does not have", pCompareColumns, name)
		}
		cols = append(cols, c)
	}
	in := make([]warehouse.HashColumn, len(cols))
	for i, c := range cols {
		in[i] = warehouse.HashColumn{Name: c.Name, Expr: d.Quote(c.Name), Type: c.Type}
	}
	return in, nil
}

// defaultCompare returns the columns merges compare when
// MERGE_COMPARE_COLUMNS is not set: every target column besides the keys
// and the engine columns, in the target's order.
func defaultCompare(tcols []warehouse.ColumnInfo, keys []string) []warehouse.ColumnInfo {
	var out []warehouse.ColumnInfo
	for _, c := range userColumns(tcols) {
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.EqualFold(k, c.Name) }) {
			out = append(out, c)
		}
	}
	return out
}

// queryCount runs a query returning one count.
func queryCount(ctx context.Context, tx warehouse.Tx, query string, args ...any) (int64, error) {
	n, err := queryCounts(ctx, tx, query, 1, args...)
	return n[0], err
}

// queryCounts runs a query returning one row of n counts.
func queryCounts(ctx context.Context, tx warehouse.Tx, query string, n int, args ...any) ([]int64, error) {
	out := make([]int64, n)
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	if rows.Next() {
		dest := make([]any, n)
		for i := range out {
			dest[i] = &out[i]
		}
		err = rows.Scan(dest...)
	}
	if err == nil {
		err = rows.Err()
	}
	return out, err
}
