package retention

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
)

// deleter deletes a plan's batches, one transaction each.
type deleter struct {
	db   *engine.DB
	plan *plan
	log  *slog.Logger
	// deleted counts the rows deleted per table.
	deleted map[string]int64
	batches int
	// kept counts the planned runs their batch found protected.
	kept int
	// files counts the log files removed with their attempts.
	files int64
	// hold is how long a transaction holds the write lock, about, before
	// its batch goes on in the next (0: a batch is one transaction); pace
	// is how many rows the next transaction takes (0, at first: one
	// piece).
	hold time.Duration
	pace int64
}

// done is what one batch deleted: rows per table, the keys' ranges, and
// the files of its attempts.
type done struct {
	rows  map[string]int64
	spans map[string][2]int64
	files []string
	kept  int
}

// note adds a deleted key of the table to the batch's range of it.
func (d *done) note(name string, key int64) {
	s, ok := d.spans[name]
	if !ok {
		d.spans[name] = [2]int64{key, key}
		return
	}
	d.spans[name] = [2]int64{min(s[0], key), max(s[1], key)}
}

// run deletes every batch in order, each in transactions that are a
// purge's (engine.ForPurge), then the log files of its attempts. A batch
// is one transaction, unless the deleter holds each for a time (hold): its
// transactions then take whole pieces of it (pieces), as many as the time
// allows, and pause after each as long as it held the write lock.
func (d *deleter) run(ctx context.Context) error {
	ctx = engine.ForPurge(ctx)
	for i, b := range d.plan.batches {
		parts, rows := b.pieces(d.plan)
		for from, j := 0, 1; from < len(parts); j++ {
			to, n := from, int64(0)
			for to < len(parts) && (to == from || d.hold == 0 || n < d.pace) {
				n += rows[to]
				to++
			}
			held, err := d.part(ctx, joined(parts[from:to]), i, j)
			if err != nil {
				return err
			}
			d.adapt(n, held)
			from = to
			if last := i+1 == len(d.plan.batches) && from == len(parts); !last && d.hold > 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(held):
				}
			}
		}
		d.batches++
	}
	return nil
}

