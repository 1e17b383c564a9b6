package engine

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"unicode/utf8"
)

// pgGuardedTablesQuery lists the ordinary CFG_ and AUD_ tables of the Engine
// schema with what their triggers need: the column naming a row (first
// primary-key column, else first column) and whether the four stamp columns
// are there. It lists none while AUD_METADATA_CHANGES does not exist.
const pgGuardedTablesQuery = `
SELECT n.nspname, c.relname,
       COALESCE(
           (SELECT a.attname FROM pg_index i
              JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
             WHERE i.indrelid = c.oid AND i.indisprimary),
           (SELECT a.attname FROM pg_attribute a
             WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
             ORDER BY a.attnum LIMIT 1)),
       (SELECT count(*) FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
           AND a.attname IN ('created_by', 'create_date', 'updated_by', 'updated_date')) = 4
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND c.relkind = 'r'
   AND upper(left(c.relname, 4)) IN ('CFG_', 'AUD_')
   AND EXISTS (SELECT 1 FROM pg_class m
                WHERE m.relnamespace = n.oid AND m.relname = 'aud_metadata_changes' AND m.relkind = 'r')
 ORDER BY c.relname`

// pgTriggersQuery lists the user-defined triggers of the Engine schema.
const pgTriggersQuery = `
SELECT c.relname, t.tgname
  FROM pg_trigger t
  JOIN pg_class c ON c.oid = t.tgrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND NOT t.tgisinternal`

// pgGuardedTable is one CFG_ or AUD_ table as the refresh sees it.
type pgGuardedTable struct {
	schema, name string
	key          sql.NullString // column naming a row in AUD_METADATA_CHANGES
	stamped      bool
}

// refreshTriggers creates, where missing, the write guard and TRUNCATE guard
// of every CFG_ and AUD_ table of the Engine schema, and on every CFG_ table
// but CFG_API_TOKENS the change capture and (when it has the stamp columns)
// the stamping trigger. Existing triggers are never replaced. It does
// nothing before AUD_METADATA_CHANGES exists.
func (postgresDialect) refreshTriggers(ctx context.Context, tx *Tx) error {
	tables, err := pgGuardedTables(ctx, tx)
	if err != nil {
		return fmt.Errorf("listing the CFG_ and AUD_ tables: %w", err)
	}
	if len(tables) == 0 {
		return nil
	}
	existing, err := pgTriggers(ctx, tx)
	if err != nil {
		return fmt.Errorf("listing the triggers: %w", err)
	}
	for _, t := range tables {
		for _, trg := range t.triggers() {
			if existing[t.name+"\x00"+trg.name] {
				continue
			}
			if err := tx.ExecRaw(ctx, trg.create); err != nil {
				return fmt.Errorf("creating trigger %s on %s: %w", trg.name, t.name, err)
			}
		}
	}
	return nil
}

func pgGuardedTables(ctx context.Context, tx *Tx) ([]pgGuardedTable, error) {
	rows, err := tx.QueryContext(ctx, pgGuardedTablesQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []pgGuardedTable
	for rows.Next() {
		var t pgGuardedTable
		if err := rows.Scan(&t.schema, &t.name, &t.key, &t.stamped); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// pgTriggers returns the set of table "\x00" trigger names that exist.
func pgTriggers(ctx context.Context, tx *Tx) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, pgTriggersQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var table, name string
		if err := rows.Scan(&table, &name); err != nil {
			return nil, err
		}
		out[table+"\x00"+name] = true
	}
	return out, rows.Err()
}

// pgTrigger is a trigger the refresh wants: its name as the catalog will
// hold it, and the statement that creates it.
type pgTrigger struct {
	name, create string
}

// triggers returns every trigger the table should have.
func (t pgGuardedTable) triggers() []pgTrigger {
	schema := quoteIdent(t.schema)
	lower := strings.ToLower(t.name)
	trigger := func(prefix, timing, level, function string) pgTrigger {
		name := pgIdentifier(prefix + lower)
		return pgTrigger{name: name, create: fmt.Sprintf("CREATE TRIGGER %s %s ON %s.%s FOR EACH %s EXECUTE FUNCTION %s.%s",
			quoteIdent(name), timing, schema, quoteIdent(t.name), level, schema, function)}
	}
	out := []pgTrigger{
		trigger("trg_actor_guard_", "BEFORE INSERT OR UPDATE OR DELETE", "ROW", "etl_craft_guard()"),
		trigger("trg_truncate_", "BEFORE TRUNCATE", "STATEMENT", "etl_craft_guard()"),
	}
	if !capturesChanges(t.name) {
		return out
	}
	if t.key.Valid {
		out = append(out, trigger("trg_changes_", "AFTER INSERT OR UPDATE OR DELETE", "ROW",
			"etl_craft_metadata_change("+quoteLiteral(t.key.String)+")"))
	}
	if t.stamped {
		out = append(out, trigger("trg_audit_", "BEFORE INSERT OR UPDATE", "ROW", "trg_set_audit_columns()"))
	}
	return out
}

// pgIdentifier shortens a name the way PostgreSQL does, to at most 63 bytes
// without splitting a character, so the refresh finds the trigger it made.
func pgIdentifier(name string) string {
	const maxLen = 63
	if len(name) <= maxLen {
		return name
	}
	cut := maxLen
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut]
}

// beforeAlter does nothing on PostgreSQL: its triggers capture whole rows
// with to_jsonb and name no column.
func (postgresDialect) beforeAlter(context.Context, *Tx, string) error { return nil }
