package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/etl-craft/etl-craft/internal/records"
)

// sqliteNow is the current time as the Engine DB's fixed UTC text.
const sqliteNow = "strftime('%Y-%m-%d %H:%M:%f', 'now') || '000+00:00'"

// sqliteInsertDefaults are defaults a metadata table's insert trigger writes
// while it stamps the row, because SQLite triggers cannot assign NEW. A task
// dependency inserted without DEPENDS_ON_PIPELINE_ID is on a task of its own
// pipeline. (trg_default_taskdep_pipeline_insert does the same, but the
// change-capture trigger is newer and SQLite fires the newest trigger first,
// so without this the recorded after image would lack the value.)
var sqliteInsertDefaults = map[string]string{
	"CFG_TASK_DEPENDENCY": `"DEPENDS_ON_PIPELINE_ID" = COALESCE("DEPENDS_ON_PIPELINE_ID", "PIPELINE_ID")`,
}

// refreshTriggers gives every CFG_ and AUD_ table its three guard triggers
// (kept when they exist) and rebuilds the stamping and change-capture
// triggers of every metadata CFG_ table from its current columns, so that a
// column a migration added is captured too. It does nothing before
// AUD_METADATA_CHANGES exists. The triggers rely on recursive_triggers being
// off (SQLite's default): their own UPDATE of the row does not fire them again.
func (sqliteDialect) refreshTriggers(ctx context.Context, tx *Tx) error {
	tables, err := sqliteGuardedTables(ctx, tx)
	if err != nil {
		return fmt.Errorf("listing the CFG_ and AUD_ tables: %w", err)
	}
	for _, table := range tables {
		stmts := sqliteGuardTriggers(table)
		if capturesChanges(table) {
			ct, err := readCaptureTable(ctx, tx, table)
			if err != nil {
				return fmt.Errorf("reading the columns of %s: %w", table, err)
			}
			stmts = append(stmts, ct.triggers()...)
		}
		for _, s := range stmts {
			if err := tx.ExecRaw(ctx, s); err != nil {
				return fmt.Errorf("refreshing the triggers of %s: %w", table, err)
			}
		}
	}
	return nil
}

