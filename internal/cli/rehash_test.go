package cli_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// warehouseExec runs statements in the project's DuckDB warehouse file,
// which is closed again before the binary runs.
func (p *project) warehouseExec(stmts ...string) {
	p.t.Helper()
	ctx := context.Background()
	w, err := warehouse.Open(ctx, warehouse.Options{Kind: warehouse.DuckDB, Path: filepath.Join(p.dir, "warehouse.duckdb"), Schema: "main"})
	if err != nil {
		p.t.Fatal(err)
	}
	defer w.Close()
	for _, s := range stmts {
		tx, err := w.Begin(ctx)
		if err != nil {
			p.t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, s); err != nil {
			tx.Rollback()
			p.t.Fatalf("%s: %v", s, err)
		}
		if err := tx.Commit(); err != nil {
			p.t.Fatal(err)
		}
	}
}

// W08: rehash --dry-run shows the count and the statement and changes
// nothing; rehash rewrites the hashes and records version 2.
func TestRehashCommand(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		db := p.db()
		b := pipelinetest.New(t, db)
		b.Pipeline("P", "FULL")
		b.Task("P", "merge_customers", "SQL", map[string]string{"SQL_ACTION": "SCD1_MERGE", "TARGET_OBJECT": "main.customers",
			"MERGE_KEY": "id", "MERGE_COMPARE_COLUMNS": "name", "SOURCE_SQL": "SELECT id, name FROM main.src"})
		p.warehouseExec(`CREATE TABLE main.customers (id INTEGER, name VARCHAR, PIPELINE_ID BIGINT, PIPELINE_RUN_ID BIGINT, TASK_RUN_ID BIGINT,
			HASH_KEY VARCHAR, CREATE_DATE TIMESTAMPTZ, CREATED_BY VARCHAR, UPDATE_DATE TIMESTAMPTZ, UPDATED_BY VARCHAR, DELETE_FLAG VARCHAR)`,
			"INSERT INTO main.customers (id, name, HASH_KEY) VALUES (1, 'a', 'old'), (2, 'b', 'old')")
		const version = "SELECT COUNT(*) FROM AUD_TARGET_HASH_VERSION WHERE TARGET_OBJECT = 'warehouse.main.customers' AND HASH_VERSION = 2"

		r := p.ok("rehash", "--target", "main.customers", "--dry-run")
		lines := strings.SplitN(r.stdout, "\n", 2)
		if lines[0] != "main.customers: would rehash 2 row(s) with hash version 2" || !strings.HasPrefix(lines[1], `UPDATE "warehouse"."main"."customers" SET "HASH_KEY" = MD5(`) {
			t.Fatalf("dry run printed\n%s", r.stdout)
		}
		if n := count(t, db, version); n != 0 {
			t.Fatal("the dry run recorded a version")
		}
		if n := count(t, db, "SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND = 'rehash'"); n != 0 {
			t.Fatal("the dry run recorded a request")
		}

		r = p.ok("rehash", "--target", "main.customers")
		if r.stdout != "main.customers: rehashed 2 row(s) with hash version 2\n" {
			t.Fatalf("rehash printed %q", r.stdout)
		}
		if n := count(t, db, version); n != 1 {
			t.Fatal("rehash recorded no version 2")
		}
		if n := count(t, db, "SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND = 'rehash'"); n != 1 {
			t.Fatal("rehash recorded no request")
		}

		wantExit(t, p.run(nil, "rehash"), 2, "--target is required")
		wantExit(t, p.run(nil, "rehash", "--target", "main.others"), 21, "no active SCD1_MERGE or SCD2_MERGE task writes main.others")
	})
}
