package sqltask

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// job is one attempt of a SQL task against its target. Its methods in this
// file are the toolkit every action shares: the warehouse transaction, the
// statements run in it with their logging and errors, scratch tables, the
// SELECT and its columns, and the engine columns written with its rows.
type job struct {
	t       *handler.Task
	s       *spec
	state   EngineState
	log     *slog.Logger
	w       warehouse.Warehouse
	a       warehouse.Actions
	tgt     target
	token   string
	tx      warehouse.Tx
	scratch []warehouse.Table
	caps    warehouse.Capabilities
	// open is false once a DDL statement committed the transaction on a
	// warehouse where DDL commits (Capabilities.DDLCommits).
	open bool
	// keep is this attempt's recovery copy of the target while it exists.
	keep *warehouse.Table
}

// run performs the action in one warehouse transaction, rolled back
// unless the action commits it.
func (j *job) run(ctx context.Context) (handler.Result, error) {
	if err := j.begin(ctx); err != nil {
		return handler.Result{}, err
	}
	defer j.rollback()
	if err := j.recoverEarlier(ctx); err != nil {
		return handler.Result{}, err
	}
	switch j.s.action {
	case CreateTable:
		return j.createTable(ctx)
	case SetupTable:
		return j.setupTable(ctx)
	case OverwriteTable:
		return j.overwriteTable(ctx)
	case AppendTable:
		return j.appendTable(ctx)
	case SCD1Merge, SCD2Merge:
		return j.merge(ctx)
	case DeleteRows:
		return j.deleteRows(ctx)
	}
	return j.dropTable(ctx)
}

// storageRefusal refuses a TABLE_FORMAT the warehouse does not create, and
// storage parameters its created tables do not take.
func (j *job) storageRefusal() error {
	formats := j.a.TableFormats()
	if f := warehouse.TableFormat(j.s.format); f != "" && !slices.Contains(formats, f) {
		return j.guard("%s %s: SQL tasks on the %s warehouse create %s tables (Warehouse.Table_format); remove it or set it to %s",
			pTableFormat, f, j.w.Name(), formats[0], formats[0])
	}
	allowed := j.a.StorageParameters()
	var refused []string
	for _, name := range j.s.storage {
		if !slices.Contains(allowed, name) {
			refused = append(refused, name)
		}
	}
	if len(refused) > 0 {
		uses := "none"
		if len(allowed) > 0 {
			uses = strings.Join(allowed, ", ")
		}
		return j.guard("%s names storage for Iceberg and external tables, which the %s warehouse does not use: remove it (the storage parameters it takes: %s)",
			strings.Join(refused, ", "), j.w.Name(), uses)
	}
	return nil
}

// oneByOne reports whether the warehouse commits some statements on their
// own (no transactions, or DDL that commits): a failure cannot roll back
// the scratch tables and recovery copy, which are then dropped and
// restored by hand, and a crashed attempt may leave them for the next one.
func (j *job) oneByOne() bool { return !j.caps.Transactions || j.caps.DDLCommits }

// guard returns a SQL guard error (exit 21, never retried) about the target.
func (j *job) guard(format string, args ...any) error {
	return exit.Errorf(exit.SQLGuard, "%s: %s", j.tgt.name, fmt.Sprintf(format, args...))
}

// begin starts the attempt's warehouse transaction, guarding the target:
// tasks writing one target at once write it one after the other, each
// seeing what the one before committed (and so does the ROW_ID sequence
// that is named by it).
func (j *job) begin(ctx context.Context) error {
	tx, err := j.w.Begin(ctx, j.tgt.table)
	if err != nil {
		return j.failed(ctx, "begin a warehouse transaction", "", err)
	}
	j.tx, j.open = tx, true
	return nil
}

