package engine_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// rebuildTables are a parent and a child table with AUTOINCREMENT ids whose
// counters are ahead of their highest ids, a team's index, view and two
// triggers on the parent, and a log the triggers write.
const rebuildTables = `
CREATE TABLE team_parent (ID INTEGER PRIMARY KEY AUTOINCREMENT, NAME VARCHAR NOT NULL);
CREATE TABLE team_child (ID INTEGER PRIMARY KEY AUTOINCREMENT, PARENT_ID BIGINT NOT NULL REFERENCES team_parent (ID));
CREATE TABLE team_log (ENTRY VARCHAR NOT NULL);
INSERT INTO team_parent (NAME) VALUES ('a'), ('b'), ('c');
DELETE FROM team_parent WHERE ID = 3;
INSERT INTO team_child (PARENT_ID) VALUES (1), (2), (2);
CREATE INDEX team_ix_parent_name ON team_parent (NAME);
CREATE VIEW team_parent_names AS SELECT ID, NAME FROM team_parent;
CREATE TRIGGER team_parent_added AFTER INSERT ON team_parent
BEGIN
    INSERT INTO team_log (ENTRY) VALUES ('added ' || NEW.ID);
END;
CREATE TRIGGER team_parent_old AFTER UPDATE ON team_parent
BEGIN
    INSERT INTO team_log (ENTRY) VALUES ('updated ' || NEW.ID);
END`

// rebuildParent rebuilds team_parent with a NOTE column, the way a
// rebuild-metadata migration does, and drops team_parent_old on purpose.
var rebuildParent = []string{
	`CREATE TABLE team_parent_new (ID INTEGER PRIMARY KEY AUTOINCREMENT, NAME VARCHAR NOT NULL,
	     NOTE VARCHAR NOT NULL DEFAULT '' CHECK (NOTE <> 'forbidden'))`,
	"INSERT INTO team_parent_new (ID, NAME) SELECT ID, NAME FROM team_parent",
	"DROP TRIGGER team_parent_old",
	"DROP TABLE team_parent",
	"ALTER TABLE team_parent_new RENAME TO team_parent",
}

var parentPlan = engine.RebuildPlan{
	Tables:  []engine.RebuiltTable{{Name: "team_parent", Columns: []string{"ID", "NAME", "NOTE"}}},
	Dropped: []string{"team_parent_old"},
}

