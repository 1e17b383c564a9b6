package catalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// The PostgreSQL catalog queries, each over the current (Engine) schema.
const (
	pgTablesQuery = `
SELECT c.relname, COALESCE(obj_description(c.oid, 'pg_class'), '')
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')`

	pgColumnsQuery = `
SELECT c.relname, row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum), a.attname,
       format_type(a.atttypid, a.atttypmod), a.attnotnull, a.attidentity::text, a.attgenerated::text,
       COALESCE(pg_get_expr(d.adbin, d.adrelid), ''), COALESCE(col_description(c.oid, a.attnum), '')
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
 WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')`

	pgConstraintsQuery = `
SELECT c.relname, con.conname, con.contype::text, pg_get_constraintdef(con.oid),
       con.convalidated, con.condeferrable, con.condeferred
  FROM pg_constraint con
  JOIN pg_class c ON c.oid = con.conrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema()`

	pgIndexesQuery = `
SELECT indexname, tablename, indexdef FROM pg_indexes WHERE schemaname = current_schema()`

	pgTriggersQuery = `
SELECT c.relname, t.tgname, pg_get_triggerdef(t.oid), t.tgenabled::text
  FROM pg_trigger t
  JOIN pg_class c ON c.oid = t.tgrelid
  JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND NOT t.tgisinternal`

	pgFunctionsQuery = `
SELECT p.proname, pg_get_function_identity_arguments(p.oid), pg_get_functiondef(p.oid),
       COALESCE(obj_description(p.oid, 'pg_proc'), '')
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = current_schema() AND p.prokind IN ('f', 'p')`

	pgSequencesQuery = `
SELECT sequencename, data_type::text, start_value, min_value, max_value, increment_by, cycle, cache_size
  FROM pg_sequences WHERE schemaname = current_schema()`

	pgViewsQuery = `
SELECT viewname, definition FROM pg_views WHERE schemaname = current_schema()
UNION ALL
SELECT matviewname, definition FROM pg_matviews WHERE schemaname = current_schema()`
)

// readPostgres fills s from the PostgreSQL catalog of the current schema.
func (s Snapshot) readPostgres(ctx context.Context, db *engine.DB) error {
	var schema string
	if err := db.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return err
	}
	norm := func(sql string) string { return normalizeIn(sql, schema) }
	steps := []struct {
		what, query string
		row         func(scan func(...any) error) error
	}{
		{"tables", pgTablesQuery, func(scan func(...any) error) error {
			var table, comment string
			if err := scan(&table, &comment); err != nil {
				return err
			}
			s[table+" table"] = "comment=" + comment
			return nil
		}},
		{"columns", pgColumnsQuery, func(scan func(...any) error) error {
			var table, name, typ, identity, generated, def, comment string
			var pos int
			var notNull bool
			if err := scan(&table, &pos, &name, &typ, &notNull, &identity, &generated, &def, &comment); err != nil {
				return err
			}
			s[fmt.Sprintf("%s column %02d", table, pos)] = fmt.Sprintf("%s %s not_null=%t identity=%q generated=%q default=%s comment=%s",
				name, typ, notNull, identity, generated, norm(def), comment)
			return nil
		}},
		{"constraints", pgConstraintsQuery, func(scan func(...any) error) error {
			var table, name, kind, def string
			var validated, deferrable, deferred bool
			if err := scan(&table, &name, &kind, &def, &validated, &deferrable, &deferred); err != nil {
				return err
			}
			s[table+" constraint "+name] = fmt.Sprintf("%s %s validated=%t deferrable=%t deferred=%t",
				kind, norm(def), validated, deferrable, deferred)
			return nil
		}},
		{"indexes", pgIndexesQuery, func(scan func(...any) error) error {
			var name, table, def string
			if err := scan(&name, &table, &def); err != nil {
				return err
			}
			s["index "+name] = "on " + table + ": " + norm(def)
			return nil
		}},
		{"triggers", pgTriggersQuery, func(scan func(...any) error) error {
			var table, name, def, enabled string
			if err := scan(&table, &name, &def, &enabled); err != nil {
				return err
			}
			s["trigger "+name+" "+table] = norm(def) + " enabled=" + enabled
			return nil
		}},
		{"functions", pgFunctionsQuery, func(scan func(...any) error) error {
			var name, args, def, comment string
			if err := scan(&name, &args, &def, &comment); err != nil {
				return err
			}
			s["function "+name+"("+args+")"] = norm(def) + " comment=" + comment
			return nil
		}},
		{"sequences", pgSequencesQuery, func(scan func(...any) error) error {
			var name, typ string
			var start, lo, hi, step, cache int64
			var cycle bool
			if err := scan(&name, &typ, &start, &lo, &hi, &step, &cycle, &cache); err != nil {
				return err
			}
			s["sequence "+name] = fmt.Sprintf("%s start=%d min=%d max=%d increment=%d cycle=%t cache=%d",
				typ, start, lo, hi, step, cycle, cache)
			return nil
		}},
		{"views", pgViewsQuery, func(scan func(...any) error) error {
			var name, def string
			if err := scan(&name, &def); err != nil {
				return err
			}
			s["view "+name] = norm(def)
			return nil
		}},
	}
	for _, st := range steps {
		if err := query(ctx, db, st.query, nil, st.row); err != nil {
			return fmt.Errorf("%s: %w", st.what, err)
		}
	}
	return nil
}

// normalizeIn returns the tokens of sql joined by spaces, with the schema
// name qualifying an object replaced by a neutral token.
func normalizeIn(sql, schema string) string {
	tokens := Tokens(sql)
	schema = strings.ToLower(schema)
	for i, t := range tokens {
		if t == schema && i+1 < len(tokens) && tokens[i+1] == "." {
			tokens[i] = "<schema>"
		}
	}
	return strings.Join(tokens, " ")
}
