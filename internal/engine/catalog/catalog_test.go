package catalog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/catalog"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/migrate"
)

func TestTokensIgnoreLayoutCaseQuotingAndComments(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ a, b string }{
		{"CREATE INDEX ix ON T (A, B)", "create  index \"IX\"\n  on t(a,b) -- why"},
		{"CHECK (X IN ('Y','N'))", "CHECK ( x IN ( 'Y' , 'N' ) ) /* block; comment */"},
		{"AS $stamp$ BEGIN RETURN NEW; END $stamp$", "AS $$\nBEGIN\n    RETURN NEW; -- done\nEND\n$$"},
		{"A <> B || 'x'", "a<>b||'x'"},
		{"`Mixed` = 1", "mixed=1"},
	} {
		if x, y := catalog.Normalize(c.a), catalog.Normalize(c.b); x != y {
			t.Errorf("%q -> %q\n%q -> %q", c.a, x, c.b, y)
		}
	}
	for _, c := range []struct{ a, b string }{
		{"CHECK (X IN ('Y'))", "CHECK (X IN ('y'))"}, // literals are kept as written
		{"WHERE A = $1", "WHERE A = $2"},             // parameters are not dollar quotes
		{"A <= B", "A < = B"},
		{"ARRAY['a'::text]", "ARRAY['A'::text]"},
	} {
		if x := catalog.Normalize(c.a); x == catalog.Normalize(c.b) {
			t.Errorf("%q and %q both normalize to %q", c.a, c.b, x)
		}
	}
	if got := strings.Join(catalog.Tokens(`"it""s" 'it''s' 1.5`), " "); got != `it"s 'it''s' 1.5` {
		t.Errorf("tokens %s", got)
	}
}

// freshDB returns a new Engine DB made by init-db.
func freshDB(t *testing.T, kind engine.Kind) *engine.DB {
	t.Helper()
	db := enginetest.Open(t, kind)
	if _, err := (&migrate.Runner{DB: db}).InitDB(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	return db
}

func take(t *testing.T, db *engine.DB) catalog.Snapshot {
	t.Helper()
	s, err := catalog.Take(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func exec(t *testing.T, db *engine.DB, statements ...string) {
	t.Helper()
	err := db.Tx(context.Background(), func(tx *engine.Tx) error {
		for _, s := range statements {
			if err := tx.ExecRaw(context.Background(), s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSnapshotsOfTheSameSchemaAreEqualAndChangesShow(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		if _, err := (&migrate.Runner{DB: db}).InitDB(context.Background(), false); err != nil {
			t.Fatal(err)
		}
		a := take(t, db)
		if len(a) < 500 {
			t.Fatalf("the snapshot of a full Engine DB has only %d entries", len(a))
		}
		if diff := a.Diff(take(t, freshDB(t, db.Kind()))); len(diff) > 0 {
			t.Fatalf("two fresh Engine DBs differ:\n%s", strings.Join(diff, "\n"))
		}

		exec(t, db,
			"ALTER TABLE CFG_TASKS ADD COLUMN OWNER VARCHAR(20) DEFAULT 'team' CONSTRAINT ck_owner CHECK (OWNER <> '')",
			"CREATE INDEX team_ix ON CFG_TASKS (OWNER)",
			"CREATE VIEW team_v AS SELECT TASK_ID, OWNER FROM CFG_TASKS")
		want := []string{
			"+ cfg_tasks check ck_owner",
			"+ cfg_tasks column 13: owner",
			"+ index team_ix: on cfg_tasks",
			"+ view team_v",
		}
		if db.Kind() == engine.Postgres {
			exec(t, db, "COMMENT ON TABLE CFG_TASKS IS 'changed'")
			want = []string{
				"+ cfg_tasks column 13: owner character varying(20)",
				"+ cfg_tasks constraint ck_owner: c check",
				"~ cfg_tasks table: comment=One row per task",
				"+ index team_ix: on cfg_tasks",
				"+ view team_v",
			}
		}
		diff := a.Diff(take(t, db))
		if len(diff) != len(want) {
			t.Fatalf("diff:\n%s", strings.Join(diff, "\n"))
		}
		for i, w := range want {
			if !strings.HasPrefix(diff[i], w) {
				t.Errorf("difference %d is %q, want one starting %q", i, diff[i], w)
			}
		}
	})
}

func TestSQLiteChecksCompareWhereverTheyAreDeclared(t *testing.T) {
	t.Parallel()
	one := enginetest.Open(t, engine.SQLite)
	exec(t, one,
		`CREATE TABLE t (ID INTEGER PRIMARY KEY AUTOINCREMENT, A VARCHAR, B INT NOT NULL DEFAULT 1,
		     CONSTRAINT ck_a CHECK (A IN ('Y', 'N')))`,
		"ALTER TABLE t ADD COLUMN C INT CHECK (C > 0)")
	other := enginetest.Open(t, engine.SQLite)
	exec(t, other,
		`CREATE TABLE "T" (
		     id INTEGER PRIMARY KEY AUTOINCREMENT,
		     a VARCHAR CONSTRAINT ck_a CHECK (a IN ('Y','N')),
		     b INT NOT NULL DEFAULT (1),
		     c INT,
		     CHECK (c > 0))`)
	if diff := take(t, one).Diff(take(t, other)); len(diff) > 0 {
		t.Fatalf("differences:\n%s", strings.Join(diff, "\n"))
	}
	plain := enginetest.Open(t, engine.SQLite)
	exec(t, plain, `CREATE TABLE t (ID INTEGER PRIMARY KEY, A VARCHAR CONSTRAINT ck_a CHECK (A IN ('Y', 'N')),
	                                B INT NOT NULL DEFAULT 1, C INT CHECK (C >= 0))`)
	diff := take(t, one).Diff(take(t, plain))
	if got := strings.Join(diff, "\n"); !strings.Contains(got, "t table: table autoincrement -> table") ||
		!strings.Contains(got, "- t check (c > 0)") || !strings.Contains(got, "+ t check (c >= 0)") {
		t.Fatalf("differences:\n%s", got)
	}
}
