// Package catalog takes a snapshot of a live Engine DB's schema, normalized
// so that two databases built different ways compare equal when their
// schemas are the same: a fresh init-db and a released schema upgraded by
// migrate, or a database before and after a migration that failed and rolled
// back.
//
// PostgreSQL: every table with its columns in order (type with modifier,
// nullability, identity, generated expression, default, comment), its
// constraints (definition, validation, deferrability) and comment; every
// index, trigger (with its enabled state), function (with its identity
// arguments, definition and comment), sequence and view of the Engine
// schema. SQLite: every table with its columns in order (declared type,
// nullability, default, primary-key position), primary key, foreign keys,
// CHECK constraints, UNIQUE constraints and whether it uses AUTOINCREMENT;
// and the SQL of every index, trigger and view.
//
// SQL text is compared as tokens (see Tokens), so layout, comments, quoting
// and identifier case do not count, and the PostgreSQL schema name is
// replaced by a neutral token. Where a constraint was declared (on its
// column or at the end of the table) does not count either: SQLite can only
// add a column-level CHECK to an existing table.
package catalog

import (
	"context"
	"fmt"
	"sort"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// Snapshot is the normalized schema of one Engine DB: one entry per object or
// property, keyed by a stable name such as "cfg_pipelines column 01" or
// "index ux_pipelines_code_active".
type Snapshot map[string]string

// Take reads the schema of the Engine DB: the configured schema on
// PostgreSQL, the main database on SQLite.
func Take(ctx context.Context, db *engine.DB) (Snapshot, error) {
	s := Snapshot{}
	var err error
	if db.Kind() == engine.Postgres {
		err = s.readPostgres(ctx, db)
	} else {
		err = s.readSQLite(ctx, db)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the %s catalog: %w", db.Kind().Label(), err)
	}
	return s, nil
}

// Diff lists the differences from s to other, sorted by key: "- key: value"
// for an entry only s has, "+ key: value" for one only other has, and
// "~ key: value -> value" for one both have with different values. It is
// empty when the snapshots are equal.
func (s Snapshot) Diff(other Snapshot) []string {
	var out []string
	for k, v := range s {
		w, ok := other[k]
		switch {
		case !ok:
			out = append(out, "- "+k+": "+v)
		case v != w:
			out = append(out, "~ "+k+": "+v+" -> "+w)
		}
	}
	for k, w := range other {
		if _, ok := s[k]; !ok {
			out = append(out, "+ "+k+": "+w)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][2:] < out[j][2:] })
	return out
}

// query runs a catalog query and calls row with each row's scanned values.
func query(ctx context.Context, db *engine.DB, q string, args []any, row func(scan func(...any) error) error) error {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}
