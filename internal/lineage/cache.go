package lineage

import (
	"context"
	"database/sql"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// A task's rows in AUD_COLUMN_LINEAGE, in COLUMN_LINEAGE_ID order: one per
// target column and source column (SOURCE_OBJECT and SOURCE_COLUMN NULL for
// a column with no source), then one per table the SELECT reads, with an
// empty TARGET_COLUMN. Every row carries the task's cache key in
// SOURCE_SQL_HASH. A task that could not be traced has no rows, so it is
// parsed again at the next Build.

// cachedRow is one AUD_COLUMN_LINEAGE row.
type cachedRow struct {
	hash, target, column string
	srcTable, srcColumn  sql.NullString
	how                  sql.NullString
}

// readCache reads every cached row by task.
func readCache(ctx context.Context, db *engine.DB) (map[int64][]cachedRow, error) {
	rows, err := db.QueryContext(ctx, `SELECT TASK_ID, SOURCE_SQL_HASH, TARGET_OBJECT, TARGET_COLUMN,
		SOURCE_OBJECT, SOURCE_COLUMN, TRANSFORMATION
		FROM AUD_COLUMN_LINEAGE ORDER BY TASK_ID, COLUMN_LINEAGE_ID`)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "cannot read AUD_COLUMN_LINEAGE")
	}
	defer rows.Close()
	out := map[int64][]cachedRow{}
	for rows.Next() {
		var id int64
		var r cachedRow
		if err := rows.Scan(&id, &r.hash, &r.target, &r.column, &r.srcTable, &r.srcColumn, &r.how); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "cannot read AUD_COLUMN_LINEAGE")
		}
		out[id] = append(out[id], r)
	}
	if err := rows.Err(); err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "cannot read AUD_COLUMN_LINEAGE")
	}
	return out, nil
}

// fromCache fills a task's lineage from its cached rows.
func fromCache(t *Task, rows []cachedRow) {
	t.Cached = true
	for _, r := range rows {
		if r.column == "" {
			t.Reads = append(t.Reads, r.srcTable.String)
			continue
		}
		if n := len(t.Columns); n == 0 || t.Columns[n-1].Name != r.column {
			t.Columns = append(t.Columns, Column{Name: r.column, Sources: []Source{}, Transformation: r.how.String})
		}
		if r.srcTable.Valid {
			c := &t.Columns[len(t.Columns)-1]
			c.Sources = append(c.Sources, Source{Table: r.srcTable.String, Column: r.srcColumn.String})
		}
	}
}

// writeCache replaces the rows of the tasks parsed in this Build, keyed by
// hashes (one per task), in one transaction.
func writeCache(ctx context.Context, db *engine.DB, tasks []*Task, hashes []string) error {
	if len(tasks) == 0 {
		return nil
	}
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		for i, t := range tasks {
			if _, err := tx.ExecContext(ctx, `DELETE FROM AUD_COLUMN_LINEAGE WHERE TASK_ID = $1`, t.TaskID); err != nil {
				return err
			}
			if t.Error != "" {
				continue
			}
			insert := func(column string, src, srcCol, how any) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO AUD_COLUMN_LINEAGE
					(TASK_ID, SOURCE_SQL_HASH, TARGET_OBJECT, TARGET_COLUMN, SOURCE_OBJECT, SOURCE_COLUMN, TRANSFORMATION)
					VALUES ($1, $2, $3, $4, $5, $6, $7)`, t.TaskID, hashes[i], t.Target, column, src, srcCol, how)
				return err
			}
			for _, c := range t.Columns {
				if len(c.Sources) == 0 {
					if err := insert(c.Name, nil, nil, c.Transformation); err != nil {
						return err
					}
				}
				for _, s := range c.Sources {
					if err := insert(c.Name, s.Table, s.Column, c.Transformation); err != nil {
						return err
					}
				}
			}
			for _, r := range t.Reads {
				if err := insert("", r, nil, nil); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "cannot write AUD_COLUMN_LINEAGE")
	}
	return nil
}
