package sqltask

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// This file holds the keyed actions: SCD1_MERGE, SCD2_MERGE and DELETE_ROWS.
// Their statements read the target as t and the merge source as s.

// keyedRun is what a keyed action knows once the SELECT is staged and checked.
type keyedRun struct {
	stage warehouse.Table
	cols  []warehouse.ColumnInfo // the SELECT's columns
	tcols []warehouse.ColumnInfo // the target's columns
	keys  []string               // MERGE_KEY, as the SELECT names them
}

// match returns the condition pairing target rows with source rows by key.
func (j *job) match(k keyedRun) string {
	parts := make([]string, len(k.keys))
	for i, key := range k.keys {
		tc, _ := column(k.tcols, key)
		parts[i] = "t." + j.q(tc.Name) + " = s." + j.q(key)
	}
	return strings.Join(parts, " AND ")
}

// stageKeyed stages the SELECT of a keyed action into an existing target
// that has the engine columns need, and refuses keys that are missing or
// NULL, before anything is written.
func (j *job) stageKeyed(ctx context.Context, need []string) (keyedRun, handler.Result, error) {
	var k keyedRun
	var r handler.Result
	var err error
	if k.tcols, k.stage, k.cols, r, err = j.stageInto(ctx, need); err != nil {
		return k, r, err
	}
	for _, key := range j.s.mergeKey {
		c, ok := column(k.cols, key)
		if !ok {
			return k, r, j.guard("the SELECT does not return the %s column %s", pMergeKey, key)
		}
		if _, ok := column(k.tcols, key); !ok {
			return k, r, j.guard("the target has no %s column %s", pMergeKey, key)
		}
		k.keys = append(k.keys, c.Name)
	}
	nulls := make([]string, len(k.keys))
	for i, key := range k.keys {
		nulls[i] = j.q(key) + " IS NULL"
	}
	n, err := j.countRows(ctx, k.stage, strings.Join(nulls, " OR "))
	if err != nil {
		return k, r, err
	}
	if n > 0 {
		return k, r, j.guard("%s %s is NULL in %d row(s) of the SELECT: nothing was written; filter those rows out or give them a key",
			pMergeKey, strings.Join(k.keys, "|"), n)
	}
	return k, r, nil
}

// merge performs SCD1_MERGE or SCD2_MERGE.
func (j *job) merge(ctx context.Context) (handler.Result, error) {
	if v, err := j.state.HashVersion(ctx, j.tgt.key); err != nil {
		return handler.Result{}, err
	} else if v != 2 {
		return handler.Result{}, j.guard("its change hash is %s, and merging needs version 2: run etl-craft rehash --target %s first",
			versionText(v), j.tgt.name)
	}
	audit := auditColumns(j.s.action)
	k, r, err := j.stageKeyed(ctx, audit)
	if err != nil {
		return r, err
	}
	src, err := j.dedupe(ctx, k)
	if err != nil {
		return r, err
	}
	added, err := j.drift(k.tcols, k.cols)
	if err != nil {
		return r, err
	}
	effective := append(slices.Clone(k.tcols), added...)
	compare, err := j.compareColumns(k, effective)
	if err != nil {
		return r, err
	}
	if err := j.evolve(ctx, added); err != nil {
		return r, err
	}
	if err := j.writeRows(ctx); err != nil {
		return r, err
	}
	k.tcols = effective
	if j.s.action == SCD1Merge {
		err = j.scd1(ctx, k, src, compare, audit, &r)
	} else {
		err = j.scd2(ctx, k, src, compare, audit, &r)
	}
	if err != nil {
		return r, err
	}
	if r.TargetCount, err = j.rowCount(ctx, j.tgt.table, ""); err != nil {
		return r, err
	}
	return r, j.finish(ctx)
}

func versionText(v int) string {
	if v == 0 {
		return "not recorded"
	}
	return fmt.Sprintf("version %d", v)
}