// rollback abandons the transaction when it was not committed; the scratch
// tables it created go with it. Where statements commit one by one, the
// target is restored from this attempt's recovery copy and the scratch
// tables are dropped on a connection of their own, even when the attempt
// was cancelled.
func (j *job) rollback() {
	if j.tx == nil {
		return
	}
	j.tx.Rollback()
	if !j.oneByOne() || (len(j.scratch) == 0 && j.keep == nil) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := j.begin(ctx); err != nil {
		j.log.Error("could not undo the failed attempt: the next attempt will", "error", err)
		return
	}
	defer j.tx.Rollback()
	if j.keep != nil {
		if err := j.restore(ctx, *j.keep); err != nil {
			j.log.Error("could not restore the target from its recovery copy: the next attempt will", "copy", j.keep.Name, "error", err)
			return
		}
	}
	j.dropScratch(ctx)
}

// cleanupTimeout bounds the undoing of a failed attempt.
const cleanupTimeout = 2 * time.Minute

// dropScratch drops this attempt's scratch tables.
func (j *job) dropScratch(ctx context.Context) error {
	for _, s := range j.scratch {
		if err := j.exec(ctx, "drop the scratch tables", "DROP TABLE IF EXISTS "+j.qualified(s)); err != nil {
			return err
		}
	}
	j.scratch = nil
	return nil
}

// writeRows is called before the statements that change the target's rows:
// where DDL committed the transaction, a new one begins, so the row changes
// commit together.
func (j *job) writeRows(ctx context.Context) error {
	if !j.caps.DDLCommits || j.open {
		return nil
	}
	if err := j.exec(ctx, "begin a warehouse transaction", "BEGIN TRANSACTION"); err != nil {
		return err
	}
	j.open = true
	return nil
}

// finish commits the rows written and drops the scratch tables and the
// recovery copy: before the commit where they go with the transaction,
// after it where DDL would commit it anyway.
func (j *job) finish(ctx context.Context) error {
	if j.caps.DDLCommits && j.open && (len(j.scratch) > 0 || j.keep != nil) {
		if err := j.exec(ctx, "commit the "+j.s.action, "COMMIT"); err != nil {
			return err
		}
	}
	if err := j.dropScratch(ctx); err != nil {
		return err
	}
	if j.keep != nil {
		if err := j.exec(ctx, "drop the recovery copy", "DROP TABLE IF EXISTS "+j.qualified(*j.keep)); err != nil {
			return err
		}
		j.keep = nil
	}
	if err := fault.Point(FaultBeforeCommit); err != nil {
		return err
	}
	if err := j.tx.Commit(); err != nil {
		return j.failed(ctx, "commit the "+j.s.action, "", err)
	}
	return fault.Point(FaultAfterCommit)
}

// exec runs one statement of a step, logging it at DEBUG.
func (j *job) exec(ctx context.Context, step, query string, args ...any) error {
	_, err := j.execResult(ctx, step, query, args...)
	return err
}

// execResult is exec returning the statement's result.
func (j *job) execResult(ctx context.Context, step, query string, args ...any) (sql.Result, error) {
	j.log.Debug("running a statement", "step", step, "statement", query)
	res, err := j.tx.Exec(ctx, query, args...)
	if isDDL(query) {
		j.open = false
	}
	if err != nil {
		return nil, j.failed(ctx, step, query, err)
	}
	return res, nil
}

// isDDL reports whether a statement etl-craft generates defines objects.
func isDDL(query string) bool {
	for _, kw := range []string{"CREATE ", "DROP ", "ALTER "} {
		if strings.HasPrefix(query, kw) {
			return true
		}
	}
	return false
}

// count runs a SELECT COUNT(*) of a step.
func (j *job) count(ctx context.Context, step, query string, args ...any) (int64, error) {
	j.log.Debug("running a statement", "step", step, "statement", query)
	n, err := queryCount(ctx, j.tx, query, args...)
	if err != nil {
		return 0, j.failed(ctx, step, query, err)
	}
	return n, nil
}

