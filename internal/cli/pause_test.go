package cli_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// I10: pause and resume at the command line: the pause history with its
// actors, refusals, JSON documents and the recorded requests.
func TestPauseAndResumeCommands(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		db := p.DB()
		sales := pipelinetest.New(t, db).Pipeline("SALES", pipeline.Full)
		alice := []string{"ETL_CRAFT_ACTOR=alice@test"}
		bob := []string{"ETL_CRAFT_ACTOR=bob", "ETL_CRAFT_ACTOR_KIND=SCHEDULE"}

		r := p.Run(alice, "pause", "--pipeline_code", "SALES", "--reason", "warehouse maintenance")
		if r.Code != 0 || r.Stdout != "SALES: paused; etl-craft run starts nothing of it until it is resumed\n" {
			t.Fatalf("pause: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		again := p.Run(bob, "pause", "--pipeline_code", "SALES", "--reason", "again")
		e2e.WantExit(t, again, 9, "SALES is already paused by alice@test (HUMAN) since ")
		e2e.WantExit(t, again, 9, "resume it (etl-craft resume --pipeline_code SALES --reason …) before pausing it again")
		e2e.WantExit(t, p.Run(bob, "pause", "--pipeline_code", "SALES", "--reason", " "), 2, "--reason is required")
		e2e.WantExit(t, p.Run(bob, "resume", "--pipeline_code", "SALES"), 2, "--reason is required")
		e2e.WantExit(t, p.Run(bob, "pause", "--reason", "why"), 2, "--pipeline_code is required")
		e2e.WantExit(t, p.Run(bob, "pause", "--pipeline_code", "SALSE", "--reason", "typo"), 4, `no active pipeline has the code "SALSE"`)

		r = p.Run(bob, "resume", "--pipeline_code", "SALES", "--reason", "maintenance over", "--format", "json")
		var doc struct {
			Schema, Status, Message string
			PipelineCode            string `json:"pipeline_code"`
			PipelineID              int64  `json:"pipeline_id"`
			Run, Task               any
			Waiting                 bool
			Pipeline                struct {
				PipelineCode string `json:"pipeline_code"`
				Paused       *struct {
					PausedBy string `json:"paused_by"`
					Reason   string `json:"reason"`
				} `json:"paused"`
			}
		}
		if err := jsonUnmarshal(r.Stdout, &doc); err != nil || r.Code != 0 {
			t.Fatalf("resume: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
		}
		if doc.Schema != "etl-craft/operation/1" || doc.Status != "SUCCESS" || doc.Message != "SALES: resumed" ||
			doc.PipelineID != sales || doc.PipelineCode != "SALES" || doc.Run != nil || doc.Task != nil || doc.Waiting ||
			doc.Pipeline.PipelineCode != "SALES" || doc.Pipeline.Paused != nil {
			t.Fatalf("resume document: %+v\n%s", doc, r.Stdout)
		}
		e2e.WantExit(t, p.Run(alice, "resume", "--pipeline_code", "SALES", "--reason", "again"), 9, "SALES is not paused; nothing to resume")

		r = p.Run(bob, "pause", "--pipeline_code", "SALES", "--reason", "nightly freeze", "--format", "json")
		if err := jsonUnmarshal(r.Stdout, &doc); err != nil || r.Code != 0 || doc.Pipeline.Paused == nil ||
			doc.Pipeline.Paused.PausedBy != "bob" || doc.Pipeline.Paused.Reason != "nightly freeze" {
			t.Fatalf("pause document: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
		}

		history := textColumn(t, db, `SELECT PAUSED_BY || ' ' || PAUSED_BY_KIND || ' ' || REASON || ' / ' ||
				COALESCE(RESUMED_BY || ' ' || RESUMED_BY_KIND || ' ' || RESUME_REASON, 'open')
			FROM AUD_PIPELINE_PAUSES ORDER BY PIPELINE_PAUSE_ID`)
		want := []string{"alice@test HUMAN warehouse maintenance / bob SCHEDULE maintenance over", "bob SCHEDULE nightly freeze / open"}
		if strings.Join(history, "\n") != strings.Join(want, "\n") {
			t.Fatalf("pause history:\n%s\nwant:\n%s", strings.Join(history, "\n"), strings.Join(want, "\n"))
		}
		// Every request that reached the Engine DB is recorded, refused or
		// not; usage errors are not.
		actions := textColumn(t, db, `SELECT COMMAND || ' ' || ACTOR || ' ' || COALESCE(CAST(PIPELINE_ID AS VARCHAR), '-')
			FROM AUD_ACTIONS WHERE COMMAND IN ('pause', 'resume') ORDER BY ACTION_ID`)
		id := strconv.FormatInt(sales, 10)
		want = []string{"pause alice@test " + id, "pause bob " + id, "pause bob -", "resume bob " + id,
			"resume alice@test " + id, "pause bob " + id}
		if strings.Join(actions, "\n") != strings.Join(want, "\n") {
			t.Fatalf("actions:\n%s\nwant:\n%s", strings.Join(actions, "\n"), strings.Join(want, "\n"))
		}

		// Remote mode refuses both, and changes nothing.
		path := filepath.Join(p.Dir, "craft-connector.yml")
		yml, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		p.Write("craft-connector.yml", strings.Replace(string(yml), "Mode: local", "Mode: remote", 1))
		e2e.WantExit(t, p.Run(alice, "resume", "--pipeline_code", "SALES", "--reason", "remote"), 10, "resume is refused in remote mode")
		e2e.WantExit(t, p.Run(alice, "pause", "--pipeline_code", "SALES", "--reason", "remote"), 10, "pause is refused in remote mode")
		if n := len(textColumn(t, db, "SELECT REASON FROM AUD_PIPELINE_PAUSES WHERE RESUMED_AT IS NULL AND REASON = 'nightly freeze'")); n != 1 {
			t.Fatalf("remote mode changed the pause history")
		}
	})
}

// textColumn reads the first column of a query's rows as text.
func textColumn(t *testing.T, db *engine.DB, query string) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
