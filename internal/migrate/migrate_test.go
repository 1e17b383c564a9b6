package migrate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/migrate"
)

// project writes migration files into a new folder and returns it.
func project(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func initDB(t *testing.T, db *engine.DB) {
	t.Helper()
	if _, err := (&migrate.Runner{DB: db}).InitDB(context.Background(), false); err != nil {
		t.Fatalf("init-db: %v", err)
	}
}

func ledger(t *testing.T, db *engine.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(context.Background(),
		"SELECT SOURCE, VERSION FROM SCHEMA_MIGRATIONS ORDER BY SOURCE, VERSION")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s, v string
		rows.Scan(&s, &v)
		out = append(out, s+"/"+v)
	}
	return out
}

func names(files []migrate.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Name)
	}
	return out
}

func TestInitDBThenMigrateHasNothingToDo(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		res, err := (&migrate.Runner{DB: db}).InitDB(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Statements < 16 {
			t.Fatalf("only %d schema statements", res.Statements)
		}
		eng, err := migrate.EngineStream(db.Kind())
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, f := range eng.Files {
			want = append(want, "ENGINE/"+f.Name)
		}
		if got := ledger(t, db); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("ledger %v, want every packaged file %v", got, want)
		}
		applied, err := (&migrate.Runner{DB: db}).Migrate(ctx)
		if err != nil || len(applied) != 0 {
			t.Fatalf("migrate after init-db applied %v (%v)", names(applied), err)
		}
		tables, _ := migrate.EngineTables(ctx, db)
		if !contains(tables, catalogName(db, "CFG_PIPELINES")) || !contains(tables, catalogName(db, "AUD_PIPELINES_RUN_LOG")) {
			t.Fatalf("tables %v", tables)
		}
	})
}

// catalogName is an upper-case table name as the dialect's catalog spells a
// table created with it unquoted: lower case on PostgreSQL, as written on
// SQLite.
func catalogName(db *engine.DB, name string) string {
	if db.Kind() == engine.Postgres {
		return strings.ToLower(name)
	}
	return name
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestInitDBRefusesExistingEngineTablesUnlessForced(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		if _, err := db.ExecContext(ctx, "CREATE TABLE AUD_OLD_TRACKER (ID INTEGER)"); err != nil {
			t.Fatal(err)
		}
		r := &migrate.Runner{DB: db}
		_, err := r.InitDB(ctx, false)
		// The refusal names the table as the catalog spells it.
		if want := "['" + catalogName(db, "AUD_OLD_TRACKER") + "']"; !exit.Is(err, exit.EngineDB) || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want %s", err, want)
		}
		if _, err := r.InitDB(ctx, true); err != nil {
			t.Fatalf("--force: %v", err)
		}
		// A second init-db finds the real tables, named as they are and sorted.
		_, err = r.InitDB(ctx, false)
		if want := "['" + catalogName(db, "AUD_ACTIONS") + "', "; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("second init-db: %v", err)
		}
		// Forcing over a full schema fails as one transaction and leaves it as it was.
		before, _ := migrate.EngineTables(ctx, db)
		if _, err := r.InitDB(ctx, true); !exit.Is(err, exit.EngineDB) || !strings.Contains(err.Error(), "failed applying") {
			t.Fatalf("forced init-db over a schema: %v", err)
		}
		after, _ := migrate.EngineTables(ctx, db)
		if strings.Join(before, ",") != strings.Join(after, ",") {
			t.Fatalf("tables changed: %v -> %v", before, after)
		}
	})
}

