package clone

import (
	"context"
	"database/sql"
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
	full     bool // every table is replaced in full (--full)
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
// then, in one warehouse transaction, either replaces its rows (TRUNCATE,
// bulk load) or, when the mirror is proven to be what the last clone left,
// copies only the rows changed since (deleting the mirror rows of changed
// and deleted keys, loading the changed rows), and commits, so a reader sees
// the old rows or the new ones. What the copy left is then recorded in
// CLONE_STATE for the next clone to check.
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
	if len(p.ddl) > 0 {
		if existing, err = c.w.Columns(ctx, mirror.Schema, mirror.Name); err != nil {
			return Table{}, err
		}
	}
	out := Table{Engine: displayName(name), Mirror: mirror, Created: p.created, Added: p.added}
	c.report(Progress{Table: out.Engine, Mirror: mirror.Full()})

	reads, err := beginReads(ctx, c.db, readers)
	if err != nil {
		return Table{}, fmt.Errorf("reading the Engine DB table: %w", err)
	}
	defer endReads(reads)
	r := reads[0]
	k, err := c.keep(ctx, r, name, mirror, cols, existing)
	if err != nil {
		return Table{}, fmt.Errorf("reading the Engine DB table's changes: %w", err)
	}

	tx, err := c.w.Begin(ctx)
	if err != nil {
		return Table{}, err
	}
	defer tx.Rollback()
	out.Why, err = c.decide(ctx, tx, p, k)
	if err != nil {
		return Table{}, err
	}
	out.Incremental = out.Why == whyIncremental
	progress := func(n int64) { c.report(Progress{Table: out.Engine, Mirror: mirror.Full(), Rows: n}) }
	if out.Incremental {
		out.Copied, err = c.catchUp(ctx, tx, r, name, mirror, cols, p.load, k, progress)
	} else {
		if _, err = tx.Exec(ctx, c.w.Truncate(mirror)); err != nil {
			return Table{}, err
		}
		if g := k.checksum.left.guard; g != nil && k.tracked() {
			if err = g.dropKeyIndexes(ctx, tx); err != nil {
				return Table{}, err
			}
		}
		out.Copied, err = c.load(ctx, tx, reads, name, cols, k, mirror, p.load, progress)
	}
	if err != nil {
		return Table{}, err
	}
	out.Rows = out.Copied
	var left state
	if k.tracked() {
		left = state{mark: k.mark, proof: k.now}
		if left.rows, left.high, left.proof.checksum, err = measureMirror(ctx, tx, k.checksum.left); err != nil {
			return Table{}, err
		}
		out.Rows = left.rows
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
	if k.tracked() {
		if err := writeState(ctx, c.db, name, mirror.Full(), left); err != nil {
			return Table{}, err
		}
	}
	c.report(Progress{Table: out.Engine, Mirror: mirror.Full(), Rows: out.Rows, Done: true})
	return out, nil
}

// kept is what decides whether a mirror can be caught up, read in the
// table's Engine DB snapshot before its warehouse transaction begins.
type kept struct {
	capture  capture
	captured bool
	checksum checksum // how the warehouse proves the mirror
	provable bool     // the warehouse can
	mark     string   // the snapshot's change mark
	now      proof    // the identity and columns of now
	last     *state   // what the last clone left; nil when none is recorded
}

// tracked reports whether the copy records its state: the table's changes
// are logged and the warehouse can checksum the mirror.
func (k kept) tracked() bool { return k.captured && k.provable }

func (c *copier) keep(ctx context.Context, r *readConn, name string, mirror warehouse.Table,
	cols []column, existing []warehouse.ColumnInfo) (kept, error) {
	var k kept
	var err error
	if k.capture, k.captured, err = r.capture(ctx, name, cols); err != nil || !k.captured {
		return k, err
	}
	key := strings.ToUpper(k.capture.key.Name)
	for _, e := range existing {
		if strings.EqualFold(e.Name, key) {
			key = e.Name
		}
	}
	if k.checksum, k.provable = checksumOf(c.w, mirror, key, existing); !k.provable {
		return k, nil
	}
	if k.mark, err = r.mark(ctx); err != nil {
		return k, err
	}
	if k.now.identity, err = r.identity(ctx, name); err != nil {
		return k, err
	}
	k.now.columns = columnsPrint(cols, existing)
	k.last, err = readState(ctx, c.db, mirror.Full())
	return k, err
}

// decide says why the table is copied in full, or whyIncremental when the
// mirror is proven to be what the last clone left: the same Engine table
// storage and columns, and the same rows, highest key and checksum.
func (c *copier) decide(ctx context.Context, tx warehouse.Tx, p mirrorPlan, k kept) (string, error) {
	switch {
	case c.full:
		return whyForced, nil
	case p.created:
		return whyCreated, nil
	case len(p.added) > 0:
		return whyAdded, nil
	case !k.captured:
		return whyNoCapture, nil
	case !k.provable:
		return whyNoChecksum, nil
	case k.last == nil:
		return whyFirst, nil
	case k.last.proof.identity != k.now.identity || markWentBack(k.last.mark, k.mark):
		return whyRebuilt, nil
	case k.last.proof.columns != k.now.columns:
		return whyColumns, nil
	}
	var args []any
	if k.checksum.binds {
		args = []any{k.last.proof.checksum}
	}
	rows, high, sum, err := measureMirror(ctx, tx, k.checksum.check, args...)
	if err != nil {
		return "", err
	}
	if rows != k.last.rows || high != k.last.high || sum != k.last.proof.checksum {
		return whyDiffers, nil
	}
	return whyIncremental, nil
}

// catchUp copies the rows changed since the last clone into the mirror:
// it deletes the mirror rows of every key logged since, and of every range
// of keys a purge logged, then loads the rows those keys and ranges have
// now (and, on an append-only table, the rows past the highest key). It
// returns the rows loaded.
func (c *copier) catchUp(ctx context.Context, tx warehouse.Tx, r *readConn, name string, mirror warehouse.Table,
	cols []column, load []warehouse.Column, k kept, progress func(int64)) (int64, error) {
	ch, err := r.changed(ctx, name, k.last.mark)
	if err != nil {
		return 0, fmt.Errorf("reading the Engine DB table's changes: %w", err)
	}
	key := warehouse.Column{Type: k.capture.key.typ}
	for _, l := range load {
		if strings.EqualFold(l.Name, k.capture.key.Name) {
			key.Name = l.Name
		}
	}
	q, args, err := changedRowsQuery(c.db, name, cols, k.capture, k.last.mark, k.last.high, ch.spans)
	if err != nil {
		return 0, err
	}
	if err := deleteKeys(ctx, tx, c.w, mirror, key, ch.keys); err != nil {
		return 0, err
	}
	if err := deleteSpans(ctx, tx, c.w, mirror, key, ch.spans); err != nil {
		return 0, err
	}
	rs, err := r.read(ctx, cols, q, args...)
	if err != nil {
		return 0, fmt.Errorf("reading the Engine DB table: %w", err)
	}
	defer rs.close()
	return tx.BulkLoad(ctx, mirror, load, stream(ctx, []rowScanner{rs}, len(cols), progress))
}

// load writes every row of the Engine table, whose columns are cols, into
// the load columns of mirror in the open transaction tx, and returns how
// many it wrote. Between two PostgreSQL servers the rows go from one COPY to
// the other as text; otherwise they are read in batches and bulk loaded,
// each of the snapshots of reads reading one range of the table's integer
// key when it has one, the first alone otherwise.
func (c *copier) load(ctx context.Context, tx warehouse.Tx, reads []*readConn, name string, cols []column, k kept,
	mirror warehouse.Table, load []warehouse.Column, progress func(rows int64)) (int64, error) {
	query := selectQuery(c.db, name, cols)
	if tc, ok := warehouse.TextCopierOf(tx); ok && c.db.Capabilities().CopyOut {
		return copyText(ctx, c.db, query, tc, mirror, load, progress)
	}
	var sets []rowScanner
	defer func() {
		for _, rs := range sets {
			rs.close()
		}
	}()
	ranges, err := keyRanges(ctx, reads, name, cols, k)
	if err != nil {
		return 0, fmt.Errorf("reading the Engine DB table's keys: %w", err)
	}
	if ranges == nil {
		ranges = []keyRange{{}}
	}
	for i, kr := range ranges {
		q, args := query, []any(nil)
		if kr.key != "" {
			q += " WHERE " + kr.key + " BETWEEN $1 AND $2"
			args = []any{kr.lo, kr.hi}
		}
		rs, err := reads[i].read(ctx, cols, q, args...)
		if err != nil {
			return 0, fmt.Errorf("reading the Engine DB table: %w", err)
		}
		sets = append(sets, rs)
	}
	if pl, ok := warehouse.PartLoaderOf(tx); ok {
		return pl.BulkLoadParts(ctx, mirror, load, parts(sets, len(cols), progress))
	}
	return tx.BulkLoad(ctx, mirror, load, stream(ctx, sets, len(cols), progress))
}

// keyRange is the rows of one reader: those whose key (quoted) lies from
// lo to hi; all rows when key is "".
type keyRange struct {
	key    string
	lo, hi int64
}

// keyRanges splits the table's integer primary key, from its lowest to its
// highest value in the snapshot, into one range of equal width per read;
// nil when the table has no such key, or too few rows to be worth it.
func keyRanges(ctx context.Context, reads []*readConn, name string, cols []column, k kept) ([]keyRange, error) {
	if len(reads) < 2 || !k.captured || k.capture.key.typ != warehouse.BigInt {
		return nil, nil
	}
	key := `"` + strings.ReplaceAll(k.capture.key.Name, `"`, `""`) + `"`
	var lo, hi sql.NullInt64
	q := "SELECT MIN(" + key + "), MAX(" + key + ") FROM (" + selectQuery(reads[0].db, name, []column{k.capture.key}) + ") AS k"
	if err := reads[0].row(ctx, q).Scan(&lo, &hi); err != nil {
		return nil, err
	}
	n := int64(len(reads))
	if !lo.Valid || hi.Int64-lo.Int64 < n*batchRows {
		return nil, nil
	}
	width := (hi.Int64-lo.Int64)/n + 1
	out := make([]keyRange, n)
	for i := range out {
		out[i] = keyRange{key: key, lo: lo.Int64 + int64(i)*width, hi: lo.Int64 + int64(i+1)*width - 1}
	}
	out[n-1].hi = hi.Int64
	return out, nil
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