// dedupe copies the distinct SELECT rows into the merge source, keeping one
// row per key: identical duplicates collapse, MERGE_DEDUPE_ORDER picks the
// first row of each key, and keys left with more than one row are refused.
func (j *job) dedupe(ctx context.Context, k keyedRun) (warehouse.Table, error) {
	src := j.newScratch("_src")
	cols := make([]string, len(k.cols))
	for i, c := range k.cols {
		cols[i] = j.q(c.Name)
	}
	list := strings.Join(cols, ", ")
	keys := make([]string, len(k.keys))
	for i, key := range k.keys {
		keys[i] = j.q(key)
	}
	distinct := "SELECT DISTINCT " + list + " FROM " + j.qualified(k.stage)
	q := "CREATE TABLE " + j.qualified(src) + " AS " + distinct
	if j.s.order != "" {
		q = "CREATE TABLE " + j.qualified(src) + " AS SELECT " + list + " FROM (\n  SELECT " + list +
			", RANK() OVER (PARTITION BY " + strings.Join(keys, ", ") + " ORDER BY " + j.s.order + ") AS etl_dedupe_rank\n  FROM (" +
			distinct + ") AS d\n) AS ranked WHERE etl_dedupe_rank = 1"
	}
	if err := j.exec(ctx, "pick one row per key", q); err != nil {
		return src, err
	}
	dup := "SELECT COUNT(*) FROM (SELECT " + strings.Join(keys, ", ") + " FROM " + j.qualified(src) +
		" GROUP BY " + strings.Join(keys, ", ") + " HAVING COUNT(*) > 1) AS dup"
	n, err := j.count(ctx, "pick one row per key", dup)
	if err != nil || n == 0 {
		return src, err
	}
	key := strings.Join(k.keys, "|")
	if j.s.order == "" {
		return src, j.guard("%s %s has %d value(s) with different rows in the SELECT: nothing was written; make the keys unique, or set %s to choose one row per key",
			pMergeKey, key, n, pDedupeOrder)
	}
	return src, j.guard("%s %q ties between different rows for %d %s value(s): nothing was written; add columns to the order so it picks one row",
		pDedupeOrder, j.s.order, n, key)
}

// compareColumns returns MERGE_COMPARE_COLUMNS, or by default every target
// column besides the keys and the engine columns, as target columns.
func (j *job) compareColumns(k keyedRun, tcols []warehouse.ColumnInfo) ([]warehouse.ColumnInfo, error) {
	if j.s.compare == nil {
		return defaultCompare(tcols, k.keys), nil
	}
	out := make([]warehouse.ColumnInfo, len(j.s.compare))
	for i, name := range j.s.compare {
		if isEngineColumn(name) {
			return nil, j.guard("%s names %s, which etl-craft manages", pCompareColumns, name)
		}
		if _, ok := column(k.cols, name); !ok {
			return nil, j.guard("%s names %s, which the SELECT does not return", pCompareColumns, name)
		}
		out[i], _ = column(tcols, name)
	}
	return out, nil
}

// hash returns the HASH_KEY expression of the merge source's row s, its
// values cast to the target's column types; when preserve, a NULL source
// value counts as the target row t's value.
func (j *job) hash(k keyedRun, compare []warehouse.ColumnInfo, preserve bool) (string, error) {
	in := make([]warehouse.HashColumn, len(compare))
	for i, tc := range compare {
		sc, _ := column(k.cols, tc.Name)
		expr := "s." + j.q(sc.Name)
		if !strings.EqualFold(sc.Type, tc.Type) {
			expr = "CAST(" + expr + " AS " + tc.Type + ")"
		}
		if preserve {
			expr = "COALESCE(" + expr + ", t." + j.q(tc.Name) + ")"
		}
		in[i] = warehouse.HashColumn{Name: tc.Name, Expr: expr, Type: tc.Type}
	}
	h, err := warehouse.ChangeHash(j.a, in)
	if err != nil {
		return "", j.guard("%s cannot be hashed: %v", pCompareColumns, err)
	}
	return h, nil
}

// tcol returns the target's own spelling of a column, quoted.
func (j *job) tcol(k keyedRun, name string) string {
	c, _ := column(k.tcols, name)
	return j.q(c.Name)
}

// deleted is the condition of a soft-deleted target row.
func (j *job) deleted(k keyedRun) string {
	return "COALESCE(t." + j.tcol(k, colDeleteFlag) + ", 'N') = 'Y'"
}

// without returns cols less the names drop.
func without(cols []string, drop ...string) []string {
	var out []string
	for _, c := range cols {
		if !slices.Contains(drop, c) {
			out = append(out, c)
		}
	}
	return out
}