func TestProjectMigrationRunsAsWritten(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		initDB(t, db)
		text := `-- literals that look like separators, parameters and format verbs
CREATE TABLE notes (id INTEGER PRIMARY KEY, body VARCHAR NOT NULL);
INSERT INTO notes (id, body) VALUES (1, 'a;b'), (2, '50%'), (3, ':name'), (4, 'at 12:30 -- not a comment');
/* a block comment; with a semicolon */
INSERT INTO notes (id, body) VALUES (5, 'it''s');
`
		if db.Kind() == engine.Postgres {
			text += `CREATE FUNCTION note_count() RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  RETURN (SELECT count(*) FROM notes); -- a ; inside the body
END;
$$;
INSERT INTO notes (id, body) SELECT 6, 'count ' || note_count();
`
		} else {
			text += `CREATE TRIGGER notes_shout AFTER INSERT ON notes WHEN NEW.id = 7
BEGIN
  UPDATE notes SET body = upper(body) WHERE id = NEW.id;
  UPDATE notes SET body = body || ';' WHERE id = NEW.id;
END;
INSERT INTO notes (id, body) VALUES (7, 'quiet');
`
		}
		r := &migrate.Runner{DB: db, ProjectDir: project(t, map[string]string{"0001_notes.sql": text})}
		applied, err := r.Migrate(ctx)
		if err != nil || len(applied) != 1 {
			t.Fatalf("applied %v: %v", names(applied), err)
		}
		want := map[int]string{1: "a;b", 2: "50%", 3: ":name", 4: "at 12:30 -- not a comment", 5: "it's"}
		if db.Kind() == engine.Postgres {
			want[6] = "count 5"
		} else {
			want[7] = "QUIET;"
		}
		for id, body := range want {
			var got string
			if err := db.QueryRowContext(ctx, "SELECT body FROM notes WHERE id = $1", id).Scan(&got); err != nil || got != body {
				t.Errorf("note %d = %q (%v), want %q", id, got, err, body)
			}
		}
	})
}

func TestEditedOrRemovedAppliedFilesStopEverything(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		initDB(t, db)
		dir := project(t, map[string]string{"0001_a.sql": "CREATE TABLE a (id INTEGER);\n"})
		r := &migrate.Runner{DB: db, ProjectDir: dir}
		if _, err := r.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "0001_a.sql"), []byte("CREATE TABLE a (id BIGINT);\n"), 0o644)
		os.WriteFile(filepath.Join(dir, "0002_b.sql"), []byte("CREATE TABLE b (id INTEGER);\n"), 0o644)
		_, err := r.Migrate(ctx)
		if !exit.Is(err, exit.Migration) || !strings.Contains(err.Error(), "'0001_a.sql' has changed since it was applied") {
			t.Fatalf("edited: %v", err)
		}
		os.Remove(filepath.Join(dir, "0001_a.sql"))
		_, err = r.Migrate(ctx)
		if !exit.Is(err, exit.Migration) || !strings.Contains(err.Error(), "'0001_a.sql' is missing from") {
			t.Fatalf("removed: %v", err)
		}
		_, err = (&migrate.Runner{DB: db}).Migrate(ctx)
		if !exit.Is(err, exit.Migration) || !strings.Contains(err.Error(), "no project migrations directory is configured") {
			t.Fatalf("no project folder: %v", err)
		}
		if got := ledger(t, db); contains(got, "PROJECT/0002_b.sql") {
			t.Fatalf("0002_b.sql was applied although an applied file was edited: %v", got)
		}
	})
}

func TestAFailingFileStopsTheRunAndLeavesNoTrace(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		initDB(t, db)
		dir := project(t, map[string]string{
			"0001_first.sql":  "CREATE TABLE first_t (id INTEGER);\n",
			"0002_second.sql": "CREATE TABLE second_t (id INTEGER);\n\nINSERT INTO second_t (id)\nSELECT id FROM no_such_table;\n",
			"0003_third.sql":  "CREATE TABLE third_t (id INTEGER);\n",
		})
		r := &migrate.Runner{DB: db, ProjectDir: dir}
		applied, err := r.Migrate(ctx)
		if strings.Join(names(applied), ",") != "0001_first.sql" {
			t.Fatalf("applied %v", names(applied))
		}
		if !exit.Is(err, exit.Migration) || !strings.Contains(err.Error(), "project/0002_second.sql failed to apply") ||
			!strings.Contains(err.Error(), "0002_second.sql:3:") || !strings.Contains(err.Error(), "INSERT INTO second_t (id)") ||
			!strings.Contains(err.Error(), "no_such_table") {
			t.Fatalf("error does not name the file, line, statement and cause: %v", err)
		}
		tables, _ := db.Tables(ctx)
		if contains(tables, "second_t") || contains(tables, "third_t") || !contains(tables, "first_t") {
			t.Fatalf("tables %v", tables)
		}
		os.WriteFile(filepath.Join(dir, "0002_second.sql"), []byte("CREATE TABLE second_t (id INTEGER);\n"), 0o644)
		applied, err = r.Migrate(ctx)
		if err != nil || strings.Join(names(applied), ",") != "0002_second.sql,0003_third.sql" {
			t.Fatalf("after the fix: %v %v", names(applied), err)
		}
	})
}

