package clone

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Incremental cloning. The Engine DB logs the key of every row its cloned
// tables insert, update or delete in CLONE_CHANGES (ENGINE migration 0022):
// on SQLite with a sequence that grows in commit order, since one writer
// commits at a time; on PostgreSQL with the writing transaction's id, read
// against the snapshot of the clone before, so a transaction that commits
// late is never missed. An append-only table on SQLite logs only its
// deletions (retention's): its new rows are those past the mirror's highest
// key. CLONE_STATE holds what each clone left in each mirror (its rows, its
// highest key, the change mark it read, and its proof: the Engine table's
// storage identity, both tables' columns and a checksum of the mirror's
// rows), and a table is copied incrementally only when the mirror and the
// Engine table are still exactly that.

// Why a table was copied in full or incrementally, as the JSON output and
// the DEBUG log say. A request field is named {field} (exit.RequestFields),
// for the front end to write its own way.
const (
	whyIncremental = "the mirror is as the last clone left it"
	whyForced      = "a full copy was asked for ({full})"
	whyFirst       = "no clone of this mirror is recorded"
	whyCreated     = "the mirror was created"
	whyAdded       = "columns were added to the mirror"
	whyNoCapture   = "the Engine DB table has no change capture"
	whyNoChecksum  = "this warehouse cannot checksum a mirror"
	whyRebuilt     = "the Engine DB table was rebuilt or restored since the last clone"
	whyColumns     = "the columns changed since the last clone"
	whyDiffers     = "the mirror differs from what the last clone left (rows, highest key, checksum or write guard)"
)

// keyBatch is how many keys one DELETE of changed rows binds.
const keyBatch = 250

// capture is how an Engine table's changes are found.
type capture struct {
	key column // its one primary-key column
	// appendOnly: only deletions are logged (SQLite); new rows are those
	// past the highest key.
	appendOnly bool
}

// state is what a clone left in a mirror, as CLONE_STATE records it.
type state struct {
	rows  int64
	high  string // the mirror's highest key, as text; "" when empty
	mark  string // the change mark read before the copy
	proof proof
}

// proof is what must be the same for a mirror to be trusted.
type proof struct {
	identity string // the Engine table's storage
	columns  string // the Engine table's and the mirror's columns
	checksum string // the mirror's rows
}

func (p proof) String() string { return p.identity + "\n" + p.columns + "\n" + p.checksum }

func parseProof(s string) proof {
	parts := strings.SplitN(s, "\n", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return proof{identity: parts[0], columns: parts[1], checksum: parts[2]}
}

// readState returns the recorded state of mirror, or nil.
func readState(ctx context.Context, db *engine.DB, mirror string) (*state, error) {
	var s state
	var high sql.NullString
	var p string
	err := db.QueryRowContext(ctx, "SELECT ROW_COUNT, HIGH_KEY, MARK, PROOF FROM CLONE_STATE WHERE MIRROR = $1", mirror).
		Scan(&s.rows, &high, &s.mark, &p)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the clone's state of the mirror from CLONE_STATE: %w", err)
	}
	s.high, s.proof = high.String, parseProof(p)
	return &s, nil
}

// writeState records what the clone left in mirror, and drops the change
// log entries of the table that every recorded mirror of it has copied.
func writeState(ctx context.Context, db *engine.DB, table, mirror string, s state) error {
	high := sql.NullString{String: s.high, Valid: s.high != ""}
	logged := strings.ToUpper(table)
	prune := db.ChangeLog().Prune
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM CLONE_STATE WHERE MIRROR = $1", mirror); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO CLONE_STATE (MIRROR, ENGINE_TABLE, ROW_COUNT, HIGH_KEY, MARK, PROOF, CLONED_AT)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, mirror, logged, s.rows, high, s.mark, s.proof.String(), tx.TimeArg(time.Now())); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, prune, logged)
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the clone's state of the mirror in CLONE_STATE: %w", err)
	}
	return nil
}

// readConn is an Engine DB snapshot for a table's copy: its change mark,
// changed keys and rows all come from it.
type readConn struct {
	db   *engine.DB
	snap *engine.Snapshot
}

func beginRead(ctx context.Context, db *engine.DB) (*readConn, error) {
	snap, err := db.BeginSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	return &readConn{db: db, snap: snap}, nil
}

// readers is how many Engine DB connections read the rows of a full copy,
// each a range of the table's integer key: one reader cannot keep up with
// DuckDB's appender, two can.
const readers = 2