// countEach counts, in one statement over table t, its rows matching each
// condition ("" for every row), each with its own COUNT(*); args are the
// conditions' bound values, in order.
func (j *job) countEach(ctx context.Context, t warehouse.Table, conds []string, args ...any) ([]int64, error) {
	aggs := make([]string, len(conds))
	for i, c := range conds {
		aggs[i] = "COUNT(*)"
		if c != "" {
			aggs[i] = "COUNT(CASE WHEN " + c + " THEN 1 END)"
		}
	}
	q := "SELECT " + strings.Join(aggs, ", ") + " FROM " + j.qualified(t)
	j.log.Debug("running a statement", "step", "count the rows of "+t.Name, "statement", q)
	n, err := queryCounts(ctx, j.tx, q, len(conds), args...)
	if err != nil {
		return nil, j.failed(ctx, "count the rows of "+t.Name, q, err)
	}
	return n, nil
}

// countRows counts the rows of a table, or of its rows matching where.
func (j *job) countRows(ctx context.Context, t warehouse.Table, where string, args ...any) (int64, error) {
	q := "SELECT COUNT(*) FROM " + j.qualified(t)
	if where != "" {
		q += " WHERE " + where
	}
	return j.count(ctx, "count the rows of "+t.Name, q, args...)
}

// failed names the step and the target of a failed statement; when the
// attempt's context ended, the error says so (and wraps its cause).
func (j *job) failed(ctx context.Context, step, query string, err error) error {
	if query != "" {
		j.log.Debug("the statement failed", "step", step, "statement", query, "error", err)
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", context.Cause(ctx), err)
	}
	return exit.Wrap(exit.Handler, err, "%s failed for %s", step, j.tgt.name)
}

// qualified returns the quoted catalog.schema.table of t.
func (j *job) qualified(t warehouse.Table) string { return warehouse.Qualify(j.w, t) }

// q quotes a column name.
func (j *job) q(name string) string { return j.w.Quote(name) }

// scratchTable names a table of this attempt in the target's schema.
func (j *job) scratchTable(suffix string) warehouse.Table {
	return warehouse.Table{Catalog: j.tgt.table.Catalog, Schema: j.tgt.table.Schema,
		Name: fmt.Sprintf("etl_stage_%d_%s%s", j.t.TaskRunID, j.token, suffix)}
}

// newScratch names a scratch table of this attempt, which finish drops.
func (j *job) newScratch(suffix string) warehouse.Table {
	t := j.scratchTable(suffix)
	j.scratch = append(j.scratch, t)
	return t
}

// describeTarget returns the target's columns; none when it does not exist.
func (j *job) describeTarget(ctx context.Context) ([]warehouse.ColumnInfo, error) {
	return j.describe(ctx, j.tgt.table)
}

func (j *job) describe(ctx context.Context, t warehouse.Table) ([]warehouse.ColumnInfo, error) {
	cols, err := j.a.DescribeTable(ctx, j.tx, t)
	if err != nil {
		return nil, j.failed(ctx, "read the columns of "+t.Name, "", err)
	}
	return cols, nil
}

// existingTarget returns the columns of the target an action needs, with
// the engine columns its writer needs.
func (j *job) existingTarget(ctx context.Context, need []string) ([]warehouse.ColumnInfo, error) {
	cols, err := j.describeTarget(ctx)
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, j.guard("the target %s does not exist. Only %s and %s create targets: add a %s task before this one",
			j.tgt.table.Full(), CreateTable, SetupTable, SetupTable)
	}
	if lack := missing(cols, need); len(lack) > 0 {
		hint := "recreate it with a SETUP_TABLE task for " + j.s.action + ", or add the columns with ALTER TABLE"
		switch {
		case slices.Contains(lack, colDeleteFlag) && j.s.action == DeleteRows:
			hint = "soft deletes mark the DELETE_FLAG of an SCD1_MERGE or SCD2_MERGE target; set HARD_DELETE=true to delete the rows instead"
		case len(missing(cols, IdentityColumns)) == len(lack):
			hint = "run etl-craft upgrade-targets --target " + j.tgt.name + " to add them"
		}
		return nil, j.guard("the target lacks %s, which %s writes: %s", strings.Join(lack, ", "), j.s.action, hint)
	}
	return cols, nil
}

