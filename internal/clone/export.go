package clone

import (
	"context"
	"fmt"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Export copies chosen rows of Engine DB tables into tables of a warehouse
// of their own, reading every row in one snapshot, with the column types
// and exact values a clone gives its mirrors: what a purge archives before
// it deletes (see internal/retention).
type Export struct {
	snap   *engine.Snapshot
	w      warehouse.Warehouse
	tables map[string]exported
}

// exported is one Engine table's export: its name as the catalog spells
// it, its columns, and the warehouse table's columns loaded from them.
type exported struct {
	name string
	cols []column
	load []warehouse.Column
}

// NewExport returns an export reading in snap and writing into w.
func NewExport(snap *engine.Snapshot, w warehouse.Warehouse) *Export {
	return &Export{snap: snap, w: w, tables: map[string]exported{}}
}

// Rows copies the rows of the Engine table that the condition where (on
// its columns, with $N placeholders for args) selects into the table into,
// which the first call for the table creates with its columns (named in
// upper case), in one warehouse transaction, and returns how many it
// copied.
func (e *Export) Rows(ctx context.Context, table, where string, args []any, into warehouse.Table) (int64, error) {
	x, ok := e.tables[table]
	if !ok {
		name, err := e.catalogName(ctx, table)
		if err != nil {
			return 0, err
		}
		cols, err := columns(ctx, e.snap.DB(), name)
		if err != nil {
			return 0, fmt.Errorf("reading the columns of %s: %w", table, err)
		}
		p := planMirror(e.w, into, cols, nil)
		tx, err := e.w.Begin(ctx)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		if _, err := tx.Exec(ctx, p.ddl[0]); err != nil {
			return 0, err
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
		x = exported{name: name, cols: cols, load: p.load}
		e.tables[table] = x
	}
	rows, err := e.snap.ReadRows(ctx, selectQuery(e.snap.DB(), x.name, x.cols)+" WHERE "+where, args...)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", table, err)
	}
	rs := &scanner{rows: rows, cols: x.cols}
	defer rs.close()
	tx, err := e.w.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	n, err := tx.BulkLoad(ctx, into, x.load, stream(ctx, []rowScanner{rs}, len(x.cols), nil))
	if err != nil {
		return 0, err
	}
	return n, tx.Commit()
}

// catalogName returns the Engine table named table (in any case) as the
// catalog spells it: lower case on PostgreSQL.
func (e *Export) catalogName(ctx context.Context, table string) (string, error) {
	names, err := e.snap.DB().Tables(ctx)
	if err != nil {
		return "", fmt.Errorf("listing the Engine DB's tables: %w", err)
	}
	for _, n := range names {
		if strings.EqualFold(n, table) {
			return n, nil
		}
	}
	return "", fmt.Errorf("the Engine DB has no table %s", table)
}