// scd1 updates the rows whose hash changed (or that were soft-deleted) in
// place and inserts the new keys.
func (j *job) scd1(ctx context.Context, k keyedRun, src warehouse.Table, compare []warehouse.ColumnInfo, audit []string, r *handler.Result) error {
	newHash, err := j.hash(k, compare, false)
	if err != nil {
		return err
	}
	mergedHash, err := j.hash(k, compare, j.s.preserve)
	if err != nil {
		return err
	}
	differs := "(t." + j.tcol(k, colHashKey) + " IS DISTINCT FROM " + mergedHash + " OR " + j.deleted(k) + ")"
	changed := j.match(k) + " AND " + differs
	n, err := j.count(ctx, "count the changed rows", "SELECT COUNT(*) FROM "+j.qualified(j.tgt.table)+" AS t JOIN "+j.qualified(src)+" AS s ON "+changed)
	if err != nil {
		return err
	}
	r.UpdateCount = handler.Int(n)
	if n > 0 {
		b := &warehouse.Binder{D: j.w}
		var sets []string
		for _, c := range k.cols {
			if slices.Contains(k.keys, c.Name) {
				continue
			}
			tc, _ := column(k.tcols, c.Name)
			v := "s." + j.q(c.Name)
			if j.s.preserve {
				v = "COALESCE(" + v + ", t." + j.q(tc.Name) + ")"
			}
			sets = append(sets, j.q(tc.Name)+" = "+v)
		}
		for _, a := range j.stamps(b, k.tcols, without(audit, colCreateDate, colCreatedBy), mergedHash) {
			sets = append(sets, j.q(a.column)+" = "+a.expr)
		}
		q := j.joinedUpdate(j.qualified(src), j.match(k), differs, strings.Join(sets, ", "))
		if err := j.exec(ctx, "merge the SELECT's rows", q, b.Args...); err != nil {
			return err
		}
	}
	return j.insertNew(ctx, k, src, audit, newHash, "", r)
}

// insertNew inserts the source rows whose key has no target row (that is
// active, when active is the condition of one), as new live rows.
func (j *job) insertNew(ctx context.Context, k keyedRun, src warehouse.Table, audit []string, hash, active string, r *handler.Result) error {
	absent := "NOT EXISTS (SELECT 1 FROM " + j.qualified(j.tgt.table) + " AS t WHERE " + j.match(k) + active + ")"
	n, err := j.count(ctx, "count the new rows", "SELECT COUNT(*) FROM "+j.qualified(src)+" AS s WHERE "+absent)
	if err != nil {
		return err
	}
	r.InsertCount = handler.Int(n)
	if n == 0 {
		return nil
	}
	b := &warehouse.Binder{D: j.w}
	sets := append(j.copied(k.cols, k.tcols), j.stamps(b, k.tcols, audit, hash)...)
	sets = append(sets, j.rowID(k.tcols)...)
	return j.exec(ctx, "merge the SELECT's rows", j.insertSelect(sets, j.qualified(src), absent), b.Args...)
}

// joinedUpdate returns the statement updating, with the assignments sets,
// the target rows t that match a
// source row s of from by on and meet cond: UPDATE … FROM, or MERGE INTO
// where joined updates are written so (Capabilities.MergeUpdate).
func (j *job) joinedUpdate(from, on, cond, sets string) string {
	if j.caps.MergeUpdate {
		return "MERGE INTO " + j.qualified(j.tgt.table) + " AS t\nUSING " + from + " AS s\nON " + on +
			"\nWHEN MATCHED AND " + cond + " THEN UPDATE SET " + sets
	}
	return "UPDATE " + j.qualified(j.tgt.table) + " AS t SET " + sets + "\nFROM " + from + " AS s\nWHERE " + on + " AND " + cond
}