// stageInto stages the SELECT of an action writing into the existing
// target, which must have the engine columns need: the target's columns,
// the scratch table, the SELECT's columns and the SOURCE_COUNT.
func (j *job) stageInto(ctx context.Context, need []string) (tcols []warehouse.ColumnInfo, stage warehouse.Table, cols []warehouse.ColumnInfo, r handler.Result, err error) {
	if tcols, err = j.existingTarget(ctx, need); err != nil {
		return
	}
	stage, cols, r, err = j.stageSource(ctx)
	return
}

// source returns the SELECT as a relation for a FROM clause, to be given an
// alias.
func (j *job) source() string { return relation(j.s.source.text) }

// relation writes a SELECT as a relation for a FROM clause.
func relation(selectSQL string) string { return "(\n" + selectSQL + "\n)" }

// shapeQuery plans a SELECT without running it: its result has the
// SELECT's columns and no row.
func shapeQuery(selectSQL string) string {
	return "SELECT * FROM " + relation(selectSQL) + " AS etl_source LIMIT 0"
}

// columnNames runs a query in tx and returns its result's column names,
// reading no row.
func columnNames(ctx context.Context, tx warehouse.Tx, q string) ([]string, error) {
	rows, err := tx.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	names, err := rows.Columns()
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	return names, err
}

// shape returns the names of the SELECT's columns, after checking them,
// from a LIMIT 0 query that plans the SELECT without running it: all the
// actions that write its rows straight into the target need to know first.
func (j *job) shape(ctx context.Context) ([]warehouse.ColumnInfo, error) {
	const step = "read the SELECT's columns"
	q := shapeQuery(j.s.source.text)
	j.log.Debug("running a statement", "step", step, "statement", q)
	names, err := columnNames(ctx, j.tx, q)
	if err != nil {
		return nil, j.failed(ctx, step, q, err)
	}
	cols := make([]warehouse.ColumnInfo, len(names))
	for i, n := range names {
		cols[i].Name = n
	}
	if err := selectProblems(j.w, cols); err != nil {
		return nil, j.guard("%s", err)
	}
	return cols, nil
}

// stage runs the SELECT into a new scratch table (only its shape when
// shapeOnly) and returns its columns with their types, after checking their
// names.
func (j *job) stage(ctx context.Context, shapeOnly bool) (warehouse.Table, []warehouse.ColumnInfo, error) {
	st := j.newScratch("")
	q := "CREATE TABLE " + j.qualified(st) + " AS SELECT * FROM " + j.source() + " AS etl_source"
	if shapeOnly {
		q += " LIMIT 0"
	}
	if err := j.exec(ctx, "stage the SELECT", q); err != nil {
		return st, nil, err
	}
	cols, err := j.describe(ctx, st)
	if err != nil {
		return st, nil, err
	}
	if err := selectProblems(j.w, cols); err != nil {
		return st, nil, j.guard("%s", err)
	}
	return st, cols, nil
}

// stamp returns the value an engine column takes on the rows an action
// writes; hash is the HASH_KEY expression of merges.
func (j *job) stamp(b *warehouse.Binder, col, hash string) string {
	switch col {
	case colPipelineID:
		return b.BigInt(j.t.PipelineID)
	case colPipelineRunID:
		return b.BigInt(j.t.PipelineRunID)
	case colTaskRunID:
		return b.BigInt(j.t.TaskRunID)
	case colCreateDate, colUpdateDate:
		return j.a.CurrentTimestamp()
	case colCreatedBy, colUpdatedBy:
		return j.a.CurrentUser()
	case colHashKey:
		return hash
	case colActiveFlag:
		return "'Y'"
	}
	return "'N'" // DELETE_FLAG
}

