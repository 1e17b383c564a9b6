package sqltask

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// This file holds the recovery copy of the warehouses whose statements
// commit one by one (Capabilities.Replace is CopyAndRestore). Before a
// replacement changes the target, the target is copied to
// <target>__etl_keep_<task_run_id>_<attempt>, named by the attempt; the copy
// is dropped once the new rows are in. A failure restores the target from
// it and drops it. A crash leaves it behind, and the next attempt writing
// the target — of this task or another — restores the target from it
// before anything else: the rows the crashed attempt may have half written
// are never kept, as its run never recorded them. The next attempt of the
// same task run also drops the scratch tables a crashed attempt left.

// keepInfix separates a recovery copy's target name from its attempt.
const keepInfix = "__etl_keep_"

// keepTable names this attempt's recovery copy of the target.
func (j *job) keepTable() warehouse.Table {
	t := j.tgt.table
	t.Name = fmt.Sprintf("%s%s%d_%d", t.Name, keepInfix, j.t.TaskRunID, j.t.AttemptNumber)
	return t
}

// keepCopy copies the existing target's rows into this attempt's recovery
// copy, an ordinary table, before a replacement changes it.
func (j *job) keepCopy(ctx context.Context) error {
	k := j.keepTable()
	if err := j.exec(ctx, "keep a recovery copy of the target",
		"CREATE TABLE "+j.qualified(k)+" AS SELECT * FROM "+j.qualified(j.tgt.table)); err != nil {
		return err
	}
	j.keep = &k
	return nil
}

// restore puts the target back as its recovery copy k holds it and drops
// the copy. When the target still has the copy's columns its rows are
// replaced (the definition is kept); otherwise (it was replaced with other
// columns, or is gone) it is created again from the copy.
func (j *job) restore(ctx context.Context, k warehouse.Table) error {
	const step = "restore the target from its recovery copy"
	j.log.Warn("restoring the target from its recovery copy", "copy", k.Name)
	kcols, err := j.describe(ctx, k)
	if err != nil {
		return err
	}
	tcols, err := j.describeTarget(ctx)
	if err != nil {
		return err
	}
	if len(kcols) > 0 && slices.EqualFunc(names(kcols), names(tcols), strings.EqualFold) {
		cols := make([]string, len(kcols))
		for i, c := range kcols {
			cols[i] = j.q(c.Name)
		}
		list := strings.Join(cols, ", ")
		if err := j.writeRows(ctx); err != nil {
			return err
		}
		if err := j.exec(ctx, step, "DELETE FROM "+j.qualified(j.tgt.table)); err != nil {
			return err
		}
		if err := j.exec(ctx, step, "INSERT INTO "+j.qualified(j.tgt.table)+" ("+list+") SELECT "+list+" FROM "+j.qualified(k)); err != nil {
			return err
		}
		if j.caps.DDLCommits {
			if err := j.exec(ctx, step, "COMMIT"); err != nil {
				return err
			}
			j.open = false
		}
	} else if len(kcols) > 0 {
		if err := j.exec(ctx, step, "CREATE OR REPLACE "+j.a.TargetKeyword()+" "+j.qualified(j.tgt.table)+j.options()+
			" AS SELECT * FROM "+j.qualified(k)); err != nil {
			return err
		}
	}
	if err := j.exec(ctx, "drop the recovery copy", "DROP TABLE IF EXISTS "+j.qualified(k)); err != nil {
		return err
	}
	if j.keep != nil && j.keep.Name == k.Name {
		j.keep = nil
	}
	return nil
}

// recoverEarlier undoes what crashed attempts left, where statements commit
// one by one: the target is restored from a recovery copy found beside it,
// and the scratch tables of this task run's earlier attempts are dropped.
func (j *job) recoverEarlier(ctx context.Context) error {
	if !j.oneByOne() {
		return nil
	}
	keeps, err := j.tablesStarting(ctx, j.tgt.table.Name+keepInfix)
	if err != nil {
		return err
	}
	if len(keeps) > 1 {
		return j.guard("several recovery copies of the target remain (%s): restore the target from the right one by hand and drop them",
			strings.Join(keeps, ", "))
	}
	for _, name := range keeps {
		k := j.tgt.table
		k.Name = name
		if err := j.restore(ctx, k); err != nil {
			return err
		}
	}
	stale, err := j.tablesStarting(ctx, fmt.Sprintf("etl_stage_%d_", j.t.TaskRunID))
	if err != nil {
		return err
	}
	for _, name := range stale {
		j.log.Info("dropping a scratch table an earlier attempt left", "table", name)
		st := j.tgt.table
		st.Name = name
		if err := j.exec(ctx, "drop the scratch tables", "DROP TABLE IF EXISTS "+j.qualified(st)); err != nil {
			return err
		}
	}
	return nil
}

// tablesStarting returns the names of the tables of the target's schema
// that start with prefix, in any case, in name order.
func (j *job) tablesStarting(ctx context.Context, prefix string) ([]string, error) {
	const step = "look for what earlier attempts left"
	q, args := j.a.TablesQuery(j.tgt.table.Catalog, j.tgt.table.Schema, prefix)
	j.log.Debug("running a statement", "step", step, "statement", q)
	rows, err := j.tx.Query(ctx, q, args...)
	if err != nil {
		return nil, j.failed(ctx, step, q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, j.failed(ctx, step, q, err)
		}
		if len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix) {
			out = append(out, name)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, j.failed(ctx, step, q, err)
	}
	slices.Sort(out)
	return out, nil
}
