package clone

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The write guard of a PostgreSQL mirror: how a clone proves, without
// reading the mirror's rows, that nobody wrote it since the last clone, with
// nothing in the warehouse schema but the mirrors themselves and what hangs
// on them (the seed: "Cloning writes nothing else: only these copies, only
// in that schema").
//
// Each mirror has a sequence owned by its key column (guardSequence, dropped
// with the column or the mirror) and a statement-level trigger
// (guardTrigger), enabled ALWAYS so that session_replication_role = replica
// does not silence it, firing before every INSERT, UPDATE, DELETE and
// TRUNCATE (COPY included). The trigger calls the schema's one guard
// function (guardFunction) with the sequence's oid, and the function counts
// the statement by taking the sequence's next value, unless the writing
// transaction is a clone's incremental copy (cloningSetting holds that
// transaction's id) or the sequence is gone (the next check then fails,
// and the copy sets it up again). The proof recorded is the guard's print:
// the mirror's oid and file node (a rewrite, a restored dump or a table
// made anew change them), the function's and the trigger's catalog rows
// (xmin, which any CREATE OR REPLACE, ALTER … DISABLE or ENABLE changes),
// the sequence's oid, the count of statements (the sequence's last value),
// the count of the clone's own copies that changed the mirror's rows (kept
// in the sequence's comment, which a copy's transaction writes or rolls
// back with its rows: a sequence's value would not roll back), and the
// mirror's rows. The check before an incremental copy locks the
// mirror against writers (so a write by hand still open in another session
// is waited for, and counted, first), reads the catalog and that count, and
// the highest key through the key's index the clone creates; it never reads
// the rows. After an incremental copy the mirror's rows are the recorded
// ones plus the rows this transaction inserted less those it deleted, as
// the server's per-transaction counters say (pg_stat_get_xact_tuples_*);
// after a full copy they are counted.
//
// Mirrors guarded by etl-craft before 0.2 counted into a table of the
// schema, oldGuardTable; the first clone that sets a guard up drops it.

const (
	guardFunction = "ETL_CRAFT_MIRROR_WRITTEN"
	guardTrigger  = "ETL_CRAFT_MIRROR_WRITES"
	// guardSequenceSuffix ends the name of a mirror's guard sequence.
	guardSequenceSuffix = "$WRITES"
	// oldGuardTable is where guards before 0.2 counted, one row per mirror.
	oldGuardTable = "ETL_CRAFT_MIRROR_WRITES"
	// oldGuardColumns are its columns, as the catalog describes them: a
	// table of that name with others is not etl-craft's, and is left alone.
	oldGuardColumns = "TABLE_OID oid, WRITES bigint"
	// guardTriggerType is pg_trigger.tgtype of a BEFORE INSERT OR DELETE OR
	// UPDATE OR TRUNCATE FOR EACH STATEMENT trigger.
	guardTriggerType = 2 | 4 | 8 | 16 | 32
	// cloningSetting holds, for the rest of an incremental copy's
	// transaction, that transaction's id: its writes are not counted.
	cloningSetting = "etl_craft.cloning"
	// proofSetting holds, for the rest of an incremental copy's transaction,
	// the mirror's oid, its recorded rows and the transaction's row counters
	// when it was proven.
	proofSetting = "etl_craft.proof"
	// guardPrintPrefix starts every guard print, so a proof recorded before
	// the guard existed never matches one.
	guardPrintPrefix = "guard "
)

// guardSequence names a mirror's guard sequence: the mirror's name and
// guardSequenceSuffix, within PostgreSQL's 63 bytes (a longer mirror name is
// cut and keeps a hash of the whole). The sequence is found by its
// ownership, not its name, which only has to be free.
func guardSequence(mirror string) string {
	name := mirror + guardSequenceSuffix
	if len(name) <= 63 {
		return name
	}
	sum := fnv.New32a()
	sum.Write([]byte(mirror))
	tail := fmt.Sprintf("_%08x%s", sum.Sum32(), guardSequenceSuffix)
	return strings.ToValidUTF8(mirror[:63-len(tail)], "") + tail
}

