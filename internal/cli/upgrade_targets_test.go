package cli_test

import (
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// upgrade-targets prints what it would add, adds it, then finds nothing to do.
func TestUpgradeTargetsCommand(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		if r := p.OK("upgrade-targets"); r.Stdout != "No active configured targets to upgrade\n" {
			t.Fatalf("with no targets: %q", r.Stdout)
		}
		db := p.DB()
		b := pipelinetest.New(t, db)
		b.Pipeline("P", "FULL")
		b.Task("P", "load_legacy", "SQL", map[string]string{"SQL_ACTION": "APPEND_TABLE", "TARGET_OBJECT": "main.legacy", "SOURCE_SQL": "SELECT 1 AS id"})
		p.WarehouseExec("CREATE TABLE main.legacy (id INTEGER, PIPELINE_RUN_ID BIGINT)", "INSERT INTO main.legacy VALUES (1, 1)")

		r := p.OK("upgrade-targets", "--dry-run")
		want := "main.legacy: would add nullable PIPELINE_ID, TASK_RUN_ID\n" +
			`ALTER TABLE "warehouse"."main"."legacy" ADD COLUMN "PIPELINE_ID" BIGINT` + "\n" +
			`ALTER TABLE "warehouse"."main"."legacy" ADD COLUMN "TASK_RUN_ID" BIGINT` + "\n"
		if r.Stdout != want {
			t.Fatalf("dry run printed\n%s\nwant\n%s", r.Stdout, want)
		}
		if r := p.OK("upgrade-targets", "--action", "APPEND_TABLE", "--target", "main.legacy"); r.Stdout != "main.legacy: added nullable PIPELINE_ID, TASK_RUN_ID; historical rows retain NULL\n" {
			t.Fatalf("upgrade printed %q", r.Stdout)
		}
		if r := p.OK("upgrade-targets"); r.Stdout != "main.legacy: identity columns already exist\n" {
			t.Fatalf("a second upgrade printed %q", r.Stdout)
		}
		if r := p.OK("upgrade-targets", "--action", "SCD1_MERGE"); r.Stdout != "No active configured targets to upgrade\n" {
			t.Fatalf("--action SCD1_MERGE printed %q", r.Stdout)
		}
		e2e.WantExit(t, p.Run(nil, "upgrade-targets", "--action", "DROP_TABLE"), 2, "--action DROP_TABLE: use one of")
		if n := e2e.Count(t, db, "SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND = 'upgrade-targets'"); n != 5 {
			t.Fatalf("%d requests recorded, want 5 (every run but the dry one, refused ones too)", n)
		}
	})
}