// beginReads opens n read connections holding one and the same snapshot,
// the first of them the one a table's copy reads its state from. On
// PostgreSQL the first exports its snapshot and the others take it; on
// SQLite, which cannot share a snapshot, each starts its own while a write
// lock held by one more connection keeps any commit out, so all see the
// same last commit. The lock is given back once they have started.
func beginReads(ctx context.Context, db *engine.DB, n int) (rs []*readConn, err error) {
	defer func() {
		if err != nil {
			endReads(rs)
			rs = nil
		}
	}()
	if db.Capabilities().SharedSnapshot {
		r, err := beginRead(ctx, db)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
		var snap string
		if n > 1 {
			if err := r.row(ctx, "SELECT pg_export_snapshot()").Scan(&snap); err != nil {
				return rs, fmt.Errorf("exporting the read snapshot: %w", err)
			}
		}
		for len(rs) < n {
			r, err := beginRead(ctx, db)
			if err != nil {
				return rs, err
			}
			rs = append(rs, r)
			if _, err := r.snap.ExecContext(ctx, "SET TRANSACTION SNAPSHOT '"+snap+"'"); err != nil {
				return rs, fmt.Errorf("taking the exported read snapshot: %w", err)
			}
		}
		return rs, nil
	}
	lock, err := db.SQL().Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return nil, fmt.Errorf("holding commits back while the read snapshots start: %w", err)
	}
	defer func() { _, _ = lock.ExecContext(context.Background(), "ROLLBACK") }()
	for len(rs) < n {
		r, err := beginRead(ctx, db)
		if err != nil {
			return rs, err
		}
		rs = append(rs, r)
		var tables int64
		if err := r.row(ctx, "SELECT COUNT(*) FROM sqlite_master").Scan(&tables); err != nil {
			return rs, fmt.Errorf("starting a read snapshot: %w", err)
		}
	}
	return rs, nil
}

// endReads ends every snapshot of rs.
func endReads(rs []*readConn) {
	for _, r := range rs {
		r.end()
	}
}

// end rolls the snapshot back and gives the connection back.
func (r *readConn) end() { r.snap.End() }

func (r *readConn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return r.snap.QueryContext(ctx, q, args...)
}

func (r *readConn) row(ctx context.Context, q string, args ...any) *sql.Row {
	return r.snap.QueryRowContext(ctx, q, args...)
}

// mark reads the change mark of the snapshot: the last change sequence on
// SQLite, the snapshot itself on PostgreSQL.
func (r *readConn) mark(ctx context.Context) (string, error) {
	var m string
	err := r.row(ctx, r.db.ChangeLog().Mark).Scan(&m)
	return m, err
}

// identity reads the Engine table's storage: its root page on SQLite (a
// rebuilt table has a new one); on PostgreSQL the server's system
// identifier, the database, the table's oid and its file node (a rewrite,
// a truncation or a restore changes one of them).
func (r *readConn) identity(ctx context.Context, table string) (string, error) {
	cl := r.db.ChangeLog()
	var id string
	err := r.row(ctx, cl.Identity, cl.TableArgs(table)...).Scan(&id)
	return id, err
}

// capture finds how the table's changes are logged: its one primary-key
// column and its clone triggers. ok is false when it has neither.
func (r *readConn) capture(ctx context.Context, table string, cols []column) (capture, bool, error) {
	cl := r.db.ChangeLog()
	keys, err := r.names(ctx, cl.PrimaryKey, cl.TableArgs(table)...)
	if err != nil || len(keys) != 1 {
		return capture{}, false, err
	}
	triggers, err := r.names(ctx, cl.Triggers, cl.TableArgs(table)...)
	if err != nil || len(triggers) == 0 {
		return capture{}, false, err
	}
	var c capture
	found := false
	for _, col := range cols {
		if strings.EqualFold(col.Name, keys[0]) {
			c.key, found = col, true
		}
	}
	if !found {
		return capture{}, false, nil
	}
	if cl.InsertsByWatermark {
		c.appendOnly = true
		for _, t := range triggers {
			if strings.HasSuffix(strings.ToLower(t), "_insert") {
				c.appendOnly = false
			}
		}
	}
	return c, true, nil
}

func (r *readConn) names(ctx context.Context, q string, args ...any) ([]string, error) {
	return engine.Strings(ctx, r.snap, q, args...)
}

// changedSince returns the condition on CLONE_CHANGES of the table's
// changes past the mark, and its arguments.
func changedSince(db *engine.DB, table, mark string) (string, []any) {
	return db.ChangeLog().Since, []any{strings.ToUpper(table), mark}
}

