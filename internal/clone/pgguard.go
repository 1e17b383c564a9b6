package clone

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The write guard of a PostgreSQL mirror: how a clone proves, without
// reading the mirror's rows, that nobody wrote it since the last clone.
//
// Each mirror has a statement-level trigger (guardTrigger), enabled ALWAYS
// so that session_replication_role = replica does not silence it, firing
// before every INSERT, UPDATE, DELETE and TRUNCATE (COPY included). It calls
// guardFunction, which counts the statement in guardTable, one row per
// mirror (its oid), unless the writing transaction is a clone's incremental
// copy (cloningSetting holds that transaction's id) or guardTable is gone
// (the next check then fails, and the copy sets it up again). The proof recorded is
// the guard's print: the mirror's oid and file node (a rewrite, a restored
// dump or a table made anew change them), the function's and the trigger's
// catalog rows (xmin, which any CREATE OR REPLACE, ALTER … DISABLE or
// ENABLE changes), the count of statements, and the mirror's rows. The check
// before an incremental copy reads the catalog and that count, and the
// highest key through the key's index, the clone creates (guardIndex); it
// never reads the rows. After an incremental copy the mirror's rows are the
// recorded ones plus the rows this transaction inserted less those it
// deleted, as the server's per-transaction counters say
// (pg_stat_get_xact_tuples_*); after a full copy they are counted.

const (
	guardTable    = "ETL_CRAFT_MIRROR_WRITES"
	guardFunction = "ETL_CRAFT_MIRROR_WRITTEN"
	guardTrigger  = "ETL_CRAFT_MIRROR_WRITES"
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

// pgGuard is the write guard of one PostgreSQL mirror.
type pgGuard struct {
	mirror   string // the mirror, schema-qualified and quoted
	table    string // guardTable, likewise
	function string // guardFunction, likewise
	trigger  string // guardTrigger, quoted
	key      string // the mirror's key column, as the mirror names it
	quoted   string // key, quoted
}

func newPGGuard(w warehouse.Warehouse, mirror warehouse.Table, key string) *pgGuard {
	in := func(name string) string {
		return warehouse.Qualify(w, warehouse.Table{Schema: mirror.Schema, Name: name})
	}
	return &pgGuard{mirror: in(mirror.Name), table: in(guardTable), function: in(guardFunction),
		trigger: w.Quote(guardTrigger), key: key, quoted: w.Quote(key)}
}

// body is guardFunction's source.
func (g *pgGuard) body() string {
	return `
BEGIN
	IF current_setting('` + cloningSetting + `', true) IS DISTINCT FROM CAST(txid_current() AS text)
			AND to_regclass('` + strings.ReplaceAll(g.table, "'", "''") + `') IS NOT NULL THEN
		INSERT INTO ` + g.table + ` AS w ("TABLE_OID", "WRITES") VALUES (TG_RELID, 1)
			ON CONFLICT ("TABLE_OID") DO UPDATE SET "WRITES" = w."WRITES" + 1;
	END IF;
	RETURN NULL;
END
`
}

// guardState is what the catalog says of a mirror's guard.
type guardState struct {
	oid      int64
	filenode int64          // the mirror's file node, which a TRUNCATE changes
	print    sql.NullString // oid, file node, function and trigger; NULL when the function or the trigger is not as the clone made them
	counted  bool           // guardTable exists
	function bool           // guardFunction is as the clone made it
	trigger  bool           // so is the mirror's trigger, enabled ALWAYS
	indexed  bool           // a btree index leads with the key
}

func (s guardState) complete() bool { return s.print.Valid && s.counted && s.indexed }

// state reads the guard from the catalog in one query.
func (g *pgGuard) state(ctx context.Context, tx warehouse.Tx) (guardState, error) {
	q := `SELECT c.oid::bigint, c.relfilenode::bigint,
		c.oid::text || ' ' || c.relfilenode::text || ' ' || p.xmin::text || ' ' || t.oid::text || ':' || t.xmin::text,
		to_regclass($3) IS NOT NULL, p.oid IS NOT NULL, t.oid IS NOT NULL,
		EXISTS (SELECT 1 FROM pg_index i
			JOIN pg_class ic ON ic.oid = i.indexrelid
			JOIN pg_am am ON am.oid = ic.relam AND am.amname = 'btree'
			JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0] AND a.attname = $5
			WHERE i.indrelid = c.oid AND i.indisvalid AND i.indpred IS NULL)
	FROM pg_class c
	LEFT JOIN pg_proc p ON p.oid = to_regprocedure($2) AND p.prosrc = $4 AND p.prosecdef
	LEFT JOIN pg_trigger t ON t.tgrelid = c.oid AND t.tgname = $6 AND t.tgfoid = p.oid
		AND t.tgenabled = 'A' AND t.tgtype = ` + strconv.Itoa(guardTriggerType) + ` AND t.tgqual IS NULL
	WHERE c.oid = to_regclass($1)`
	var s guardState
	err := queryRow(ctx, tx, q, []any{g.mirror, g.function + "()", g.table, g.body(), g.key, guardTrigger},
		&s.oid, &s.filenode, &s.print, &s.counted, &s.function, &s.trigger, &s.indexed)
	if err != nil {
		return s, fmt.Errorf("reading the write guard of the mirror %s: %w", g.mirror, err)
	}
	return s, nil
}

// setup creates what the state lacks: the guard table, the function, the
// mirror's trigger and its key index, and the mirror's count.
func (g *pgGuard) setup(ctx context.Context, tx warehouse.Tx, s guardState) error {
	var stmts []string
	if !s.counted {
		stmts = append(stmts, `CREATE TABLE IF NOT EXISTS `+g.table+` ("TABLE_OID" oid PRIMARY KEY, "WRITES" bigint NOT NULL)`)
	}
	if !s.function {
		stmts = append(stmts, `CREATE OR REPLACE FUNCTION `+g.function+`() RETURNS trigger LANGUAGE plpgsql
			SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $etl_craft$`+g.body()+`$etl_craft$`)
	}
	if !s.function || !s.trigger {
		stmts = append(stmts,
			`DROP TRIGGER IF EXISTS `+g.trigger+` ON `+g.mirror,
			`CREATE TRIGGER `+g.trigger+` BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON `+g.mirror+
				` FOR EACH STATEMENT EXECUTE FUNCTION `+g.function+`()`,
			`ALTER TABLE `+g.mirror+` ENABLE ALWAYS TRIGGER `+g.trigger)
	}
	if !s.indexed {
		stmts = append(stmts, `CREATE INDEX ON `+g.mirror+` (`+g.quoted+`)`)
	}
	stmts = append(stmts, `INSERT INTO `+g.table+` ("TABLE_OID", "WRITES") VALUES (`+strconv.FormatInt(s.oid, 10)+`, 0) ON CONFLICT DO NOTHING`)
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("setting up the write guard of the mirror %s: %w", g.mirror, err)
		}
	}
	return nil
}