// part deletes part of batch i (all of it, or a run of its pieces) in its
// transaction j, and returns how long the transaction took.
func (d *deleter) part(ctx context.Context, b batch, i, j int) (time.Duration, error) {
	var bd done
	var held time.Duration
	err := d.db.Tx(ctx, func(tx *engine.Tx) error {
		start := time.Now()
		defer func() { held = time.Since(start) }()
		bd = done{rows: map[string]int64{}, spans: map[string][2]int64{}}
		var err error
		if b.table != nil {
			err = d.rows(ctx, tx, b.table.table, b.ids, &bd)
		} else {
			err = d.units(ctx, tx, b.runs, &bd)
		}
		if err != nil {
			return err
		}
		if err := d.logRanges(ctx, tx, bd); err != nil {
			return err
		}
		for _, point := range []string{"retention.batch", "retention.batch." + strconv.Itoa(i+1), "retention.batch." + strconv.Itoa(i+1) + "." + strconv.Itoa(j)} {
			if err := fault.Point(point); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if exit.CodeOf(err) == exit.Unexpected {
			err = exit.Wrap(exit.EngineDB, err, "could not delete batch %d of %d of the purge (the batches before it, and what of it was committed, stay deleted)", i+1, len(d.plan.batches))
		}
		return 0, err
	}
	d.kept += bd.kept
	for name, n := range bd.rows {
		d.deleted[name] += n
	}
	if bd.kept > 0 {
		d.log.Warn("runs came to be relied on after the purge planned them: they are kept", "runs", bd.kept, "batch", i+1)
	}
	if err := fault.Point("retention.after_batch"); err != nil {
		return 0, err
	}
	n, err := removeFiles(bd.files)
	d.files += n
	return held, err
}

// adapt sets how many rows the next transaction takes (pace), when the
// deleter holds each for a time: as many as the last one's rate would
// delete in that time, at most four times the last one's.
func (d *deleter) adapt(rows int64, held time.Duration) {
	if d.hold <= 0 {
		return
	}
	next := int64(float64(rows) * float64(d.hold) / float64(max(held, time.Microsecond)))
	d.pace = max(1, min(next, 4*rows))
}

// holdWriteLock is how long a transaction of a purge of a SingleWriter
// Engine DB (SQLite) holds the write lock, about, before its batch goes on
// in the next one: every other writer, a running task's, waits for it. The
// pause after each transaction as long as it held the lock keeps the lock
// free for writers of other processes, whose busy handler tries again
// after sleeps of up to 100 ms, half of the time.
const holdWriteLock = 10 * time.Millisecond

// rows deletes rows of a table by id.
func (d *deleter) rows(ctx context.Context, tx *engine.Tx, t table, ids []int64, bd *done) error {
	for part := range slices.Chunk(ids, chunk) {
		var a args
		where := t.key + " " + a.list(part)
		if err := d.delete(ctx, tx, t, "", where, a, bd); err != nil {
			return err
		}
	}
	return nil
}

// units deletes the units of the runs that may still go: each is checked
// again, in the batch's transaction (whose lock, on PostgreSQL, on the
// runs' rows keeps out whatever would come to refer to them), to be ended
// before the cut-off and not protected, not referred to by a row that
// stays, and to hold the rows the plan counted (and the archive holds).
// A run that fails a check is kept, with the runs its rows refer to.
func (d *deleter) units(ctx context.Context, tx *engine.Tx, runs []int64, bd *done) error {
	going := map[int64]bool{}
	var refs []reference
	for part := range slices.Chunk(runs, chunk) {
		if !d.db.Capabilities().SingleWriter {
			var a args
			q := "SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID " + a.list(part) + " FOR UPDATE"
			if err := each(ctx, tx, q, a, nil); err != nil {
				return err
			}
		}
		ok, err := d.plan.rules.purgeable(ctx, tx, part)
		if err != nil {
			return err
		}
		for id := range ok {
			going[id] = true
		}
		var a args
		list := a.list(part)
		more, err := references(ctx, tx, list, a)
		if err != nil {
			return err
		}
		refs = append(refs, more...)
	}
	for i, u := range unitTables {
		for part := range slices.Chunk(runs, chunk) {
			var a args
			q := u.countsQuery(a.list(part))
			err := each(ctx, tx, q, a, func(rows *sql.Rows) error {
				var run, n int64
				if err := rows.Scan(&run, &n); err != nil {
					return err
				}
				if going[run] && d.plan.units[run][i] != n {
					delete(going, run)
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	keepReferenced(going, refs)
	final := make([]int64, 0, len(going))
	for _, id := range runs {
		if going[id] {
			final = append(final, id)
		}
	}
	bd.kept = len(runs) - len(final)
	for _, u := range unitTables {
		for part := range slices.Chunk(final, chunk) {
			var a args
			where := u.members(a.list(part))
			if err := d.delete(ctx, tx, u.table, u.file, where, a, bd); err != nil {
				return err
			}
		}
	}
	return nil
}

// delete deletes the rows of the table that where selects, noting each key
// and the file column's value.
func (d *deleter) delete(ctx context.Context, tx *engine.Tx, t table, file, where string, a args, bd *done) error {
	if t.key == "" {
		res, err := tx.ExecContext(ctx, "DELETE FROM "+t.name+" WHERE "+where, a...)
		if err != nil {
			return fmt.Errorf("deleting from %s: %w", t.name, err)
		}
		n, err := res.RowsAffected()
		bd.rows[t.name] += n
		return err
	}
	returning := t.key
	if file != "" {
		returning += ", " + file
	}
	return each(ctx, tx, "DELETE FROM "+t.name+" WHERE "+where+" RETURNING "+returning, a, func(rows *sql.Rows) error {
		var key int64
		var path sql.NullString
		dest := []any{&key}
		if file != "" {
			dest = append(dest, &path)
		}
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("deleting from %s: %w", t.name, err)
		}
		bd.rows[t.name]++
		bd.note(t.name, key)
		if path.String != "" {
			bd.files = append(bd.files, path.String)
		}
		return nil
	})
}

// logRanges logs, for cloning, the range of keys the batch deleted from
// each table (engine.ChangeLog.LogRange).
func (d *deleter) logRanges(ctx context.Context, tx *engine.Tx, bd done) error {
	stmt := d.db.ChangeLog().LogRange
	for _, name := range Tables() {
		s, ok := bd.spans[name]
		if !ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, stmt, name, strconv.FormatInt(s[0], 10), strconv.FormatInt(s[1], 10)); err != nil {
			return fmt.Errorf("logging the keys deleted from %s for cloning: %w", name, err)
		}
	}
	return nil
}