// changes are what was logged of a table past a mark: the keys logged one
// by one, and the ranges of keys a purge logged, sorted and merged where
// they overlap or touch.
type changes struct {
	keys  []any
	spans []keySpan
}

// keySpan is the keys from lo to hi, integers.
type keySpan struct{ lo, hi int64 }

// changed returns the changes logged past the mark.
func (r *readConn) changed(ctx context.Context, table, mark string) (changes, error) {
	var out changes
	cond, args := changedSince(r.db, table, mark)
	rows, err := r.query(ctx, "SELECT DISTINCT ROW_KEY, LAST_KEY FROM CLONE_CHANGES WHERE "+cond, args...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		var k, last any
		if err := rows.Scan(&k, &last); err != nil {
			return out, err
		}
		if b, ok := k.([]byte); ok {
			k = string(b)
		}
		if last == nil {
			out.keys = append(out.keys, k)
			continue
		}
		lo, err1 := integerKey(k)
		hi, err2 := integerKey(last)
		if err := errors.Join(err1, err2); err != nil {
			return out, fmt.Errorf("a range of keys logged in CLONE_CHANGES: %w", err)
		}
		out.spans = append(out.spans, keySpan{lo, hi})
	}
	out.spans = mergeSpans(out.spans)
	return out, rows.Err()
}

// integerKey reads a logged key as an integer: SQLite logs integers,
// PostgreSQL their text.
func integerKey(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	case []byte:
		return strconv.ParseInt(string(x), 10, 64)
	}
	return 0, fmt.Errorf("%v is not a whole number", v)
}

// mergeSpans sorts spans and merges those that overlap or touch.
func mergeSpans(spans []keySpan) []keySpan {
	slices.SortFunc(spans, func(a, b keySpan) int { return cmp.Compare(a.lo, b.lo) })
	var out []keySpan
	for _, s := range spans {
		if n := len(out); n > 0 && s.lo <= out[n-1].hi+1 {
			out[n-1].hi = max(out[n-1].hi, s.hi)
			continue
		}
		out = append(out, s)
	}
	return out
}

// changedRowsQuery reads the rows of the keys logged one by one, those of
// the logged ranges, and on an append-only table those past the highest
// key. Ranges need an integer key.
func changedRowsQuery(db *engine.DB, table string, cols []column, c capture, mark, high string, spans []keySpan) (string, []any, error) {
	key := `"` + strings.ReplaceAll(c.key.Name, `"`, `""`) + `"`
	logged := "ROW_KEY"
	if c.key.typ == warehouse.BigInt {
		logged = db.ChangeLog().IntegerKey
	} else if len(spans) > 0 {
		return "", nil, fmt.Errorf("ranges of keys are logged for %s, whose key %s is not an integer", table, c.key.Name)
	}
	cond, args := changedSince(db, table, mark)
	q := selectQuery(db, table, cols) + " WHERE " + key + " IN (SELECT " + logged + " FROM CLONE_CHANGES WHERE " + cond + " AND LAST_KEY IS NULL)"
	for _, s := range spans {
		args = append(args, s.lo, s.hi)
		q += " OR " + key + " BETWEEN $" + strconv.Itoa(len(args)-1) + " AND $" + strconv.Itoa(len(args))
	}
	if c.appendOnly {
		n, _ := strconv.ParseInt(high, 10, 64)
		args = append(args, n)
		q += " OR " + key + " > $" + strconv.Itoa(len(args))
	}
	return q, args, nil
}

// checksum is how a warehouse proves a mirror's rows unchanged. Each probe
// gives the mirror's rows, highest key and fingerprint. left is run in the
// copy's transaction, before its commit, and gives the fingerprint
// recorded; check, run before an incremental copy, gives the same
// fingerprint when no row changed since, and is given the recorded one
// where binds is set.
type checksum struct {
	check, left probe
	binds       bool
}

// probe is one measure of a mirror: a query returning its rows, highest key
// and fingerprint, or, on PostgreSQL, its write guard checked or left.
type probe struct {
	query   string
	guard   *pgGuard
	leaving bool // the guard's leave, not its check
}