// pgGuard is the write guard of one PostgreSQL mirror.
type pgGuard struct {
	mirror   string // the mirror, schema-qualified and quoted
	sequence string // its guard sequence, likewise
	function string // guardFunction, likewise
	oldTable string // oldGuardTable, likewise
	trigger  string // guardTrigger, quoted
	key      string // the mirror's key column, as the mirror names it
	quoted   string // key, quoted
	locked   bool   // the copy's transaction holds the mirror's lock
}

func newPGGuard(w warehouse.Warehouse, mirror warehouse.Table, key string) *pgGuard {
	in := func(name string) string {
		return warehouse.Qualify(w, warehouse.Table{Schema: mirror.Schema, Name: name})
	}
	return &pgGuard{mirror: in(mirror.Name), sequence: in(guardSequence(mirror.Name)), function: in(guardFunction),
		oldTable: in(oldGuardTable), trigger: w.Quote(guardTrigger), key: key, quoted: w.Quote(key)}
}

// guardBody is guardFunction's source: it counts the statement in the
// sequence whose oid the trigger gives.
const guardBody = `
BEGIN
	IF TG_NARGS = 1
			AND current_setting('` + cloningSetting + `', true) IS DISTINCT FROM CAST(txid_current() AS text)
			AND EXISTS (SELECT 1 FROM pg_class WHERE oid = CAST(TG_ARGV[0] AS oid) AND relkind = 'S') THEN
		PERFORM nextval(CAST(CAST(TG_ARGV[0] AS oid) AS regclass));
	END IF;
	RETURN NULL;
END
`

// guardState is what the catalog says of a mirror's guard.
type guardState struct {
	oid      int64
	filenode int64          // the mirror's file node, which a TRUNCATE changes
	print    sql.NullString // oid, file node, function, trigger and sequence; NULL when one is not as the clone made it
	sequence int64          // the guard sequence owned by the key column; 0 when there is none
	copies   string         // the sequence's comment: the clone's copies that changed rows
	function bool           // guardFunction is as the clone made it
	trigger  bool           // so is the mirror's trigger, enabled ALWAYS, counting into the sequence
	indexed  bool           // a btree index leads with the key
}

func (s guardState) complete() bool { return s.print.Valid && s.indexed }

// state reads the guard from the catalog in one query.
func (g *pgGuard) state(ctx context.Context, tx warehouse.Tx) (guardState, error) {
	q := `SELECT c.oid::bigint, c.relfilenode::bigint,
		c.oid::text || ' ' || c.relfilenode::text || ' ' || p.xmin::text || ' ' || t.oid::text || ':' || t.xmin::text || ' ' || s.oid::text,
		coalesce(s.oid::bigint, 0), coalesce(obj_description(s.oid, 'pg_class'), '0'), p.oid IS NOT NULL, t.oid IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_index i
			JOIN pg_class ic ON ic.oid = i.indexrelid
			JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'btree'
			JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0] AND a.attname = $4
			WHERE i.indrelid = c.oid AND i.indisvalid AND i.indpred IS NULL)
	FROM pg_class c
	LEFT JOIN LATERAL (SELECT sc.oid FROM pg_depend d
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = d.refobjsubid AND a.attname = $4
		JOIN pg_class sc ON sc.oid = d.objid AND sc.relkind = 'S'
		WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid AND d.deptype = 'a'
		ORDER BY sc.oid LIMIT 1) s ON true
	LEFT JOIN pg_proc p ON p.oid = to_regprocedure($2) AND p.prosrc = $3 AND p.prosecdef
	LEFT JOIN pg_trigger t ON t.tgrelid = c.oid AND t.tgname = $5 AND t.tgfoid = p.oid
		AND t.tgenabled = 'A' AND t.tgtype = ` + strconv.Itoa(guardTriggerType) + ` AND t.tgqual IS NULL
		AND t.tgnargs = 1 AND t.tgargs = convert_to(s.oid::text, 'UTF8') || '\x00'::bytea
	WHERE c.oid = to_regclass($1)`
	var s guardState
	err := queryRow(ctx, tx, q, []any{g.mirror, g.function + "()", guardBody, g.key, guardTrigger},
		&s.oid, &s.filenode, &s.print, &s.sequence, &s.copies, &s.function, &s.trigger, &s.indexed)
	if err != nil {
		return s, fmt.Errorf("reading the write guard of the mirror %s: %w", g.mirror, err)
	}
	return s, nil
}