// guardPrint is the proof recorded: the guard, the statements counted and
// the mirror's rows.
func guardPrint(guard string, writes, rows int64) string {
	return fmt.Sprintf("%s%s %d %d", guardPrintPrefix, guard, writes, rows)
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

// counters reads the mirror's count of statements, locking it so that a
// write by hand waits for this transaction, its highest key (through the
// index), and the rows this transaction inserted and deleted.
func (g *pgGuard) counters(ctx context.Context, tx warehouse.Tx, oid int64) (writes int64, high sql.NullString, ins, del int64, err error) {
	q := `SELECT coalesce((SELECT "WRITES" FROM ` + g.table + ` WHERE "TABLE_OID" = $1 FOR UPDATE), 0),
		(SELECT CAST(max(` + g.quoted + `) AS TEXT) FROM ` + g.mirror + `),
		pg_stat_get_xact_tuples_inserted($1), pg_stat_get_xact_tuples_deleted($1)`
	err = queryRow(ctx, tx, q, []any{oid}, &writes, &high, &ins, &del)
	return writes, high, ins, del, err
}

// check proves the mirror is what the recorded print says: the same guard
// and count of statements. It returns the recorded rows, the highest key
// and the print when it is, a print that differs otherwise. Once proven,
// the transaction's own writes are no longer counted, and the rows it
// inserts and deletes from now on are what leave adds to the recorded rows.
func (g *pgGuard) check(ctx context.Context, tx warehouse.Tx, recorded string) (int64, string, string, error) {
	s, err := g.state(ctx, tx)
	if err != nil || !s.complete() {
		return -1, "", "", err
	}
	want, rows, ok := recordedRows(recorded)
	if !ok {
		return -1, "", "", nil
	}
	writes, high, ins, del, err := g.counters(ctx, tx, s.oid)
	if err != nil {
		return 0, "", "", fmt.Errorf("reading the write guard of the mirror %s: %w", g.mirror, err)
	}
	now := guardPrint(s.print.String, writes, rows)
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
// A copy that changed the mirror's rows counts one more statement, so that
// an Engine DB restored from before it sees a mirror it does not know.
func (g *pgGuard) leave(ctx context.Context, tx warehouse.Tx) (int64, string, string, error) {
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
	writes, high, ins, del, err := g.counters(ctx, tx, s.oid)
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
	if !proven || written > 0 {
		err := queryRow(ctx, tx, `UPDATE `+g.table+` SET "WRITES" = "WRITES" + 1 WHERE "TABLE_OID" = $1 RETURNING "WRITES"`,
			[]any{s.oid}, &writes)
		if err != nil {
			return 0, "", "", fmt.Errorf("counting the copy in the write guard of the mirror %s: %w", g.mirror, err)
		}
	}
	return rows, high.String, guardPrint(s.print.String, writes, rows), nil
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