// checksumOf returns how the warehouse w proves the mirror, whose key and
// columns are given as the mirror names them; ok is false on a warehouse
// that cannot. DuckDB sums a hash of every row, a columnar pass that costs
// little. PostgreSQL reads no row: each mirror has a write guard (see
// pgGuard) that counts every statement written by hand.
func checksumOf(w warehouse.Warehouse, mirror warehouse.Table, key string, existing []warehouse.ColumnInfo) (checksum, bool) {
	switch caps := w.Capabilities(); {
	case caps.RowHash:
		var cols []string
		for _, c := range existing {
			cols = append(cols, w.Quote(c.Name))
		}
		q := "SELECT count(*), CAST(max(" + w.Quote(key) + ") AS VARCHAR), CAST(coalesce(sum(hash(" + strings.Join(cols, ", ") + ")), 0) AS VARCHAR)" +
			" FROM " + warehouse.Qualify(w, mirror)
		return checksum{check: probe{query: q}, left: probe{query: q}}, true
	case caps.WriteGuard:
		g := newPGGuard(w, mirror, key)
		return checksum{check: probe{guard: g}, left: probe{guard: g, leaving: true}, binds: true}, true
	}
	return checksum{}, false
}

// measureMirror runs the probe in the warehouse transaction; args are the
// recorded fingerprint when the checksum binds it.
func measureMirror(ctx context.Context, tx warehouse.Tx, p probe, args ...any) (rows int64, high, fingerprint string, err error) {
	switch {
	case p.guard != nil && p.leaving:
		return p.guard.leave(ctx, tx)
	case p.guard != nil:
		recorded, _ := args[0].(string)
		return p.guard.check(ctx, tx, recorded)
	}
	var h sql.NullString
	if err := queryRow(ctx, tx, p.query, args, &rows, &h, &fingerprint); err != nil {
		return 0, "", "", err
	}
	return rows, h.String, fingerprint, nil
}

// columnsPrint describes the Engine table's and the mirror's columns.
func columnsPrint(cols []column, existing []warehouse.ColumnInfo) string {
	var b strings.Builder
	for _, c := range cols {
		fmt.Fprintf(&b, "%s %d,", strings.ToUpper(c.Name), c.typ)
	}
	b.WriteString(" |")
	for _, c := range existing {
		fmt.Fprintf(&b, " %s %s,", strings.ToUpper(c.Name), strings.ToUpper(c.Type))
	}
	return b.String()
}

// deleteKeys deletes the mirror rows of keys, keyBatch keys a statement.
func deleteKeys(ctx context.Context, tx warehouse.Tx, w warehouse.Warehouse, mirror warehouse.Table, key warehouse.Column, keys []any) error {
	for len(keys) > 0 {
		n := min(len(keys), keyBatch)
		marks := make([]string, n)
		for i := range n {
			marks[i] = w.Placeholder(i+1, key.Type)
		}
		q := "DELETE FROM " + warehouse.Qualify(w, mirror) + " WHERE " + w.Quote(key.Name) + " IN (" + strings.Join(marks, ", ") + ")"
		if _, err := tx.Exec(ctx, q, keyArgs(keys[:n], key.Type)...); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// deleteSpans deletes the mirror rows of the ranges of keys, one statement
// a range.
func deleteSpans(ctx context.Context, tx warehouse.Tx, w warehouse.Warehouse, mirror warehouse.Table, key warehouse.Column, spans []keySpan) error {
	q := "DELETE FROM " + warehouse.Qualify(w, mirror) + " WHERE " + w.Quote(key.Name) + " BETWEEN " +
		w.Placeholder(1, key.Type) + " AND " + w.Placeholder(2, key.Type)
	for _, s := range spans {
		if _, err := tx.Exec(ctx, q, s.lo, s.hi); err != nil {
			return err
		}
	}
	return nil
}

// keyArgs binds logged keys as the mirror's key type: PostgreSQL logs them
// as text.
func keyArgs(keys []any, t warehouse.Type) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = k
		if s, ok := k.(string); ok && t == warehouse.BigInt {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				out[i] = n
			}
		}
	}
	return out
}

// markWentBack reports whether a PostgreSQL snapshot mark is older than the
// recorded one: transaction ids only grow on one server, so a smaller one
// means the Engine DB was restored elsewhere. SQLite marks never go back
// but in a restored file, whose CLONE_STATE went back with it.
func markWentBack(recorded, now string) bool {
	xmax := func(m string) (uint64, bool) {
		parts := strings.Split(m, ":")
		if len(parts) != 3 {
			return 0, false
		}
		n, err := strconv.ParseUint(parts[1], 10, 64)
		return n, err == nil
	}
	a, ok1 := xmax(recorded)
	b, ok2 := xmax(now)
	return ok1 && ok2 && b < a
}