// setup creates what the state lacks: the sequence, the function, the
// mirror's trigger and its key index; and drops the guard table of older
// releases.
func (g *pgGuard) setup(ctx context.Context, tx warehouse.Tx, s guardState) error {
	exec := func(stmts ...string) error {
		for _, q := range stmts {
			if _, err := tx.Exec(ctx, q); err != nil {
				return fmt.Errorf("setting up the write guard of the mirror %s: %w", g.mirror, err)
			}
		}
		return nil
	}
	if err := g.dropOldTable(ctx, tx); err != nil {
		return err
	}
	if s.sequence == 0 {
		if err := exec(`CREATE SEQUENCE IF NOT EXISTS `+g.sequence+` START 1`,
			`ALTER SEQUENCE `+g.sequence+` OWNED BY `+g.mirror+`.`+g.quoted); err != nil {
			return err
		}
		if err := queryRow(ctx, tx, `SELECT CAST(CAST(to_regclass($1) AS oid) AS bigint)`, []any{g.sequence}, &s.sequence); err != nil {
			return fmt.Errorf("setting up the write guard of the mirror %s: %w", g.mirror, err)
		}
		s.trigger = false // it counts into another sequence, if any
	}
	if !s.function {
		if err := exec(`CREATE OR REPLACE FUNCTION ` + g.function + `() RETURNS trigger LANGUAGE plpgsql
			SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $etl_craft$` + guardBody + `$etl_craft$`); err != nil {
			return err
		}
	}
	if !s.function || !s.trigger {
		if err := exec(`DROP TRIGGER IF EXISTS `+g.trigger+` ON `+g.mirror,
			`CREATE TRIGGER `+g.trigger+` BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON `+g.mirror+
				` FOR EACH STATEMENT EXECUTE FUNCTION `+g.function+`('`+strconv.FormatInt(s.sequence, 10)+`')`,
			`ALTER TABLE `+g.mirror+` ENABLE ALWAYS TRIGGER `+g.trigger); err != nil {
			return err
		}
	}
	if !s.indexed {
		return exec(`CREATE INDEX ON ` + g.mirror + ` (` + g.quoted + `)`)
	}
	return nil
}

// dropKeyIndexes drops the key indexes setup makes (a plain btree index on
// the key column alone), in the transaction of a full load after its
// TRUNCATE: leave builds the index again once the rows are in, which is
// faster than keeping it up to date row by row. A failed load rolls the
// drop back with the rows.
func (g *pgGuard) dropKeyIndexes(ctx context.Context, tx warehouse.Tx) error {
	var names sql.NullString
	err := queryRow(ctx, tx, `SELECT string_agg(CAST(CAST(i.indexrelid AS regclass) AS text), ', ')
		FROM pg_index i
		JOIN pg_class ic ON ic.oid = i.indexrelid
		JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'btree'
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] AND a.attname = $2
		WHERE i.indrelid = to_regclass($1) AND i.indnatts = 1 AND NOT i.indisunique AND i.indpred IS NULL AND i.indexprs IS NULL
			AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)`, []any{g.mirror, g.key}, &names)
	if err == nil && names.Valid {
		_, err = tx.Exec(ctx, "DROP INDEX "+names.String)
	}
	if err != nil {
		return fmt.Errorf("dropping the key index of the mirror %s before its full load: %w", g.mirror, err)
	}
	return nil
}

