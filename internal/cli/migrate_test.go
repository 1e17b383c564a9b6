package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/fault"
)

func TestInitDBAndMigrateThroughTheBinary(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		r := p.OK("init-db")
		if !strings.HasPrefix(r.Stdout, "init-db: applied ") {
			t.Fatalf("stdout %q", r.Stdout)
		}
		if kind == engine.SQLite {
			if _, err := os.Stat(filepath.Join(p.Dir, "state", "engine.db")); err != nil {
				t.Fatalf("the SQLite file was not created beside the config: %v", err)
			}
		}
		again := p.Run(nil, "init-db")
		if again.Code != 12 || !strings.Contains(again.Stderr, "already has Engine DB table(s)") {
			t.Fatalf("second init-db: %d %q", again.Code, again.Stderr)
		}
		if r := p.OK("migrate"); r.Stdout != "migrate: already up to date\n" {
			t.Fatalf("migrate: %q", r.Stdout)
		}
		p.Write("migrations/0001_owner.sql", "CREATE TABLE project_owner (name VARCHAR);\n")
		if r := p.OK("migrate"); r.Stdout != "applied 0001_owner.sql\n" {
			t.Fatalf("migrate: %q", r.Stdout)
		}
		other := t.TempDir()
		os.WriteFile(filepath.Join(other, "0001_elsewhere.sql"), []byte("SELECT 1;\n"), 0o644)
		r = p.Run(nil, "migrate", "--migrations-dir", other)
		if r.Code != 13 || !strings.Contains(r.Stderr, "'0001_owner.sql' is missing from") {
			t.Fatalf("--migrations-dir: %d %q", r.Code, r.Stderr)
		}
	})
}

func TestInitDBNamesTheRefusedTablesAsTheyAre(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	os.MkdirAll(filepath.Join(p.Dir, "state"), 0o755)
	e2e.MustExec(t, enginetest.Plain(t, p.Engine), "CREATE TABLE CFG_LEFTOVER (ID INTEGER)", "CREATE TABLE Aud_Mixed (ID INTEGER)")
	r := p.Run(nil, "init-db")
	if r.Code != 12 || !strings.Contains(r.Stderr, "already has Engine DB table(s) ['Aud_Mixed', 'CFG_LEFTOVER']") {
		t.Fatalf("init-db: %d %q", r.Code, r.Stderr)
	}
}

func TestFourMigrateProcessesApplyEachFileOnce(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		for _, f := range []string{"0001_a", "0002_b", "0003_c"} {
			p.Write("migrations/"+f+".sql", "CREATE TABLE t_"+f+" (id INTEGER);\nINSERT INTO t_"+f+" (id) VALUES (1);\n")
		}
		var wg sync.WaitGroup
		results := make([]e2e.Result, 4)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = p.Run(nil, "migrate")
			}()
		}
		wg.Wait()
		applied := 0
		for _, r := range results {
			if r.Code != 0 {
				t.Fatalf("a migrate process exited %d: %s", r.Code, r.Stderr)
			}
			applied += strings.Count(r.Stdout, "applied ")
		}
		if applied != 3 {
			t.Fatalf("%d files applied in all, want 3", applied)
		}
		db := p.DB()
		if n := e2e.Count(t, db, "SELECT count(*) FROM SCHEMA_MIGRATIONS WHERE SOURCE = 'PROJECT'"); n != 3 {
			t.Fatalf("%d ledger rows", n)
		}
	})
}

