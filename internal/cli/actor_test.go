package cli_test

import (
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

func TestMigrateRecordsTheActorOfTheEnvironment(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		p.Write("migrations/0001_pipeline.sql", `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P', 'first name', 'FULL');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('OLD', 'to retire', 'FULL');
UPDATE CFG_PIPELINES SET PIPELINE_NAME = 'second name' WHERE PIPELINE_CODE = 'P';
UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_CODE = 'OLD';
`)
		env := []string{"ETL_CRAFT_ACTOR=ci:build-7", "ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR"}
		if r := p.Run(env, "migrate"); r.Code != 0 {
			t.Fatalf("migrate: %d %s", r.Code, r.Stderr)
		}
		db := p.DB()
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'migrate' AND ACTOR = 'ci:build-7' AND ACTOR_KIND = 'ORCHESTRATOR'"); n != 1 {
			t.Fatalf("%d migrate actions by ci:build-7", n)
		}
		if n := e2e.Count(t, db, `SELECT count(*) FROM AUD_METADATA_CHANGES
			WHERE ACTOR = 'ci:build-7' AND ACTOR_KIND = 'ORCHESTRATOR' AND MIGRATION = '0001_pipeline.sql' AND TABLE_NAME = 'CFG_PIPELINES'`); n != 4 {
			t.Fatalf("%d metadata changes by ci:build-7, want 4 (two inserts, two updates)", n)
		}
		var before, after string
		err := db.QueryRowContext(t.Context(), `SELECT CAST(BEFORE_JSON AS VARCHAR), CAST(AFTER_JSON AS VARCHAR) FROM AUD_METADATA_CHANGES
			WHERE OPERATION = 'UPDATE' AND ROW_KEY = (SELECT CAST(PIPELINE_ID AS VARCHAR) FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'P')`).Scan(&before, &after)
		if err != nil || !strings.Contains(before, "first name") || !strings.Contains(after, "second name") {
			t.Fatalf("update change: %q -> %q (%v)", before, after, err)
		}
		var createdBy string
		db.QueryRowContext(t.Context(), "SELECT CREATED_BY FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'P'").Scan(&createdBy)
		if createdBy != "ci:build-7" {
			t.Fatalf("CREATED_BY %q", createdBy)
		}

		p.Write("migrations/0002_noop.sql", "UPDATE CFG_PIPELINES SET PIPELINE_NAME = PIPELINE_NAME WHERE PIPELINE_CODE = 'NONE';\n")
		for _, bad := range [][]string{{"ETL_CRAFT_ACTOR="}, {"ETL_CRAFT_ACTOR_KIND=ROBOT"}, {"ETL_CRAFT_ACTOR=bad\nname"}} {
			r := p.Run(bad, "migrate")
			if r.Code != 3 || !strings.Contains(r.Stderr, "ETL_CRAFT_ACTOR") {
				t.Fatalf("%v: exit %d %q", bad, r.Code, r.Stderr)
			}
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'migrate'"); n != 1 {
			t.Fatalf("a refused actor wrote %d actions", n-1)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM SCHEMA_MIGRATIONS WHERE VERSION = '0002_noop.sql'"); n != 0 {
			t.Fatal("a refused actor applied a migration")
		}
	})
}

func TestPrintGrantsExecutesNothing(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		r := p.OK("setup", "--print-grants")
		if kind == engine.SQLite {
			if !strings.Contains(r.Stdout, "file permissions") || !strings.Contains(r.Stdout, "chmod go-w") {
				t.Fatalf("SQLite advice:\n%s", r.Stdout)
			}
		} else {
			for _, want := range []string{"etl_craft_owner", "etl_craft_engine", "etl_craft_reader", "ALTER DEFAULT PRIVILEGES"} {
				if !strings.Contains(r.Stdout, want) {
					t.Fatalf("grants lack %s:\n%s", want, r.Stdout)
				}
			}
			if tables, _ := p.DB().Tables(t.Context()); len(tables) != 0 {
				t.Fatalf("--print-grants created %v", tables)
			}
		}
	})
}