// dropOldTable drops the guard table older releases counted in, when the
// schema has one with its columns.
func (g *pgGuard) dropOldTable(ctx context.Context, tx warehouse.Tx) error {
	var cols sql.NullString
	err := queryRow(ctx, tx, `SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
		FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, []any{g.oldTable}, &cols)
	if err == nil && cols.String == oldGuardColumns {
		_, err = tx.Exec(ctx, `DROP TABLE `+g.oldTable)
	}
	if err != nil {
		return fmt.Errorf("dropping the write guard table %s of an older release: %w", g.oldTable, err)
	}
	return nil
}

// guardPrint is the proof recorded: the guard, the clone's copies, the
// statements counted and the mirror's rows.
func guardPrint(guard, copies string, writes, rows int64) string {
	return fmt.Sprintf("%s%s %s %d %d", guardPrintPrefix, guard, copies, writes, rows)
}

// recordedRows splits a recorded guard print into the print without its
// rows, and the rows; ok is false for any other proof.
func recordedRows(recorded string) (print string, rows int64, ok bool) {
	i := strings.LastIndexByte(recorded, ' ')
	if !strings.HasPrefix(recorded, guardPrintPrefix) || i < 0 {
		return "", 0, false
	}
	rows, err := strconv.ParseInt(recorded[i+1:], 10, 64)
	return recorded[:i], rows, err == nil
}

// lock locks the mirror against writers for the rest of the transaction,
// before its guard is read: a write by hand still open in another session
// (and any change of its trigger with it) is waited for, and then seen;
// one that starts later waits for the copy's commit, and is counted after
// it. Readers are not held up.
func (g *pgGuard) lock(ctx context.Context, tx warehouse.Tx) error {
	if g.locked {
		return nil
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE `+g.mirror+` IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("locking the mirror %s against writers: %w", g.mirror, err)
	}
	g.locked = true
	return nil
}

// counters reads the mirror's count of statements, its highest key
// (through the index), and the rows this transaction inserted and deleted.
func (g *pgGuard) counters(ctx context.Context, tx warehouse.Tx, s guardState) (writes int64, high sql.NullString, ins, del int64, err error) {
	q := `SELECT coalesce(pg_sequence_last_value(CAST(CAST(CAST($2 AS bigint) AS oid) AS regclass)), 0),
		(SELECT CAST(max(` + g.quoted + `) AS TEXT) FROM ` + g.mirror + `),
		pg_stat_get_xact_tuples_inserted($1), pg_stat_get_xact_tuples_deleted($1)`
	err = queryRow(ctx, tx, q, []any{s.oid, s.sequence}, &writes, &high, &ins, &del)
	return writes, high, ins, del, err
}

// check proves the mirror is what the recorded print says: the same guard
// and count of statements. It returns the recorded rows, the highest key
// and the print when it is, a print that differs otherwise. Once proven,
// the transaction's own writes are no longer counted, and the rows it
// inserts and deletes from now on are what leave adds to the recorded rows.
func (g *pgGuard) check(ctx context.Context, tx warehouse.Tx, recorded string) (int64, string, string, error) {
	if err := g.lock(ctx, tx); err != nil {
		return 0, "", "", err
	}
	s, err := g.state(ctx, tx)
	if err != nil || !s.complete() {
		return -1, "", "", err
	}
	want, rows, ok := recordedRows(recorded)
	if !ok {
		return -1, "", "", nil
	}
	writes, high, ins, del, err := g.counters(ctx, tx, s)
	if err != nil {
		return 0, "", "", fmt.Errorf("reading the write guard of the mirror %s: %w", g.mirror, err)
	}
	now := guardPrint(s.print.String, s.copies, writes, rows)
	if i := strings.LastIndexByte(now, ' '); now[:i] != want {
		return -1, high.String, now, nil
	}
	base := fmt.Sprintf("%d %d %d %d %d", s.oid, s.filenode, rows, ins, del)
	if _, err := tx.Exec(ctx, `SELECT set_config($1, CAST(txid_current() AS text), true), set_config($2, $3, true)`,
		cloningSetting, proofSetting, base); err != nil {
		return 0, "", "", fmt.Errorf("marking the copy of the mirror %s as the clone's own: %w", g.mirror, err)
	}
	return rows, high.String, now, nil
}

// leave sets the guard up where it is missing and returns what the copy
// leaves in the mirror: its rows, its highest key and the print to record.
// A copy that changed the mirror's rows counts one more copy, so that an
// Engine DB restored from before it sees a mirror it does not know.
func (g *pgGuard) leave(ctx context.Context, tx warehouse.Tx) (int64, string, string, error) {
	if err := g.lock(ctx, tx); err != nil {
		return 0, "", "", err
	}
	s, err := g.state(ctx, tx)
	if err == nil && !s.complete() {
		if err = g.setup(ctx, tx, s); err == nil {
			s, err = g.state(ctx, tx)
		}
		if err == nil && !s.complete() {
			err = fmt.Errorf("the write guard of the mirror %s is still incomplete after setting it up", g.mirror)
		}
	}
	if err != nil {
		return 0, "", "", err
	}
	writes, high, ins, del, err := g.counters(ctx, tx, s)
	if err != nil {
		return 0, "", "", fmt.Errorf("reading the write guard of the mirror %s: %w", g.mirror, err)
	}
	rows, written, proven, err := g.rowsSinceProof(ctx, tx, s, ins, del)
	if err == nil && !proven {
		err = queryRow(ctx, tx, "SELECT count(*) FROM "+g.mirror, nil, &rows)
	}
	if err != nil {
		return 0, "", "", fmt.Errorf("counting the rows of the mirror %s: %w", g.mirror, err)
	}
	copies := s.copies
	if !proven || written > 0 {
		n, _ := strconv.ParseInt(copies, 10, 64)
		copies = strconv.FormatInt(n+1, 10)
		if _, err := tx.Exec(ctx, `COMMENT ON SEQUENCE `+g.sequence+` IS '`+copies+`'`); err != nil {
			return 0, "", "", fmt.Errorf("counting the copy in the write guard of the mirror %s: %w", g.mirror, err)
		}
	}
	return rows, high.String, guardPrint(s.print.String, copies, writes, rows), nil
}

// rowsSinceProof returns the mirror's rows from those check proved and the
// rows inserted and deleted since, and how many rows those were, given the
// transaction's counters now (ins, del); proven is false when this
// transaction proved nothing or truncated the mirror after (a full copy),
// or the server keeps no row counters.
func (g *pgGuard) rowsSinceProof(ctx context.Context, tx warehouse.Tx, s guardState, ins, del int64) (rows, written int64, proven bool, err error) {
	var base, counts sql.NullString
	if err := queryRow(ctx, tx, `SELECT current_setting($1, true), current_setting('track_counts')`, []any{proofSetting},
		&base, &counts); err != nil {
		return 0, 0, false, err
	}
	var oid, filenode, ins0, del0 int64
	n, _ := fmt.Sscanf(base.String, "%d %d %d %d %d", &oid, &filenode, &rows, &ins0, &del0)
	if n != 5 || oid != s.oid || filenode != s.filenode || counts.String != "on" {
		return 0, 0, false, nil
	}
	return rows + (ins - ins0) - (del - del0), (ins - ins0) + (del - del0), true, nil
}

// queryRow scans the one row of a query in the warehouse transaction.
func queryRow(ctx context.Context, tx warehouse.Tx, q string, args []any, dest ...any) error {
	rs, err := tx.Query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rs.Close()
	if !rs.Next() {
		if err := rs.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rs.Scan(dest...); err != nil {
		return err
	}
	return rs.Close()
}