// sqliteGuardedTables lists the CFG_ and AUD_ tables, or none while
// AUD_METADATA_CHANGES does not exist.
func sqliteGuardedTables(ctx context.Context, tx *Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `
		SELECT name FROM sqlite_master
		 WHERE type = 'table' AND upper(substr(name, 1, 4)) IN ('CFG_', 'AUD_')
		   AND EXISTS (SELECT 1 FROM sqlite_master
		                WHERE type = 'table' AND upper(name) = 'AUD_METADATA_CHANGES')
		 ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

// sqliteGuardTriggers returns the table's guard triggers, one per operation,
// created only where missing. Each refuses a connection whose actor is
// missing: on a connection without etl-craft's functions (the sqlite3 shell,
// a BI tool) the call itself fails with "no such function: etl_craft_actor".
// Append-only tables also refuse UPDATE and DELETE, and attempts refuse them
// once terminal; a transaction whose purpose is retention (a purge) may
// delete those rows, never update them.
func sqliteGuardTriggers(table string) []string {
	upper := strings.ToUpper(table)
	refuse := func(message, when string) string {
		return "SELECT RAISE(ABORT, " + quoteLiteral(message) + ") WHERE " + when
	}
	var out []string
	for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
		body := []string{refuse(writtenOnlyMessage(upper), "COALESCE(etl_craft_actor(), '') = ''")}
		always := "1"
		if op == "DELETE" {
			always = "etl_craft_purpose() <> " + quoteLiteral(retentionPurpose)
		}
		switch {
		case op != "INSERT" && appendOnlyTables[upper]:
			body = append(body, refuse(appendOnlyMessage(upper), always))
		case op != "INSERT" && upper == attemptsTable:
			body = append(body, refuse(terminalAttemptMessage,
				always+" AND OLD.STATUS NOT IN ("+records.SQLActiveAttempts+")"))
		}
		name := "trg_actor_guard_" + strings.ToLower(table) + "_" + strings.ToLower(op)
		out = append(out, fmt.Sprintf("CREATE TRIGGER IF NOT EXISTS %s BEFORE %s ON %s\nBEGIN\n    %s;\nEND",
			quoteIdent(name), op, quoteIdent(table), strings.Join(body, ";\n    ")))
	}
	return out
}

// captureTable is what the change-capture triggers of one metadata table are
// built from.
type captureTable struct {
	name    string   // as the catalog spells it
	upper   string   // as AUD_METADATA_CHANGES.TABLE_NAME records it
	columns []string // every column, in order
	pk      []string // primary-key columns; none means the row is found by rowid
	stamped bool     // has the four stamp columns
}

func readCaptureTable(ctx context.Context, tx *Tx, table string) (captureTable, error) {
	ct := captureTable{name: table, upper: strings.ToUpper(table)}
	rows, err := tx.QueryContext(ctx, "SELECT name, pk FROM pragma_table_info($1) ORDER BY cid", table)
	if err != nil {
		return ct, err
	}
	defer rows.Close()
	pkAt := map[int]string{}
	stamps := 0
	for rows.Next() {
		var name string
		var pk int
		if err := rows.Scan(&name, &pk); err != nil {
			return ct, err
		}
		ct.columns = append(ct.columns, name)
		if pk > 0 {
			pkAt[pk] = name
		}
		if isStampColumn(name) {
			stamps++
		}
	}
	for i := 1; i <= len(pkAt); i++ {
		ct.pk = append(ct.pk, pkAt[i])
	}
	ct.stamped = stamps == len(stampColumns)
	return ct, rows.Err()
}

func isStampColumn(name string) bool {
	for _, s := range stampColumns {
		if strings.EqualFold(name, s) {
			return true
		}
	}
	return false
}

// rowKey is the column whose value AUD_METADATA_CHANGES.ROW_KEY records:
// the first primary-key column, else the first column.
func (ct captureTable) rowKey() string {
	if len(ct.pk) > 0 {
		return ct.pk[0]
	}
	return ct.columns[0]
}

// sameRow is the condition that finds, in the table, the row that NEW names.
func (ct captureTable) sameRow() string {
	if len(ct.pk) == 0 {
		return "rowid = NEW.rowid"
	}
	conds := make([]string, len(ct.pk))
	for i, c := range ct.pk {
		conds[i] = quoteIdent(c) + " = NEW." + quoteIdent(c)
	}
	return strings.Join(conds, " AND ")
}

// image is a JSON object of every column, keyed by its lower-case name, with
// the values of prefix "OLD.", or of the table's row as it now stands ("").
func (ct captureTable) image(prefix string) string {
	args := make([]string, 0, 2*len(ct.columns))
	for _, c := range ct.columns {
		args = append(args, quoteLiteral(strings.ToLower(c)), prefix+quoteIdent(c))
	}
	return "json_object(" + strings.Join(args, ", ") + ")"
}

// recordChange is the INSERT of one AUD_METADATA_CHANGES row; tail completes
// it: a FROM and WHERE reading the table's row, or nothing.
func (ct captureTable) recordChange(op, keyFrom, before, after, tail string) string {
	return fmt.Sprintf(`INSERT INTO AUD_METADATA_CHANGES
        (ACTOR, ACTOR_KIND, TABLE_NAME, ROW_KEY, OPERATION, BEFORE_JSON, AFTER_JSON, MIGRATION)
    SELECT etl_craft_actor(), etl_craft_actor_kind(), %s, COALESCE(CAST(%s%s AS TEXT), ''), '%s', %s, %s,
           NULLIF(etl_craft_migration(), '')%s`,
		quoteLiteral(ct.upper), keyFrom, quoteIdent(ct.rowKey()), op, before, after, tail)
}

// triggers drops and recreates the table's three trg_audit_<t>_<op> triggers.
func (ct captureTable) triggers() []string {
	lower := strings.ToLower(ct.name)
	table := quoteIdent(ct.name)
	name := func(op string) string { return quoteIdent("trg_audit_" + lower + "_" + op) }
	fromRow := "\n      FROM " + table + " WHERE " + ct.sameRow()

	// INSERT: stamp the row, marked as the insert's own update so that the
	// UPDATE trigger does not record it, then record the row as it now
	// stands. The mark spans only that update: an upsert whose row takes the
	// DO UPDATE path fires the UPDATE trigger instead of this one, and is
	// recorded as the update it is.
	var set []string
	if ct.stamped {
		set = append(set, stampSet("etl_craft_actor()", sqliteNow, "etl_craft_actor()", sqliteNow)...)
	}
	if d, ok := sqliteInsertDefaults[ct.upper]; ok {
		set = append(set, d)
	}
	var insertBody []string
	if len(set) > 0 {
		insertBody = append(insertBody,
			"SELECT etl_craft_enter_insert("+quoteLiteral(ct.upper)+")",
			"UPDATE "+table+" SET "+strings.Join(set, ", ")+" WHERE "+ct.sameRow(),
			"SELECT etl_craft_exit_insert("+quoteLiteral(ct.upper)+")")
	}
	insertBody = append(insertBody, ct.recordChange("INSERT", "NEW.", "NULL", ct.image(""), fromRow))

	// UPDATE (not the insert trigger's own): keep the creation stamps, stamp
	// the change, and record it if a column other than the stamps changed.
	// SQLite compiles this newest trigger before the guards; its condition
	// names etl_craft_actor first so that a connection without etl-craft's
	// functions is told "no such function: etl_craft_actor", as the guard
	// would tell it.
	var updateBody []string
	if ct.stamped {
		set := stampSet("OLD."+quoteIdent(stampColumns[0]), "OLD."+quoteIdent(stampColumns[1]),
			"etl_craft_actor()", sqliteNow)
		updateBody = append(updateBody, "UPDATE "+table+" SET "+strings.Join(set, ", ")+" WHERE "+ct.sameRow())
	}
	var changed []string
	for _, c := range ct.columns {
		if !isStampColumn(c) {
			changed = append(changed, "OLD."+quoteIdent(c)+" IS NOT NEW."+quoteIdent(c))
		}
	}
	if len(changed) == 0 {
		changed = []string{"0"}
	}
	updateBody = append(updateBody, ct.recordChange("UPDATE", "NEW.", ct.image("OLD."), ct.image(""),
		fromRow+"\n       AND ("+strings.Join(changed, " OR ")+")"))

	deleteBody := []string{ct.recordChange("DELETE", "OLD.", ct.image("OLD."), "NULL", "")}

	create := func(op, event, when string, body []string) string {
		return fmt.Sprintf("CREATE TRIGGER %s AFTER %s ON %s%s\nBEGIN\n    %s;\nEND",
			name(op), event, table, when, strings.Join(body, ";\n    "))
	}
	return []string{
		"DROP TRIGGER IF EXISTS " + name("insert"),
		"DROP TRIGGER IF EXISTS " + name("update"),
		"DROP TRIGGER IF EXISTS " + name("delete"),
		create("insert", "INSERT", "", insertBody),
		create("update", "UPDATE", "\nWHEN etl_craft_actor() IS NOT NULL AND NOT etl_craft_inserting("+quoteLiteral(ct.upper)+")", updateBody),
		create("delete", "DELETE", "", deleteBody),
	}
}

// stampSet assigns the four stamp columns, in their order, these values.
func stampSet(values ...string) []string {
	set := make([]string, len(stampColumns))
	for i, c := range stampColumns {
		set[i] = quoteIdent(c) + " = " + values[i]
	}
	return set
}

// dropColumn matches ALTER TABLE <table> DROP [COLUMN] and captures the table.
var dropColumn = regexp.MustCompile(`(?is)^\s*ALTER\s+TABLE\s+((?:"(?:[^"]|"")+"|[^\s"]+))\s+DROP\s`)

// beforeAlter drops the generated change-capture triggers of a table whose
// column a statement is about to drop: SQLite refuses to drop a column a
// trigger names. The refresh after the statement re-creates them from the
// table's remaining columns.
func (sqliteDialect) beforeAlter(ctx context.Context, tx *Tx, statement string) error {
	m := dropColumn.FindStringSubmatch(statement)
	if m == nil {
		return nil
	}
	table := m[1]
	if strings.HasPrefix(table, `"`) {
		table = strings.ReplaceAll(table[1:len(table)-1], `""`, `"`)
	}
	if i := strings.LastIndex(table, "."); i >= 0 && !strings.Contains(m[1], `"`) {
		table = table[i+1:]
	}
	lower := strings.ToLower(table)
	for _, op := range []string{"insert", "update", "delete"} {
		if _, err := tx.tx.ExecContext(ctx, "DROP TRIGGER IF EXISTS "+quoteIdent("trg_audit_"+lower+"_"+op)); err != nil {
			return err
		}
	}
	return nil
}