// openRebuildDB returns a SQLite Engine DB with rebuildTables, limited to one
// connection so that the settings a rebuild changes can be read back on the
// connection it used.
func openRebuildDB(t *testing.T) *engine.DB {
	t.Helper()
	db := enginetest.Open(t, engine.SQLite)
	db.SQL().SetMaxOpenConns(1)
	err := db.Tx(context.Background(), func(tx *engine.Tx) error {
		for _, s := range sqlscan.Split(rebuildTables, sqlscan.SQLite) {
			if err := tx.ExecRaw(context.Background(), s.Text); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func execEach(ctx context.Context, tx *engine.Tx, statements []string) error {
	for _, s := range statements {
		if err := tx.ExecRaw(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// values returns the rows of a query as "a|b" strings, NULL as "".
func values(t *testing.T, db *engine.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		row := make([]sql.NullString, len(cols))
		dest := make([]any, len(cols))
		for i := range row {
			dest[i] = &row[i]
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		var line []string
		for _, v := range row {
			line = append(line, v.String)
		}
		out = append(out, strings.Join(line, "|"))
	}
	return out
}

func assertValues(t *testing.T, db *engine.DB, query string, want ...string) {
	t.Helper()
	if got := values(t, db, query); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("%s = %v, want %v", query, got, want)
	}
}

// assertSettingsRestored checks that the connection enforces foreign keys
// again, has legacy_alter_table off, and that no reference is broken.
func assertSettingsRestored(t *testing.T, db *engine.DB) {
	t.Helper()
	assertValues(t, db, "SELECT (SELECT foreign_keys FROM pragma_foreign_keys), (SELECT legacy_alter_table FROM pragma_legacy_alter_table)", "1|0")
	assertValues(t, db, "SELECT * FROM pragma_foreign_key_check")
}

func TestRebuildTxKeepsRowsCountersReferencesAndProjectObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openRebuildDB(t)
	var during []string
	err := db.RebuildTx(ctx, parentPlan, func(tx *engine.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT foreign_keys FROM pragma_foreign_keys")
		if err != nil {
			return err
		}
		for rows.Next() {
			var fk string
			rows.Scan(&fk)
			during = append(during, fk)
		}
		rows.Close()
		return execEach(ctx, tx, rebuildParent)
	})
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if strings.Join(during, ",") != "0" {
		t.Fatalf("foreign_keys during the rebuild = %v, want 0", during)
	}
	assertSettingsRestored(t, db)
	assertValues(t, db, "SELECT ID, NAME, NOTE FROM team_parent ORDER BY ID", "1|a|", "2|b|")
	assertValues(t, db, "SELECT name FROM sqlite_schema WHERE name LIKE 'team%' AND type <> 'table' ORDER BY name",
		"team_ix_parent_name", "team_parent_added", "team_parent_names")

	// The counter continues after the deleted id; the kept trigger and the
	// view work; the new CHECK holds; children still reach their parents.
	if err := db.Tx(ctx, func(tx *engine.Tx) error {
		return tx.ExecRaw(ctx, "INSERT INTO team_parent (NAME) VALUES ('d')")
	}); err != nil {
		t.Fatal(err)
	}
	assertValues(t, db, "SELECT ID, NAME FROM team_parent_names WHERE NAME = 'd'", "4|d")
	assertValues(t, db, "SELECT ENTRY FROM team_log", "added 4")
	assertValues(t, db, "SELECT count(*) FROM team_child c JOIN team_parent p ON p.ID = c.PARENT_ID", "3")
	err = db.Tx(ctx, func(tx *engine.Tx) error {
		return tx.ExecRaw(ctx, "UPDATE team_parent SET NOTE = 'forbidden' WHERE ID = 1")
	})
	if err == nil || !strings.Contains(err.Error(), "CHECK") {
		t.Fatalf("the rebuilt table's check: %v", err)
	}
}

func TestRebuildTxRefusesExtraColumnsBeforeChangingAnything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openRebuildDB(t)
	plan := engine.RebuildPlan{Tables: []engine.RebuiltTable{{Name: "team_parent", Columns: []string{"ID"}}}}
	called := false
	err := db.RebuildTx(ctx, plan, func(tx *engine.Tx) error {
		called = true
		return nil
	})
	if called {
		t.Fatal("the rebuild ran although the table has a column it would discard")
	}
	if !exit.Is(err, exit.Migration) {
		t.Fatalf("err = %v, want a migration error", err)
	}
	for _, part := range []string{"team_parent", "NAME", "would discard", "nothing was changed",
		"move the values into a project table", "ALTER TABLE team_parent DROP COLUMN NAME"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the refusal does not say %q: %v", part, err)
		}
	}
	assertSettingsRestored(t, db)
}

func TestRebuildTxRollsBackAndRestoresSettingsOnFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		last string // the statement that makes the rebuild fail
		want string
	}{
		{"the migration fails", "SELECT * FROM no_such_table", "no_such_table"},
		{"a reference breaks", "DELETE FROM team_parent WHERE ID = 2", "team_child row 2 refers to a missing team_parent row"},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openRebuildDB(t)
			err := db.RebuildTx(ctx, parentPlan, func(tx *engine.Tx) error {
				return execEach(ctx, tx, append(append([]string{}, rebuildParent...), c.last))
			})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one that says %q", err, c.want)
			}
			assertSettingsRestored(t, db)
			assertValues(t, db, "SELECT ID, NAME FROM team_parent ORDER BY ID", "1|a", "2|b")
			assertValues(t, db, "SELECT name FROM pragma_table_info('team_parent') ORDER BY cid", "ID", "NAME")
			assertValues(t, db, "SELECT name FROM sqlite_schema WHERE name LIKE 'team%' AND type <> 'table' ORDER BY name",
				"team_ix_parent_name", "team_parent_added", "team_parent_names", "team_parent_old")
			assertValues(t, db, "SELECT seq FROM sqlite_sequence WHERE name = 'team_parent'", "3")
		})
	}
}

func TestRebuildTxIsOneTransaction(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		if err := db.Tx(ctx, func(tx *engine.Tx) error {
			return tx.ExecRaw(ctx, "CREATE TABLE team_notes (ID INTEGER PRIMARY KEY, BODY VARCHAR NOT NULL)")
		}); err != nil {
			t.Fatal(err)
		}
		plan := engine.RebuildPlan{Tables: []engine.RebuiltTable{{Name: "team_notes", Columns: []string{"ID", "BODY"}}}}
		failure := errors.New("stop")
		err := db.RebuildTx(ctx, plan, func(tx *engine.Tx) error {
			if err := tx.ExecRaw(ctx, "INSERT INTO team_notes (ID, BODY) VALUES (1, 'rolled back')"); err != nil {
				return err
			}
			return failure
		})
		if !errors.Is(err, failure) {
			t.Fatalf("err = %v", err)
		}
		err = db.RebuildTx(ctx, plan, func(tx *engine.Tx) error {
			return tx.ExecRaw(ctx, "INSERT INTO team_notes (ID, BODY) VALUES (2, 'kept')")
		})
		if err != nil {
			t.Fatal(err)
		}
		assertValues(t, db, "SELECT ID, BODY FROM team_notes", "2|kept")
	})
}
