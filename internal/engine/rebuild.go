package engine

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// RebuildPlan says what a table-rebuilding migration does, so that the
// SQLite guarded rebuild can protect what the migration's own SQL does not
// know about: the project's columns, indexes, triggers and views, and the
// identity counters of the tables it rebuilds.
type RebuildPlan struct {
	// Tables are the tables the migration rebuilds, each with every column
	// its new definition has.
	Tables []RebuiltTable
	// Dropped names the indexes, triggers and views the migration drops on
	// purpose: they are not restored.
	Dropped []string
}

// RebuiltTable is one table a migration rebuilds.
type RebuiltTable struct {
	Name    string
	Columns []string
}

// RebuildTx runs fn in the transaction of a migration that rebuilds tables.
//
// PostgreSQL alters tables in place: this is Tx. SQLite changes a table's
// definition by creating a new table, copying the rows, dropping the old one
// and renaming the new one. RebuildTx makes that safe: on a connection of its
// own it turns foreign-key enforcement off and legacy_alter_table on (so
// dropping and renaming neither deletes nor rewrites anything that refers to
// the table), begins the transaction, and refuses, before anything changes,
// a table with a column the plan does not keep, naming the column and what
// to do. It saves the identity counters of the rebuilt tables and the SQL of
// their indexes and triggers and of every view, runs fn, then raises each
// counter back to at least its old value and re-creates each saved object
// that no longer exists (those the migration or its trigger refresh made
// again are kept as made). It checks every foreign key before committing,
// and restores the connection's settings whether it commits or not.
func (db *DB) RebuildTx(ctx context.Context, plan RebuildPlan, fn func(*Tx) error) error {
	if db.Kind() != SQLite {
		return db.Tx(ctx, fn)
	}
	waited, err := db.writers.lock(ctx)
	if err != nil {
		return err
	}
	defer db.writers.unlock()
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not connect to the Engine DB")
	}
	defer conn.Close()
	before, err := readRebuildPragmas(ctx, conn)
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not read the connection's foreign_keys and legacy_alter_table settings")
	}
	defer restoreRebuildPragmas(context.WithoutCancel(ctx), conn, before)
	if err := setRebuildPragmas(ctx, conn, rebuildPragmas{foreignKeys: 0, legacyAlterTable: 1}); err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not turn foreign-key enforcement off for the rebuild")
	}
	tx, err := db.beginOn(ctx, conn, waited, false)
	if err != nil {
		return err
	}
	defer func() {
		if p := recover(); p != nil {
			tx.tx.Rollback()
			panic(p)
		}
	}()
	if err := rebuildIn(ctx, tx, plan, fn); err != nil {
		tx.tx.Rollback()
		return err
	}
	if err := tx.tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// rebuildIn is the body of the SQLite rebuild transaction.
func rebuildIn(ctx context.Context, tx *Tx, plan RebuildPlan, fn func(*Tx) error) error {
	names := make([]string, len(plan.Tables))
	for i, t := range plan.Tables {
		names[i] = t.Name
		if err := refuseExtraColumns(ctx, tx, t); err != nil {
			return err
		}
	}
	namesJSON, err := json.Marshal(names)
	if err != nil {
		return err
	}
	counters, err := readCounters(ctx, tx, string(namesJSON))
	if err != nil {
		return fmt.Errorf("reading the identity counters of %s: %w", strings.Join(names, ", "), err)
	}
	objects, err := readRebuiltObjects(ctx, tx, string(namesJSON), plan.Dropped)
	if err != nil {
		return fmt.Errorf("saving the indexes, triggers and views of %s: %w", strings.Join(names, ", "), err)
	}
	if err := fn(tx); err != nil {
		return err
	}
	for _, c := range counters {
		if err := c.restore(ctx, tx); err != nil {
			return fmt.Errorf("restoring the identity counter of %s: %w", c.table, err)
		}
	}
	for _, o := range objects {
		if err := o.restore(ctx, tx); err != nil {
			return err
		}
	}
	return checkForeignKeys(ctx, tx)
}

