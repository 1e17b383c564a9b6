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

// TestOutOfOrderFilesApplyOnlyWhenAsked: a file that sorts before an applied
// one, and a file sharing its number with another, are refused naming both
// files; with OutOfOrder they apply.
func TestOutOfOrderFilesApplyOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		initDB(t, db)
		dir := project(t, map[string]string{"0001_a.sql": "CREATE TABLE a (id INTEGER)", "0003_c.sql": "CREATE TABLE c (id INTEGER)"})
		if _, err := (&migrate.Runner{DB: db, ProjectDir: dir}).Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ name, want string }{
			{"0002_b.sql", "project/0002_b.sql sorts before project/0003_c.sql, which is already applied"},
			{"0003_bis.sql", "project/0003_bis.sql and project/0003_c.sql share the number 0003"},
		} {
			name, want := c.name, c.want
			os.WriteFile(filepath.Join(dir, name), []byte("CREATE TABLE x_"+strings.TrimSuffix(name, ".sql")+" (id INTEGER)"), 0o644)
			_, err := (&migrate.Runner{DB: db, ProjectDir: dir}).Migrate(ctx)
			if exit.CodeOf(err) != exit.Migration || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "out_of_order") {
				t.Fatalf("%s: %v, want %q", name, err, want)
			}
			applied, err := (&migrate.Runner{DB: db, ProjectDir: dir, OutOfOrder: true}).Migrate(ctx)
			if err != nil || len(applied) != 1 || applied[0].Name != name {
				t.Fatalf("%s with OutOfOrder: %v %v", name, names(applied), err)
			}
		}
	})
}

// TestSetupChecksProjectFilesBeforeCreatingTables: setup on an empty
// database refuses a bad project file before it creates any table.
func TestSetupChecksProjectFilesBeforeCreatingTables(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		dir := project(t, map[string]string{"0001_a.sql": "CREATE TABLE a (id INTEGER);\nCOMMIT;\n"})
		_, err := (&migrate.Runner{DB: db, ProjectDir: dir}).Setup(ctx)
		if exit.CodeOf(err) != exit.Migration || !strings.Contains(err.Error(), "project/0001_a.sql:2: the statement `COMMIT` controls the transaction") {
			t.Fatalf("setup: %v", err)
		}
		if tables, _ := db.Tables(ctx); len(tables) != 0 {
			t.Fatalf("setup made %v", tables)
		}
	})
}

// TestFilesThatLookLikeMigrationsAreReported: entries of the folder that
// look like migrations but are not read are named, with why, and only those.
func TestFilesThatLookLikeMigrationsAreReported(t *testing.T) {
	t.Parallel()
	dir := project(t, map[string]string{"0001_a.sql": "SELECT 1", "0002_upper.SQL": "SELECT 1", "0003_notes.txt": "x", "README.md": "x"})
	os.Mkdir(filepath.Join(dir, "0004_folder.sql"), 0o755)
	os.Symlink(filepath.Join(dir, "0001_a.sql"), filepath.Join(dir, "0005_link.sql"))
	s, err := migrate.ProjectStream(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Files) != 1 {
		t.Fatalf("read %d files", len(s.Files))
	}
	want := []string{
		"0002_upper.SQL is not read: only names ending in .sql, in lower case, are migrations; rename it to 0002_upper.sql",
		"0003_notes.txt is not read: its name starts like a migration's",
		"0004_folder.sql is not read: it is a folder",
		"0005_link.sql is not read: it is not a regular file",
	}
	if len(s.Ignored) != len(want) {
		t.Fatalf("ignored %q", s.Ignored)
	}
	for i, w := range want {
		if !strings.HasPrefix(s.Ignored[i], filepath.Join(dir, "")+"/") || !strings.Contains(s.Ignored[i], w) {
			t.Errorf("ignored[%d] = %q, want %q", i, s.Ignored[i], w)
		}
	}
}
