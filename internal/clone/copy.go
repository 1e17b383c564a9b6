package clone

import (
	"context"
	"fmt"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// copier copies Engine DB tables into mirrors of one warehouse.
type copier struct {
	db       *engine.DB
	w        warehouse.Warehouse
	progress func(Progress)
}

// mirrorPlan is what a clone does to a mirror before loading it.
type mirrorPlan struct {
	// ddl is the CREATE TABLE of a missing mirror, or an ADD COLUMN per
	// Engine column an existing mirror lacks.
	ddl     []string
	created bool
	added   []string
	// load lists the columns loaded, named as the mirror names them, in the
	// Engine table's order. Mirror columns the Engine table no longer has
	// are left out, so they stay NULL.
	load []warehouse.Column
}

// planMirror compares the Engine table's columns with the mirror's existing
// ones (none when it is missing), matching names without case. New mirror
// columns are named in upper case.
func planMirror(d warehouse.Dialect, mirror warehouse.Table, cols []column, existing []warehouse.ColumnInfo) mirrorPlan {
	have := make(map[string]string, len(existing))
	for _, e := range existing {
		have[strings.ToUpper(e.Name)] = e.Name
	}
	p := mirrorPlan{created: len(existing) == 0}
	for _, c := range cols {
		upper := strings.ToUpper(c.Name)
		name, ok := have[upper]
		if !ok {
			name = upper
		}
		col := warehouse.Column{Name: name, Type: c.typ}
		if !ok && !p.created {
			p.ddl = append(p.ddl, d.AddColumn(mirror, col))
			p.added = append(p.added, name)
		}
		p.load = append(p.load, col)
	}
	if p.created {
		p.ddl = []string{d.CreateTable(mirror, p.load)}
	}
	return p
}

// copy mirrors one Engine table: it brings the mirror's columns up to date,
// then replaces its rows in one warehouse transaction (TRUNCATE, bulk load,
// commit), so a reader sees the old rows or the new ones.
func (c *copier) copy(ctx context.Context, name string, mirror warehouse.Table) (Table, error) {
	cols, err := columns(ctx, c.db, name)
	if err != nil {
		return Table{}, fmt.Errorf("reading the columns of the Engine DB table: %w", err)
	}
	existing, err := c.w.Columns(ctx, mirror.Schema, mirror.Name)
	if err != nil {
		return Table{}, err
	}
	p := planMirror(c.w, mirror, cols, existing)
	if err := c.alter(ctx, p.ddl); err != nil {
		return Table{}, err
	}
	out := Table{Engine: displayName(name), Mirror: mirror, Created: p.created, Added: p.added}
	c.report(Progress{Table: out.Engine, Mirror: mirror.Full()})

	tx, err := c.w.Begin(ctx)
	if err != nil {
		return Table{}, err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(ctx, c.w.Truncate(mirror)); err != nil {
		return Table{}, err
	}
	progress := func(n int64) { c.report(Progress{Table: out.Engine, Mirror: mirror.Full(), Rows: n}) }
	if out.Rows, err = c.load(ctx, tx, selectQuery(c.db, name, cols), cols, mirror, p.load, progress); err != nil {
		return Table{}, err
	}
	if err := fault.Point("clone.after_rows"); err != nil {
		return Table{}, err
	}
	if err := fault.Point("clone.after_rows." + mirror.Name); err != nil {
		return Table{}, err
	}
	if err := tx.Commit(); err != nil {
		return Table{}, err
	}
	c.report(Progress{Table: out.Engine, Mirror: mirror.Full(), Rows: out.Rows, Done: true})
	return out, nil
}

// load writes the rows of query, whose columns are cols, into the load
// columns of mirror in the open transaction tx, and returns how many it
// wrote. Between two PostgreSQL servers the rows go from one COPY to the
// other as text; otherwise they are read in batches and bulk loaded.
func (c *copier) load(ctx context.Context, tx warehouse.Tx, query string, cols []column,
	mirror warehouse.Table, load []warehouse.Column, progress func(rows int64)) (int64, error) {
	if tc, ok := warehouse.TextCopierOf(tx); ok && c.db.Capabilities().CopyOut {
		return copyText(ctx, c.db, query, tc, mirror, load, progress)
	}
	rs, err := c.db.QueryContext(ctx, query)
	if err != nil {
		return 0, fmt.Errorf("reading the Engine DB table: %w", err)
	}
	defer rs.Close()
	return tx.BulkLoad(ctx, mirror, load, stream(ctx, rs, cols, progress))
}

// alter runs a mirror's DDL in a transaction of its own, before the rows are
// replaced: some warehouses commit DDL on their own, which must not cut the
// row replacement in two.
func (c *copier) alter(ctx context.Context, ddl []string) error {
	if len(ddl) == 0 {
		return nil
	}
	tx, err := c.w.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range ddl {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (c *copier) report(p Progress) {
	if c.progress != nil {
		c.progress(p)
	}
}
