package catalog

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// readSQLite fills s from sqlite_schema and the table pragmas.
func (s Snapshot) readSQLite(ctx context.Context, db *engine.DB) error {
	type table struct{ name, sql string }
	var tables []table
	err := query(ctx, db, `SELECT name, sql FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`, nil,
		func(scan func(...any) error) error {
			var t table
			if err := scan(&t.name, &t.sql); err != nil {
				return err
			}
			tables = append(tables, t)
			return nil
		})
	if err != nil {
		return err
	}
	for _, t := range tables {
		if err := s.readSQLiteTable(ctx, db, t.name, t.sql); err != nil {
			return fmt.Errorf("table %s: %w", t.name, err)
		}
	}
	return query(ctx, db, `SELECT type, name, tbl_name, sql FROM sqlite_schema
		WHERE type IN ('index', 'trigger', 'view') AND sql IS NOT NULL`, nil,
		func(scan func(...any) error) error {
			var kind, name, table, text string
			if err := scan(&kind, &name, &table, &text); err != nil {
				return err
			}
			s[kind+" "+strings.ToLower(name)] = "on " + strings.ToLower(table) + ": " + Normalize(text)
			return nil
		})
}

func (s Snapshot) readSQLiteTable(ctx context.Context, db *engine.DB, name, createSQL string) error {
	t := strings.ToLower(name)
	tokens := Tokens(createSQL)
	kind := "table"
	for _, tok := range tokens {
		if tok == "autoincrement" {
			kind = "table autoincrement"
		}
	}
	s[t+" table"] = kind

	pk := map[int]string{}
	err := query(ctx, db, "SELECT cid, name, type, \"notnull\", dflt_value, pk, hidden FROM pragma_table_xinfo($1) ORDER BY cid", []any{name},
		func(scan func(...any) error) error {
			var cid, notNull, pkAt, hidden int
			var col, typ string
			var dflt sql.NullString
			if err := scan(&cid, &col, &typ, &notNull, &dflt, &pkAt, &hidden); err != nil {
				return err
			}
			def := "none"
			if dflt.Valid {
				def = Normalize(dflt.String)
			}
			s[fmt.Sprintf("%s column %02d", t, cid+1)] = fmt.Sprintf("%s %s not_null=%d default=%s hidden=%d",
				strings.ToLower(col), strings.ToUpper(typ), notNull, def, hidden)
			if pkAt > 0 {
				pk[pkAt] = strings.ToLower(col)
			}
			return nil
		})
	if err != nil {
		return err
	}
	if len(pk) > 0 {
		cols := make([]string, len(pk))
		for i := range cols {
			cols[i] = pk[i+1]
		}
		s[t+" primary key"] = strings.Join(cols, ", ")
	}
	if err := s.readSQLiteForeignKeys(ctx, db, name); err != nil {
		return err
	}
	if err := s.readSQLiteUniques(ctx, db, name); err != nil {
		return err
	}
	for key, expr := range checks(tokens) {
		s[t+" check "+key] = expr
	}
	return nil
}

func (s Snapshot) readSQLiteForeignKeys(ctx context.Context, db *engine.DB, name string) error {
	type fk struct {
		from, to               []string
		table, upd, del, match string
	}
	byID := map[int]*fk{}
	err := query(ctx, db, "SELECT id, \"table\", \"from\", \"to\", on_update, on_delete, \"match\" FROM pragma_foreign_key_list($1) ORDER BY id, seq", []any{name},
		func(scan func(...any) error) error {
			var id int
			var parent, from, upd, del, match string
			var to sql.NullString
			if err := scan(&id, &parent, &from, &to, &upd, &del, &match); err != nil {
				return err
			}
			f := byID[id]
			if f == nil {
				f = &fk{table: strings.ToLower(parent), upd: upd, del: del, match: match}
				byID[id] = f
			}
			f.from = append(f.from, strings.ToLower(from))
			f.to = append(f.to, strings.ToLower(to.String))
			return nil
		})
	if err != nil {
		return err
	}
	t := strings.ToLower(name)
	for _, f := range byID {
		key := t + " foreign key (" + strings.Join(f.from, ", ") + ") " + f.table
		s[key] = fmt.Sprintf("references %s(%s) on update %s on delete %s match %s",
			f.table, strings.Join(f.to, ", "), f.upd, f.del, f.match)
	}
	return nil
}

func (s Snapshot) readSQLiteUniques(ctx context.Context, db *engine.DB, name string) error {
	var indexes []string
	err := query(ctx, db, "SELECT name FROM pragma_index_list($1) WHERE origin = 'u'", []any{name},
		func(scan func(...any) error) error {
			var n string
			if err := scan(&n); err != nil {
				return err
			}
			indexes = append(indexes, n)
			return nil
		})
	if err != nil {
		return err
	}
	t := strings.ToLower(name)
	for _, ix := range indexes {
		var cols []string
		err := query(ctx, db, "SELECT name FROM pragma_index_info($1) ORDER BY seqno", []any{ix},
			func(scan func(...any) error) error {
				var c string
				if err := scan(&c); err != nil {
					return err
				}
				cols = append(cols, strings.ToLower(c))
				return nil
			})
		if err != nil {
			return err
		}
		s[t+" unique ("+strings.Join(cols, ", ")+")"] = "unique"
	}
	return nil
}

// checks returns the CHECK constraints of a CREATE TABLE statement's tokens,
// declared on a column or on the table alike: each keyed by its name, or by
// its expression when it has none, with its expression as the value.
func checks(tokens []string) map[string]string {
	out := map[string]string{}
	depth := 0
	for i := 0; i < len(tokens); i++ {
		switch tokens[i] {
		case "(":
			depth++
		case ")":
			depth--
		case "check":
			if depth != 1 || i+1 >= len(tokens) || tokens[i+1] != "(" {
				continue
			}
			end := closing(tokens, i+1)
			expr := strings.Join(tokens[i+2:end], " ")
			key := "(" + expr + ")"
			if i >= 2 && tokens[i-2] == "constraint" {
				key = tokens[i-1]
			}
			out[key] = expr
			i = end
		}
	}
	return out
}

// closing returns the index of the parenthesis that closes the one at open.
func closing(tokens []string, open int) int {
	depth := 0
	for i := open; i < len(tokens); i++ {
		switch tokens[i] {
		case "(":
			depth++
		case ")":
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return len(tokens)
}