func TestMarkersAreRefusedInProjectFiles(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"0001_x.sql": "-- etl-craft: rebuild-metadata\nSELECT 1;\n"})
	_, err := migrate.ProjectStream(dir)
	if !exit.Is(err, exit.Migration) || !strings.Contains(err.Error(), "0001_x.sql") || !strings.Contains(err.Error(), "ENGINE-only") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamsReadOnlySQLFilesInNameOrder(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"0002_b.sql": "SELECT 2;", "0001_a.sql": "SELECT 1;", "notes.txt": "x"})
	os.Mkdir(filepath.Join(dir, "0003_dir.sql"), 0o755)
	os.WriteFile(filepath.Join(dir, "0004_bad.sql"), []byte{0xff, 0xfe}, 0o644)
	_, err := migrate.ProjectStream(dir)
	if err == nil || !strings.Contains(err.Error(), "could not read migration 0004_bad.sql") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	os.Remove(filepath.Join(dir, "0004_bad.sql"))
	s, err := migrate.ProjectStream(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(names(s.Files), ","); got != "0001_a.sql,0002_b.sql" {
		t.Fatalf("files %s", got)
	}
	// sha256("SELECT 1;")
	if s.Files[0].Checksum != "17db4fd369edb9244b9f91d9aeed145c3d04ad8ba6e95d06247f07a63527d11a" {
		t.Fatalf("checksum %q", s.Files[0].Checksum)
	}
	if _, err := migrate.ProjectStream(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing folder: %v", err)
	}
}

func TestCodeCheckListsEveryBadCode(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		code string
		ok   bool
	}{{"P", true}, {"load_2", true}, {strings.Repeat("a", 128), true}, {"", false}, {"2load", false},
		{"__init__", false}, {"load-task", false}, {"x.y", false}, {strings.Repeat("a", 129), false},
		{"P\n", false}, {"a\x00", false}, {"éclair", false}} {
		if migrate.ValidCode(c.code) != c.ok {
			t.Errorf("ValidCode(%q) != %v", c.code, c.ok)
		}
	}
}

func TestProjectMigrationAddsAndDropsCFGColumns(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		initDB(t, db)
		dir := project(t, map[string]string{
			"0001_owner.sql": `ALTER TABLE CFG_PIPELINES ADD COLUMN OWNER VARCHAR;
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, OWNER) VALUES ('P', 'P', 'FULL', 'team');
`,
			"0002_drop_owner.sql": `ALTER TABLE CFG_PIPELINES DROP COLUMN OWNER;
UPDATE CFG_PIPELINES SET PIPELINE_NAME = 'renamed' WHERE PIPELINE_CODE = 'P';
`,
		})
		if _, err := (&migrate.Runner{DB: db, ProjectDir: dir}).Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		var after string
		err := db.QueryRowContext(ctx, `SELECT CAST(AFTER_JSON AS VARCHAR) FROM AUD_METADATA_CHANGES
			WHERE MIGRATION = '0002_drop_owner.sql' AND OPERATION = 'UPDATE'`).Scan(&after)
		if err != nil || !strings.Contains(after, "renamed") || strings.Contains(strings.ToLower(after), `"owner"`) {
			t.Fatalf("change after the drop: %q (%v)", after, err)
		}
		var inserted string
		db.QueryRowContext(ctx, `SELECT CAST(AFTER_JSON AS VARCHAR) FROM AUD_METADATA_CHANGES
			WHERE MIGRATION = '0001_owner.sql' AND OPERATION = 'INSERT'`).Scan(&inserted)
		if !strings.Contains(inserted, "team") {
			t.Fatalf("the added column was not captured: %q", inserted)
		}
	})
}