func TestAKilledInitDBOrMigrationLeavesTheDatabaseAsItWas(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		r := p.Run([]string{fault.Variable + "=init_db.after_schema:kill"}, "init-db")
		if r.Code != fault.KilledStatus {
			t.Fatalf("init-db exited %d: %s", r.Code, r.Stderr)
		}
		db := p.DB()
		if tables, _ := db.Tables(context.Background()); len(tables) != 0 {
			t.Fatalf("a killed init-db left tables %v", tables)
		}
		p.OK("init-db")

		p.Write("migrations/0001_first.sql", "CREATE TABLE first_t (id INTEGER);\n")
		p.Write("migrations/0002_second.sql", "CREATE TABLE second_t (id INTEGER);\nINSERT INTO second_t (id) VALUES (2);\n")
		r = p.Run([]string{fault.Variable + "=migration.after_ledger.0002_second.sql:kill"}, "migrate")
		if r.Code != fault.KilledStatus || r.Stdout != "applied 0001_first.sql\n" {
			t.Fatalf("migrate exited %d: %q %s", r.Code, r.Stdout, r.Stderr)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM SCHEMA_MIGRATIONS WHERE VERSION = '0002_second.sql'"); n != 0 {
			t.Fatal("the killed file is in the ledger")
		}
		tables, _ := db.Tables(context.Background())
		for _, tb := range tables {
			if strings.EqualFold(tb, "second_t") {
				t.Fatal("the killed file's table survived")
			}
		}
		if r := p.OK("migrate"); r.Stdout != "applied 0002_second.sql\n" {
			t.Fatalf("the next migrate: %q", r.Stdout)
		}
		r = p.Run([]string{fault.Variable + "=migration.after_ledger"}, "migrate")
		if r.Code != 0 {
			t.Fatalf("a fault point with nothing to apply fired: %d %s", r.Code, r.Stderr)
		}
	})
}

func TestConfigurationErrorsExit3NamingFileLineAndKey(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	r := p.Run(nil, "--config", filepath.Join(p.Dir, "nowhere", "craft-connector.yml"), "migrate")
	if r.Code != 3 || !strings.Contains(r.Stderr, "craft-connector.yml not found") {
		t.Fatalf("missing file: %d %q", r.Code, r.Stderr)
	}
	cases := []struct{ yaml, want string }{
		{"Secrets:\n  Source_type: environment\n  Profile: dev\nOrchestration:\n  Mode: local\n  Max_paralel_tasks: 3\nEngine:\n  dev:\n    jdbc_url: jdbc:sqlite:e.db\n    schema: main\n",
			"craft-connector.yml:6: Orchestration: unknown key 'Max_paralel_tasks' (did you mean Max_parallel_tasks?)"},
		{"Secrets:\n  Source_type: environment\n  Profile: dev\nOrchestration:\n  Mode: local\n  Max_parallel_tasks: lots\nEngine:\n  dev:\n    jdbc_url: jdbc:sqlite:e.db\n    schema: main\n",
			"craft-connector.yml:6: Orchestration.Max_parallel_tasks"},
		{"Secrets:\n  Source_type: environment\n  Profile: dev\nOrchestration:\n  Mode: local\nEngine:\n  dev:\n    jdbc_url: jdbc:postgresql://127.0.0.1/x\n    schema: public\n    auth_mode: password\n    user: u\n    secret: NO_SUCH_SECRET_VARIABLE_X\n",
			"NO_SUCH_SECRET_VARIABLE_X"},
	}
	for _, c := range cases {
		p.Write("craft-connector.yml", c.yaml)
		r := p.Run(nil, "migrate")
		if r.Code != 3 || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("exit %d, stderr %q, want %q", r.Code, r.Stderr, c.want)
		}
	}
}

func TestUnreachablePostgresIsAConfigurationError(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.Write("craft-connector.yml", "Secrets:\n  Source_type: environment\n  Profile: dev\nOrchestration:\n  Mode: local\nEngine:\n  dev:\n    jdbc_url: jdbc:postgresql://127.0.0.1:1/x?connect_timeout=2\n    schema: public\n    auth_mode: password\n    user: u\n    secret: ENGINE_SECRET\n")
	r := p.Run([]string{"ENGINE_SECRET=hunter2-secret"}, "migrate")
	if r.Code != 3 || !strings.Contains(r.Stderr, "could not connect to the Engine DB") {
		t.Fatalf("exit %d: %q", r.Code, r.Stderr)
	}
	if strings.Contains(r.Stderr, "hunter2-secret") {
		t.Fatal("the password appears in the error")
	}
}