// assign is one column written and the SQL expression of its value.
type assign struct {
	column string
	expr   string
}

// insertSelect returns INSERT INTO the target (columns) SELECT values FROM
// from AS s, with a WHERE condition when where is not empty; from is a
// quoted table name or j.source().
func (j *job) insertSelect(sets []assign, from string, where string) string {
	cols := make([]string, len(sets))
	vals := make([]string, len(sets))
	for i, s := range sets {
		cols[i], vals[i] = j.q(s.column), s.expr
	}
	q := "INSERT INTO " + j.qualified(j.tgt.table) + " (" + strings.Join(cols, ", ") + ")\nSELECT " +
		strings.Join(vals, ", ") + "\nFROM " + from + " AS s"
	if where != "" {
		q += "\nWHERE " + where
	}
	return q
}

// copied returns the assignments copying the SELECT's columns from s into
// the target's columns of the same names.
func (j *job) copied(src, tcols []warehouse.ColumnInfo) []assign {
	out := make([]assign, len(src))
	for i, c := range src {
		name := c.Name
		if tc, ok := column(tcols, c.Name); ok {
			name = tc.Name
		}
		out[i] = assign{name, "s." + j.q(c.Name)}
	}
	return out
}

// stamps returns the assignments of the engine columns cols (canonical
// names) into the target's columns of those names.
func (j *job) stamps(b *warehouse.Binder, tcols []warehouse.ColumnInfo, cols []string, hash string) []assign {
	out := make([]assign, 0, len(cols))
	for _, c := range cols {
		out = append(out, assign{j.engineColumn(tcols, c), j.stamp(b, c, hash)})
	}
	return out
}

// engineColumn returns the name of an engine column in the target: its own
// spelling when it has the column, else the name etl-craft creates it with.
func (j *job) engineColumn(tcols []warehouse.ColumnInfo, name string) string {
	if tc, ok := column(tcols, name); ok {
		return tc.Name
	}
	return j.w.Fold(name)
}

// createTarget creates the target with the SELECT's columns, the engine
// columns audit and ROW_ID.
func (j *job) createTarget(ctx context.Context, step string, cols []warehouse.ColumnInfo, audit []string) error {
	before, rowID := j.a.RowIDColumn(j.tgt.table, j.w.Fold(colRowID))
	defs := make([]string, 0, len(cols)+len(audit)+1)
	for _, c := range cols {
		defs = append(defs, j.q(c.Name)+" "+c.Type)
	}
	for _, c := range audit {
		defs = append(defs, j.q(j.w.Fold(c))+" "+j.w.TypeName(engineTypes[c]))
	}
	defs = append(defs, rowID)
	create := "CREATE " + j.a.TargetKeyword() + " " + j.qualified(j.tgt.table) + " (\n  " + strings.Join(defs, ",\n  ") + "\n)" + j.options()
	for _, s := range append(before, create) {
		if err := j.exec(ctx, step, s); err != nil {
			return err
		}
	}
	return nil
}

// dropTarget drops the target and what its ROW_ID needs beside it.
func (j *job) dropTarget(ctx context.Context, step string) error {
	for _, s := range append([]string{"DROP " + j.a.TargetKeyword() + " IF EXISTS " + j.qualified(j.tgt.table)}, j.a.DropRowID(j.tgt.table)...) {
		if err := j.exec(ctx, step, s); err != nil {
			return err
		}
	}
	return nil
}

// options returns the clause of the target's format and storage.
func (j *job) options() string { return j.a.TargetOptions(j.tgt.table, j.s.storageSet) }

// clearHashVersion forgets the target's change-hash version after it was
// dropped or replaced.
func (j *job) clearHashVersion(ctx context.Context) error {
	v, err := j.state.HashVersion(ctx, j.tgt.key)
	if err != nil || v == 0 {
		return err
	}
	return j.state.SetHashVersion(ctx, j.tgt.key, 0)
}
