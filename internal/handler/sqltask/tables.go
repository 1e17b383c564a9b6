package sqltask

import (
	"context"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// This file holds the actions that create, replace, append to and drop
// whole tables.

// createTable replaces the target with the SELECT's rows. Once the
// SELECT's columns are checked, it builds the replacement beside the target
// with one CREATE TABLE … AS SELECT — a table of this attempt's scratch
// name holding the SELECT's columns, the identity columns and ROW_ID — and
// publishes it: the target is dropped and the replacement renamed in its
// place. The SELECT may read the target, which is still there while it
// runs, and no other transaction sees the change before the commit. ROW_ID
// numbers the rows from 1 with row_number(), without a sequence or
// identity: no action inserts into a CREATE_TABLE target later (they all
// need columns it lacks).
func (j *job) createTable(ctx context.Context) (handler.Result, error) {
	cols, err := j.shape(ctx)
	if err != nil {
		return handler.Result{}, err
	}
	b := &warehouse.Binder{D: j.w}
	sets := append(j.copied(cols, nil), j.stamps(b, nil, auditColumns(CreateTable), "")...)
	sets = append(sets, assign{j.w.Fold(colRowID), j.a.RowNumber()})
	const step = "publish the replacement"
	switch j.caps.Replace {
	case warehouse.CreateOrReplace:
		// One atomic statement: the target keeps its old rows until it is replaced.
		if err := fault.Point(FaultBeforePublish); err != nil {
			return handler.Result{}, err
		}
		if err := j.exec(ctx, step, j.createAs(j.tgt.table, "CREATE OR REPLACE "+j.a.TargetKeyword(), j.options(), sets), b.Args...); err != nil {
			return handler.Result{}, err
		}
	case warehouse.CopyAndRestore:
		built := j.newScratch("")
		if err := j.exec(ctx, "stage the SELECT", j.createAs(built, "CREATE TABLE", "", sets), b.Args...); err != nil {
			return handler.Result{}, err
		}
		if err := fault.Point(FaultBeforePublish); err != nil {
			return handler.Result{}, err
		}
		if err := j.keepExisting(ctx); err != nil {
			return handler.Result{}, err
		}
		if err := j.exec(ctx, step, "CREATE OR REPLACE "+j.a.TargetKeyword()+" "+j.qualified(j.tgt.table)+j.options()+
			" AS SELECT * FROM "+j.qualified(built)); err != nil {
			return handler.Result{}, err
		}
	default:
		built := j.scratchTable("")
		if err := j.exec(ctx, "stage the SELECT", j.createAs(built, "CREATE TABLE", "", sets), b.Args...); err != nil {
			return handler.Result{}, err
		}
		if err := fault.Point(FaultBeforePublish); err != nil {
			return handler.Result{}, err
		}
		if err := j.dropTarget(ctx, step); err != nil {
			return handler.Result{}, err
		}
		if err := j.exec(ctx, step, "ALTER TABLE "+j.qualified(built)+" RENAME TO "+j.q(j.tgt.table.Name)); err != nil {
			return handler.Result{}, err
		}
	}
	return j.published(ctx, handler.Result{}, nil)
}

// keepExisting keeps a recovery copy of the target when it exists.
func (j *job) keepExisting(ctx context.Context) error {
	tcols, err := j.describeTarget(ctx)
	if err != nil || len(tcols) == 0 {
		return err
	}
	return j.keepCopy(ctx)
}

// createAs returns <create> t <options> AS SELECT each value AS its column
// FROM the SELECT AS s.
func (j *job) createAs(t warehouse.Table, create, options string, sets []assign) string {
	vals := make([]string, len(sets))
	for i, s := range sets {
		vals[i] = s.expr + " AS " + j.q(s.column)
	}
	return create + " " + j.qualified(t) + options + " AS\nSELECT " + strings.Join(vals, ", ") + "\nFROM " + j.source() + " AS s"
}

// rowID returns, on a warehouse whose ROW_ID is computed, the assignment
// numbering inserted rows on from the target's largest ROW_ID (the
// target's lock is held); none where the warehouse generates it or the
// target has no ROW_ID.
func (j *job) rowID(tcols []warehouse.ColumnInfo) []assign {
	c, ok := column(tcols, colRowID)
	if j.caps.RowID != warehouse.Computed || !ok {
		return nil
	}
	return []assign{{c.Name, "(SELECT COALESCE(MAX(" + j.q(c.Name) + "), 0) FROM " + j.qualified(j.tgt.table) + ") + " + j.a.RowNumber()}}
}

// ownRows is the condition of the target rows this task run wrote.
func (j *job) ownRows(tcols []warehouse.ColumnInfo) string {
	return j.q(j.engineColumn(tcols, colTaskRunID)) + " = " + j.w.Placeholder(1, warehouse.BigInt)
}

// published ends a replacement of the target with columns tcols (nil: as
// created): the fault point after publishing, the counts, the commit, and
// the target's hash version forgotten.
func (j *job) published(ctx context.Context, r handler.Result, tcols []warehouse.ColumnInfo) (handler.Result, error) {
	if err := fault.Point(FaultAfterPublish); err != nil {
		return r, err
	}
	if err := j.written(ctx, &r, tcols); err != nil {
		return r, err
	}
	if err := j.finish(ctx); err != nil {
		return r, err
	}
	return r, j.clearHashVersion(ctx)
}

// written counts, once an action wrote the SELECT's rows into the target
// (with columns tcols; nil: as created), the target's rows this task run
// wrote as the INSERT_COUNT and all its rows as the TARGET_COUNT, each with
// its own COUNT(*) in one statement. When the SELECT was not staged and
// counted, the SOURCE_COUNT is the INSERT_COUNT: this task run's rows are
// exactly the SELECT's, as an append first removes an earlier attempt's
// batch.
func (j *job) written(ctx context.Context, r *handler.Result, tcols []warehouse.ColumnInfo) error {
	n, err := j.countEach(ctx, j.tgt.table, []string{j.ownRows(tcols), ""}, j.t.TaskRunID)
	if err != nil {
		return err
	}
	r.InsertCount, r.TargetCount = handler.Int(n[0]), handler.Int(n[1])
	if r.SourceCount == nil {
		r.SourceCount = r.InsertCount
	}
	return nil
}

// stageSource stages the SELECT and counts its rows as the SOURCE_COUNT.
func (j *job) stageSource(ctx context.Context) (warehouse.Table, []warehouse.ColumnInfo, handler.Result, error) {
	var r handler.Result
	stage, cols, err := j.stage(ctx, false)
	if err == nil {
		r.SourceCount, err = j.rowCount(ctx, stage, "")
	}
	return stage, cols, r, err
}

// rowCount is countRows as a reported count.
func (j *job) rowCount(ctx context.Context, t warehouse.Table, where string, args ...any) (handler.Count, error) {
	n, err := j.countRows(ctx, t, where, args...)
	return handler.Int(n), err
}

// overwriteTable replaces every row of the existing target, keeping its
// definition (adding new SELECT columns when SCHEMA_EVOLUTION is true). The
// SELECT is staged first, as it may read the rows it replaces.
func (j *job) overwriteTable(ctx context.Context) (handler.Result, error) {
	audit := auditColumns(OverwriteTable)
	tcols, stage, cols, r, err := j.stageInto(ctx, audit)
	if err != nil {
		return r, err
	}
	added, err := j.drift(tcols, cols)
	if err != nil {
		return r, err
	}
	if err := fault.Point(FaultBeforePublish); err != nil {
		return r, err
	}
	const step = "publish the replacement"
	if err := j.evolve(ctx, added); err != nil {
		return r, err
	}
	b := &warehouse.Binder{D: j.w}
	sets := append(j.copied(cols, tcols), j.stamps(b, tcols, audit, "")...)
	sets = append(sets, j.rowID(tcols)...)
	insert := j.insertSelect(sets, j.qualified(stage), "")
	switch j.caps.Replace {
	case warehouse.CreateOrReplace:
		// One atomic statement replaces every row.
		insert = strings.Replace(insert, "INSERT INTO ", "INSERT OVERWRITE INTO ", 1)
	case warehouse.CopyAndRestore:
		if err := j.keepCopy(ctx); err != nil {
			return r, err
		}
		fallthrough
	default:
		if err := j.writeRows(ctx); err != nil {
			return r, err
		}
		if err := j.exec(ctx, step, "DELETE FROM "+j.qualified(j.tgt.table)); err != nil {
			return r, err
		}
	}
	if err := j.exec(ctx, step, insert, b.Args...); err != nil {
		return r, err
	}
	return j.published(ctx, r, tcols)
}

// drift compares the SELECT's columns with the target's own (not
// engine-managed) ones: a column the SELECT no longer returns is refused,
// and so is a new one unless SCHEMA_EVOLUTION is true. It returns the new
// columns to add.
func (j *job) drift(tcols, cols []warehouse.ColumnInfo) ([]warehouse.ColumnInfo, error) {
	var dropped []string
	for _, c := range userColumns(tcols) {
		if _, ok := column(cols, c.Name); !ok {
			dropped = append(dropped, c.Name)
		}
	}
	if len(dropped) > 0 {
		return nil, j.guard("the SELECT does not return %s, which the target has: return %s (NULL AS %s if need be), or drop %s from the target yourself",
			strings.Join(dropped, ", "), plural(len(dropped), "it", "them"), dropped[0], plural(len(dropped), "it", "them"))
	}
	var added []warehouse.ColumnInfo
	for _, c := range cols {
		if _, ok := column(tcols, c.Name); !ok {
			added = append(added, c)
		}
	}
	if len(added) > 0 && !j.s.evolve {
		return nil, j.guard("the SELECT returns %s, which the target lacks: set %s=true to add %s, or add %s with ALTER TABLE",
			strings.Join(names(added), ", "), pSchemaEvolution, plural(len(added), "it", "them"), plural(len(added), "it", "them"))
	}
	return added, nil
}

// evolve adds the new SELECT columns to the target, nullable, with their
// full types.
func (j *job) evolve(ctx context.Context, added []warehouse.ColumnInfo) error {
	for _, c := range added {
		j.log.Info("adding a column to the target", "column", c.Name, "type", c.Type)
		if err := j.exec(ctx, "add the SELECT's new columns", "ALTER "+j.a.TargetKeyword()+" "+j.qualified(j.tgt.table)+" ADD COLUMN "+j.q(c.Name)+" "+c.Type); err != nil {
			return err
		}
	}
	return nil
}

// appendTable adds the SELECT's rows to the existing target, inserting
// them straight from it. A retried attempt first removes the rows an
// earlier attempt of the same task run wrote (TASK_RUN_ID), so the batch is
// never there twice.
func (j *job) appendTable(ctx context.Context) (handler.Result, error) {
	audit := auditColumns(AppendTable)
	tcols, err := j.existingTarget(ctx, audit)
	if err != nil {
		return handler.Result{}, err
	}
	cols, err := j.shape(ctx)
	if err != nil {
		return handler.Result{}, err
	}
	if err := j.writeRows(ctx); err != nil {
		return handler.Result{}, err
	}
	removed, err := j.execResult(ctx, "remove this task run's earlier batch",
		"DELETE FROM "+j.qualified(j.tgt.table)+" WHERE "+j.ownRows(tcols), j.t.TaskRunID)
	if err != nil {
		return handler.Result{}, err
	}
	if n, err := removed.RowsAffected(); err == nil && n > 0 {
		j.log.Info("removed the rows an earlier attempt of this task run appended, to append them again", "rows", n)
	}
	b := &warehouse.Binder{D: j.w}
	sets := append(j.copied(cols, tcols), j.stamps(b, tcols, audit, "")...)
	sets = append(sets, j.rowID(tcols)...)
	if err := j.exec(ctx, "append the SELECT's rows", j.insertSelect(sets, j.source(), ""), b.Args...); err != nil {
		return handler.Result{}, err
	}
	var r handler.Result
	if err := j.written(ctx, &r, tcols); err != nil {
		return r, err
	}
	return r, j.finish(ctx)
}

// setupWriter returns the action whose audit columns a SETUP_TABLE target
// takes: the one action of the pipeline's tasks that write it, else
// SETUP_FOR. Conflicting writers are refused.
func (j *job) setupWriter(ctx context.Context) (string, error) {
	var found []string
	all, err := j.state.Writers(ctx, j.tgt.key)
	if err != nil {
		return "", err
	}
	for _, a := range all {
		if slices.Contains(writers, a) && !slices.Contains(found, a) {
			found = append(found, a)
		}
	}
	switch {
	case len(found) > 1:
		return "", j.guard("this pipeline's tasks write the target with %s: a target takes one writer's audit columns, so keep one",
			strings.Join(found, " and "))
	case len(found) == 1 && j.s.setupFor != "" && j.s.setupFor != found[0]:
		return "", j.guard("%s is %s, but this pipeline writes the target with %s: make them agree", pSetupFor, j.s.setupFor, found[0])
	case len(found) == 1:
		return found[0], nil
	case j.s.setupFor == "":
		return "", j.guard("no task of this pipeline writes the target, so %s cannot tell which audit columns it needs: set %s to one of %s",
			SetupTable, pSetupFor, strings.Join(writers, ", "))
	}
	return j.s.setupFor, nil
}

// setupTable creates the target empty, from the SELECT's shape, with its
// writer's audit columns; an existing target is left untouched (the
// SELECT's columns are checked all the same). A merge
// target it creates is recorded with change-hash version 2.
func (j *job) setupTable(ctx context.Context) (handler.Result, error) {
	writer, err := j.setupWriter(ctx)
	if err != nil {
		return handler.Result{}, err
	}
	tcols, err := j.describeTarget(ctx)
	if err != nil {
		return handler.Result{}, err
	}
	var r handler.Result
	if len(tcols) > 0 {
		if _, err := j.shape(ctx); err != nil {
			return r, err
		}
		j.log.Info("the target exists: SETUP_TABLE leaves it as it is")
		r.TargetCount, err = j.rowCount(ctx, j.tgt.table, "")
		return r, err
	}
	_, cols, err := j.stage(ctx, true)
	if err != nil {
		return r, err
	}
	if err := j.createTarget(ctx, "create the target", cols, auditColumns(writer)); err != nil {
		return r, err
	}
	r.TargetCount = handler.Int(0)
	if err := j.finish(ctx); err != nil {
		return r, err
	}
	if slices.Contains(merges, writer) {
		return r, j.state.SetHashVersion(ctx, j.tgt.key, 2)
	}
	return r, j.clearHashVersion(ctx)
}

// dropTable drops the target, but only one that a successful CREATE_TABLE
// task of this pipeline created in this run; dropping again is fine.
func (j *job) dropTable(ctx context.Context) (handler.Result, error) {
	created, err := j.state.CreatedInRun(ctx, j.tgt.key)
	if err != nil {
		return handler.Result{}, err
	}
	if !created {
		return handler.Result{}, j.guard("%s drops only a table that a %s task of this pipeline created successfully in this run, and none did",
			DropTable, CreateTable)
	}
	if err := j.dropTarget(ctx, "drop the target"); err != nil {
		return handler.Result{}, err
	}
	if err := j.finish(ctx); err != nil {
		return handler.Result{}, err
	}
	return handler.Result{}, j.clearHashVersion(ctx)
}