// scd2 closes the active version of each key whose hash changed (or that
// was soft-deleted) and inserts a new active version for every key left
// without one.
func (j *job) scd2(ctx context.Context, k keyedRun, src warehouse.Table, compare []warehouse.ColumnInfo, audit []string, r *handler.Result) error {
	hash, err := j.hash(k, compare, false)
	if err != nil {
		return err
	}
	active := " AND t." + j.tcol(k, colActiveFlag) + " = 'Y'"
	differs := "(t." + j.tcol(k, colHashKey) + " IS DISTINCT FROM " + hash + " OR " + j.deleted(k) + ")"
	changed := j.match(k) + active + " AND " + differs
	n, err := j.count(ctx, "count the changed rows", "SELECT COUNT(*) FROM "+j.qualified(j.tgt.table)+" AS t JOIN "+j.qualified(src)+" AS s ON "+changed)
	if err != nil {
		return err
	}
	r.UpdateCount = handler.Int(n)
	if n > 0 {
		b := &warehouse.Binder{D: j.w}
		close := []string{j.tcol(k, colActiveFlag) + " = 'N'"}
		for _, a := range j.stamps(b, k.tcols, append(slices.Clone(IdentityColumns), colUpdateDate, colUpdatedBy), "") {
			close = append(close, j.q(a.column)+" = "+a.expr)
		}
		q := j.joinedUpdate(j.qualified(src), j.match(k)+active, differs, strings.Join(close, ", "))
		if err := j.exec(ctx, "merge the SELECT's rows", q, b.Args...); err != nil {
			return err
		}
	}
	return j.insertNew(ctx, k, src, audit, hash, active, r)
}

// deleteRows soft-deletes (DELETE_FLAG 'Y') the target rows whose key the
// SELECT returns, or deletes them with HARD_DELETE. Rows already
// soft-deleted stay as they are; on an SCD2 target only active versions are
// marked.
func (j *job) deleteRows(ctx context.Context) (handler.Result, error) {
	var need []string
	if !j.s.hardDelete {
		need = append(slices.Clone(IdentityColumns), colDeleteFlag)
	}
	k, r, err := j.stageKeyed(ctx, need)
	if err != nil {
		return r, err
	}
	cond := "EXISTS (SELECT 1 FROM " + j.qualified(k.stage) + " AS s WHERE " + j.match(k) + ")"
	b := &warehouse.Binder{D: j.w}
	// Where joined changes are MERGEs, the source is the distinct keys, so
	// that no target row matches twice.
	keys := make([]string, len(k.keys))
	for i, key := range k.keys {
		keys[i] = j.q(key)
	}
	distinct := "(SELECT DISTINCT " + strings.Join(keys, ", ") + " FROM " + j.qualified(k.stage) + ")"
	q := "DELETE FROM " + j.qualified(j.tgt.table) + " AS t WHERE " + cond
	if j.caps.MergeUpdate {
		q = "MERGE INTO " + j.qualified(j.tgt.table) + " AS t\nUSING " + distinct + " AS s\nON " + j.match(k) + "\nWHEN MATCHED THEN DELETE"
	}
	if !j.s.hardDelete {
		live := "NOT " + j.deleted(k)
		if _, ok := column(k.tcols, colActiveFlag); ok {
			live += " AND t." + j.tcol(k, colActiveFlag) + " = 'Y'"
		}
		cond += " AND " + live
		sets := []string{j.tcol(k, colDeleteFlag) + " = 'Y'"}
		stamped := append(slices.Clone(IdentityColumns), colUpdateDate, colUpdatedBy)
		present := slices.DeleteFunc(stamped, func(c string) bool { _, ok := column(k.tcols, c); return !ok })
		for _, a := range j.stamps(b, k.tcols, present, "") {
			sets = append(sets, j.q(a.column)+" = "+a.expr)
		}
		q = "UPDATE " + j.qualified(j.tgt.table) + " AS t SET " + strings.Join(sets, ", ") + "\nWHERE " + cond
		if j.caps.MergeUpdate {
			q = j.joinedUpdate(distinct, j.match(k), live, strings.Join(sets, ", "))
		}
	}
	n, err := j.count(ctx, "count the rows to delete", "SELECT COUNT(*) FROM "+j.qualified(j.tgt.table)+" AS t WHERE "+cond)
	if err != nil {
		return r, err
	}
	r.DeleteCount = handler.Int(n)
	if n > 0 {
		if err := j.writeRows(ctx); err != nil {
			return r, err
		}
		if err := j.exec(ctx, "delete the SELECT's keys", q, b.Args...); err != nil {
			return r, err
		}
	}
	if r.TargetCount, err = j.rowCount(ctx, j.tgt.table, ""); err != nil {
		return r, err
	}
	return r, j.finish(ctx)
}
