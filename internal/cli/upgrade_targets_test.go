package cli_test

import (
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// upgrade-targets prints what it would add, adds it, then finds nothing to do.
func TestUpgradeTargetsCommand(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		if r := p.ok("upgrade-targets"); r.stdout != "No active configured targets to upgrade\n" {
			t.Fatalf("with no targets: %q", r.stdout)
		}
		db := p.db()
		b := pipelinetest.New(t, db)
		b.Pipeline("P", "FULL")
		b.Task("P", "load_legacy", "SQL", map[string]string{"SQL_ACTION": "APPEND_TABLE", "TARGET_OBJECT": "main.legacy", "SOURCE_SQL": "SELECT 1 AS id"})
		p.warehouseExec("CREATE TABLE main.legacy (id INTEGER, PIPELINE_RUN_ID BIGINT)", "INSERT INTO main.legacy VALUES (1, 1)")

		r := p.ok("upgrade-targets", "--dry-run")
		want := "main.legacy: would add nullable PIPELINE_ID, TASK_RUN_ID\n" +
			`ALTER TABLE "warehouse"."main"."legacy" ADD COLUMN "PIPELINE_ID" BIGINT` + "\n" +
			`ALTER TABLE "warehouse"."main"."legacy" ADD COLUMN "TASK_RUN_ID" BIGINT` + "\n"
		if r.stdout != want {
			t.Fatalf("dry run printed\n%s\nwant\n%s", r.stdout, want)
		}
		if r := p.ok("upgrade-targets", "--action", "APPEND_TABLE", "--target", "main.legacy"); r.stdout != "main.legacy: added nullable PIPELINE_ID, TASK_RUN_ID; historical rows retain NULL\n" {
			t.Fatalf("upgrade printed %q", r.stdout)
		}
		if r := p.ok("upgrade-targets"); r.stdout != "main.legacy: identity columns already exist\n" {
			t.Fatalf("a second upgrade printed %q", r.stdout)
		}
		if r := p.ok("upgrade-targets", "--action", "SCD1_MERGE"); r.stdout != "No active configured targets to upgrade\n" {
			t.Fatalf("--action SCD1_MERGE printed %q", r.stdout)
		}
		wantExit(t, p.run(nil, "upgrade-targets", "--action", "DROP_TABLE"), 2, "--action DROP_TABLE: use one of")
		if n := count(t, db, "SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND = 'upgrade-targets'"); n != 5 {
			t.Fatalf("%d requests recorded, want 5 (every run but the dry one, refused ones too)", n)
		}
	})
}