// refuseExtraColumns refuses a table that has a column the rebuilt table
// would not have: copying the rows would lose its values.
func refuseExtraColumns(ctx context.Context, tx *Tx, t RebuiltTable) error {
	keep := map[string]bool{}
	for _, c := range t.Columns {
		keep[strings.ToUpper(c)] = true
	}
	cols, err := tx.Columns(ctx, t.Name)
	if err != nil {
		return fmt.Errorf("reading the columns of %s: %w", t.Name, err)
	}
	var extra []string
	for _, c := range cols {
		if !keep[strings.ToUpper(c.Name)] {
			extra = append(extra, c.Name)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	drops := make([]string, len(extra))
	for i, c := range extra {
		drops[i] = "ALTER TABLE " + t.Name + " DROP COLUMN " + c + ";"
	}
	return exit.Errorf(exit.Migration,
		"%s has column(s) %s that etl-craft does not define, and rebuilding the table would discard their values; nothing was changed: move the values into a project table, drop the column(s) with the sqlite3 shell (%s), then run etl-craft migrate again",
		t.Name, strings.Join(extra, ", "), strings.Join(drops, " "))
}

// counter is a table's AUTOINCREMENT high-water mark.
type counter struct {
	table string
	seq   int64
}

func readCounters(ctx context.Context, tx *Tx, tablesJSON string) ([]counter, error) {
	var hasSequences bool
	err := tx.QueryRowContext(ctx,
		"SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_sequence')").Scan(&hasSequences)
	if err != nil || !hasSequences {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT name, seq FROM sqlite_sequence
		 WHERE upper(name) IN (SELECT upper(value) FROM json_each($1))`, tablesJSON)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []counter
	for rows.Next() {
		var c counter
		if err := rows.Scan(&c.table, &c.seq); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// restore raises the table's counter back to at least its saved value, so
// that an id deleted before the rebuild is never given out again.
func (c counter) restore(ctx context.Context, tx *Tx) error {
	var exists bool
	err := tx.QueryRowContext(ctx,
		"SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND upper(name) = upper($1))", c.table).Scan(&exists)
	if err != nil || !exists {
		return err
	}
	res, err := tx.ExecContext(ctx,
		"UPDATE sqlite_sequence SET seq = max(seq, $2) WHERE upper(name) = upper($1)", c.table, c.seq)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	_, err = tx.ExecContext(ctx, "INSERT INTO sqlite_sequence (name, seq) VALUES ($1, $2)", c.table, c.seq)
	return err
}

// schemaObject is an index, trigger or view saved before a rebuild.
type schemaObject struct {
	kind, name, sql string
}

// readRebuiltObjects saves the SQL of the indexes and triggers of the
// rebuilt tables, and of every view, in the order they were created, less
// those the migration drops on purpose. Dropping a table drops its indexes
// and triggers; views survive, but are kept in case the migration drops one
// that depends on a rebuilt table.
func readRebuiltObjects(ctx context.Context, tx *Tx, tablesJSON string, dropped []string) ([]schemaObject, error) {
	skip := map[string]bool{}
	for _, d := range dropped {
		skip[strings.ToUpper(d)] = true
	}
	rows, err := tx.QueryContext(ctx, `
		SELECT type, name, sql FROM sqlite_schema
		 WHERE sql IS NOT NULL
		   AND (type = 'view'
		        OR type IN ('index', 'trigger') AND upper(tbl_name) IN (SELECT upper(value) FROM json_each($1)))
		 ORDER BY rowid`, tablesJSON)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []schemaObject
	for rows.Next() {
		var o schemaObject
		if err := rows.Scan(&o.kind, &o.name, &o.sql); err != nil {
			return nil, err
		}
		if !skip[strings.ToUpper(o.name)] {
			out = append(out, o)
		}
	}
	return out, rows.Err()
}

// restore re-creates the object unless one of its name exists.
func (o schemaObject) restore(ctx context.Context, tx *Tx) error {
	var exists bool
	err := tx.QueryRowContext(ctx,
		"SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE upper(name) = upper($1))", o.name).Scan(&exists)
	if err != nil {
		return fmt.Errorf("looking for the %s %s: %w", o.kind, o.name, err)
	}
	if exists {
		return nil
	}
	if err := tx.ExecRaw(ctx, o.sql); err != nil {
		return exit.Wrap(exit.Migration, err,
			"the project's %s %s could not be re-created after the rebuild; fix or drop it in a project migration, then run etl-craft migrate again", o.kind, o.name)
	}
	return nil
}

// checkForeignKeys refuses to commit a rebuild that left a reference to a
// missing row.
func checkForeignKeys(ctx context.Context, tx *Tx) error {
	rows, err := tx.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		return fmt.Errorf("checking foreign keys: %w", err)
	}
	defer rows.Close()
	var broken []string
	total := 0
	for rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fkid int
		if err := rows.Scan(&table, &rowid, &parent, &fkid); err != nil {
			return err
		}
		total++
		if len(broken) < 5 {
			broken = append(broken, fmt.Sprintf("%s row %d refers to a missing %s row", table, rowid.Int64, parent))
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if total > 0 {
		return exit.Errorf(exit.Migration,
			"the rebuild would leave %d broken foreign-key reference(s), so nothing was changed: %s",
			total, strings.Join(broken, "; "))
	}
	return nil
}

// rebuildPragmas are the connection settings a rebuild changes.
type rebuildPragmas struct {
	foreignKeys, legacyAlterTable int
}

func readRebuildPragmas(ctx context.Context, conn *sql.Conn) (rebuildPragmas, error) {
	var p rebuildPragmas
	if err := conn.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&p.foreignKeys); err != nil {
		return p, err
	}
	err := conn.QueryRowContext(ctx, "PRAGMA legacy_alter_table").Scan(&p.legacyAlterTable)
	return p, err
}

// setRebuildPragmas sets both settings; outside a transaction, since SQLite
// ignores foreign_keys inside one.
func setRebuildPragmas(ctx context.Context, conn *sql.Conn, p rebuildPragmas) error {
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA foreign_keys = %d", p.foreignKeys)); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA legacy_alter_table = %d", p.legacyAlterTable))
	return err
}

// restoreRebuildPragmas puts the settings back. A connection whose settings
// cannot be restored is closed instead of going back to the pool.
func restoreRebuildPragmas(ctx context.Context, conn *sql.Conn, p rebuildPragmas) {
	err := setRebuildPragmas(ctx, conn, p)
	if err == nil {
		var got rebuildPragmas
		if got, err = readRebuildPragmas(ctx, conn); err == nil && got != p {
			err = fmt.Errorf("foreign_keys is %d and legacy_alter_table %d", got.foreignKeys, got.legacyAlterTable)
		}
	}
	if err != nil {
		slog.Warn("closing an Engine DB connection whose settings could not be restored after a rebuild", "error", err)
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}
