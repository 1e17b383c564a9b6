package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

// outsideTransactionCases are statements of each Engine DB and the answer of
// OutsideTransaction.
var outsideTransactionCases = map[engine.Kind][]struct{ statement, want string }{
	engine.SQLite: {
		{"BEGIN", engine.ControlsTransaction},
		{"begin immediate transaction", engine.ControlsTransaction},
		{"-- done\nCOMMIT", engine.ControlsTransaction},
		{"END TRANSACTION", engine.ControlsTransaction},
		{"ROLLBACK TO SAVEPOINT s", engine.ControlsTransaction},
		{"/* nest */ SAVEPOINT s", engine.ControlsTransaction},
		{"RELEASE s", engine.ControlsTransaction},
		{"VACUUM", engine.RefusedInTransaction},
		{"CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END", ""},
		{"SELECT 'BEGIN'", ""},
		{"UPDATE x SET y = CASE WHEN z THEN 1 END", ""},
		{"\"BEGIN\"", ""},
		{"ANALYZE", ""},
		{"", ""},
	},
	engine.Postgres: {
		{"BEGIN", engine.ControlsTransaction},
		{"START TRANSACTION ISOLATION LEVEL SERIALIZABLE", engine.ControlsTransaction},
		{"END", engine.ControlsTransaction},
		{"commit and chain", engine.ControlsTransaction},
		{"ABORT", engine.ControlsTransaction},
		{"SAVEPOINT s", engine.ControlsTransaction},
		{"RELEASE SAVEPOINT s", engine.ControlsTransaction},
		{"ROLLBACK TO s", engine.ControlsTransaction},
		{"PREPARE TRANSACTION 'x'", engine.ControlsTransaction},
		{"COMMIT PREPARED 'x'", engine.ControlsTransaction},
		{"VACUUM t", engine.RefusedInTransaction},
		{"VACUUM (ANALYZE) t", engine.RefusedInTransaction},
		{"CREATE INDEX CONCURRENTLY ix_c ON t (id)", engine.RefusedInTransaction},
		{"DROP INDEX CONCURRENTLY ix_plain", engine.RefusedInTransaction},
		{"REINDEX TABLE CONCURRENTLY t", engine.RefusedInTransaction},
		{"REINDEX (CONCURRENTLY) INDEX ix_plain", engine.RefusedInTransaction},
		{"REINDEX SCHEMA public", engine.RefusedInTransaction},
		{"CLUSTER", engine.RefusedInTransaction},
		{"DISCARD ALL", engine.RefusedInTransaction},
		{"CREATE DATABASE etl_craft_never_made", engine.RefusedInTransaction},
		{"DROP DATABASE IF EXISTS etl_craft_never_made", engine.RefusedInTransaction},
		{"ALTER DATABASE etl_craft_never_made SET TABLESPACE pg_default", engine.RefusedInTransaction},
		{"ALTER SYSTEM SET work_mem = '8MB'", engine.RefusedInTransaction},
		{"CREATE TABLESPACE etl_craft_never_made LOCATION '/nonexistent'", engine.RefusedInTransaction},
		{"DROP TABLESPACE IF EXISTS etl_craft_never_made", engine.RefusedInTransaction},
		{"ALTER TABLE parted DETACH PARTITION parted_1 CONCURRENTLY", engine.RefusedInTransaction},
		{"ANALYZE t", ""},
		{"CREATE INDEX ix_plain ON t (id)", ""},
		{"REINDEX TABLE t", ""},
		{"CLUSTER t USING ix_plain", ""},
		{"DISCARD TEMP", ""},
		{"ALTER DATABASE etl_craft_never_made SET work_mem = '8MB'", ""},
		{"CREATE FUNCTION f() RETURNS void LANGUAGE plpgsql AS $$BEGIN COMMIT; END$$", ""},
		{"SELECT 'COMMIT'", ""},
		{"this is not SQL", ""},
	},
}

func TestOutsideTransaction(t *testing.T) {
	t.Parallel()
	for kind, cases := range outsideTransactionCases {
		for _, c := range cases {
			if got := kind.OutsideTransaction(c.statement); got != c.want {
				t.Errorf("%s: OutsideTransaction(%q) = %q, want %q", kind, c.statement, got, c.want)
			}
		}
	}
}

// TestRefusedInTransactionAgreesWithTheDatabase runs every statement said to
// be refused inside a transaction inside one, on a real database: the
// database refuses each, before doing anything.
func TestRefusedInTransactionAgreesWithTheDatabase(t *testing.T) {
	t.Parallel()
	setup := map[engine.Kind][]string{
		engine.SQLite: {"CREATE TABLE t (id INTEGER)"},
		engine.Postgres: {"CREATE TABLE t (id INTEGER)", "CREATE INDEX ix_plain ON t (id)",
			"CREATE TABLE parted (id INTEGER) PARTITION BY RANGE (id)",
			"CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10)"},
	}
	refusal := map[engine.Kind]string{engine.SQLite: "cannot VACUUM from within a transaction", engine.Postgres: "cannot run inside a transaction block"}
	enginetest.EachKind(t, func(t *testing.T, opts engine.Options) {
		db := enginetest.Plain(t, opts)
		ctx := context.Background()
		for _, s := range setup[opts.Kind] {
			if _, err := db.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		for _, c := range outsideTransactionCases[opts.Kind] {
			if c.want != engine.RefusedInTransaction {
				continue
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(ctx, c.statement)
			tx.Rollback()
			if err == nil || !strings.Contains(err.Error(), refusal[opts.Kind]) {
				t.Errorf("%s inside a transaction: %v, want %q", c.statement, err, refusal[opts.Kind])
			}
		}
	})
}
