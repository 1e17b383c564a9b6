package cli_test

import (
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// W08: rehash --dry-run shows the count and the statement and changes
// nothing; rehash rewrites the hashes and records version 2.
func TestRehashCommand(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		db := p.DB()
		b := pipelinetest.New(t, db)
		b.Pipeline("P", "FULL")
		b.Task("P", "merge_customers", "SQL", map[string]string{"SQL_ACTION": "SCD1_MERGE", "TARGET_OBJECT": "main.customers",
			"MERGE_KEY": "id", "MERGE_COMPARE_COLUMNS": "name", "SOURCE_SQL": "SELECT id, name FROM main.src"})
		p.WarehouseExec(`CREATE TABLE main.customers (id INTEGER, name VARCHAR, PIPELINE_ID BIGINT, PIPELINE_RUN_ID BIGINT, TASK_RUN_ID BIGINT,
			HASH_KEY VARCHAR, CREATE_DATE TIMESTAMPTZ, CREATED_BY VARCHAR, UPDATE_DATE TIMESTAMPTZ, UPDATED_BY VARCHAR, DELETE_FLAG VARCHAR)`,
			"INSERT INTO main.customers (id, name, HASH_KEY) VALUES (1, 'a', 'old'), (2, 'b', 'old')")
		const version = "SELECT COUNT(*) FROM AUD_TARGET_HASH_VERSION WHERE TARGET_OBJECT = 'warehouse.main.customers' AND HASH_VERSION = 2"

		r := p.OK("rehash", "--target", "main.customers", "--dry-run")
		lines := strings.SplitN(r.Stdout, "\n", 2)
		if lines[0] != "main.customers: would rehash 2 row(s) with hash version 2" || !strings.HasPrefix(lines[1], `UPDATE "warehouse"."main"."customers" SET "HASH_KEY" = MD5(`) {
			t.Fatalf("dry run printed\n%s", r.Stdout)
		}
		if n := e2e.Count(t, db, version); n != 0 {
			t.Fatal("the dry run recorded a version")
		}
		if n := e2e.Count(t, db, "SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND = 'rehash'"); n != 0 {
			t.Fatal("the dry run recorded a request")
		}

		r = p.OK("rehash", "--target", "main.customers")
		if r.Stdout != "main.customers: rehashed 2 row(s) with hash version 2\n" {
			t.Fatalf("rehash printed %q", r.Stdout)
		}
		if n := e2e.Count(t, db, version); n != 1 {
			t.Fatal("rehash recorded no version 2")
		}
		if n := e2e.Count(t, db, "SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND = 'rehash'"); n != 1 {
			t.Fatal("rehash recorded no request")
		}

		e2e.WantExit(t, p.Run(nil, "rehash"), 2, "--target is required")
		e2e.WantExit(t, p.Run(nil, "rehash", "--target", "main.others"), 21, "no active SCD1_MERGE or SCD2_MERGE task writes main.others")
	})
}
