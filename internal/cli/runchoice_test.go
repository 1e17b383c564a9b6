package cli_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

func TestReadOnlyCommandsShowTheLatestRunWithoutASelector(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		ip := newInspectedProject(t, kind)
		before := rowCounts(t, ip.db)
		id := fmt.Sprint(ip.runID)
		latest := fmt.Sprintf("showing the pipeline's most recent run: none is QUEUED or IN-PROGRESS (--run-id or --run-key chooses another)\" pipeline=SALES pipeline_run_id=%d\n", ip.runID)

		// SALES's one run has ended: steps and status show it, as --run-id
		// does, and say on stderr that they chose it.
		for _, cmd := range []string{"steps", "status"} {
			r := ip.OK(cmd, "--pipeline_code", "SALES")
			if want := ip.OK(cmd, "--pipeline_code", "SALES", "--run-id", id); r.Stdout != want.Stdout || want.Stderr != "" {
				t.Fatalf("%s without a selector:\n%s\nwith --run-id %s:\n%s%s", cmd, r.Stdout, id, want.Stdout, want.Stderr)
			}
			if !strings.HasSuffix(r.Stderr, latest) || strings.Count(r.Stderr, "\n") != 1 {
				t.Fatalf("%s without a selector: stderr %q, want it to end %q", cmd, r.Stderr, latest)
			}
		}
		// JSON stays one document on stdout; the note is a JSON log record.
		r := ip.OK("status", "--pipeline_code", "SALES", "--format", "json", "--log-format", "json")
		var st struct {
			Run struct {
				ID     int64  `json:"pipeline_run_id"`
				Status string `json:"status"`
			} `json:"run"`
		}
		var note struct {
			Level    string `json:"level"`
			Msg      string `json:"msg"`
			Pipeline string `json:"pipeline"`
			RunID    int64  `json:"pipeline_run_id"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil || st.Run.ID != ip.runID || st.Run.Status != "FAILED" {
			t.Fatalf("status JSON %v:\n%s", err, r.Stdout)
		}
		if err := json.Unmarshal([]byte(r.Stderr), &note); err != nil || note.Level != "INFO" || note.RunID != ip.runID ||
			note.Pipeline != "SALES" || !strings.HasPrefix(note.Msg, "showing the pipeline's most recent run") {
			t.Fatalf("the note %v: %q", err, r.Stderr)
		}

		// UP's run is in progress: that one, said so.
		r = ip.OK("steps", "--pipeline_code", "UP")
		want := fmt.Sprintf("showing the pipeline's run that has not ended (no --run-id or --run-key given)\" pipeline=UP pipeline_run_id=%d\n", ip.upRunID)
		if !strings.Contains(r.Stdout, "publish\tNOT-RUN\tSQL") || !strings.HasSuffix(r.Stderr, want) {
			t.Fatalf("UP's run in progress:\n%s%s", r.Stdout, r.Stderr)
		}

		// history lists the recent runs, as --all does.
		r = ip.OK("history", "--pipeline_code", "SALES")
		if all := ip.OK("history", "--pipeline_code", "SALES", "--all"); r.Stdout != all.Stdout ||
			!strings.HasPrefix(r.Stdout, "PIPELINE_RUN_ID\tSTATUS\t") || !strings.Contains(r.Stdout, "\n"+id+"\tFAILED\t") {
			t.Fatalf("history without a selector:\n%s\nwith --all:\n%s", r.Stdout, all.Stdout)
		}

		// A pipeline that never ran has no run to show.
		for _, cmd := range []string{"steps", "status"} {
			e2e.WantExit(t, ip.Run(nil, cmd, "--pipeline_code", "NEW"), 9,
				"run selection matched 0 runs: pipeline NEW has no runs yet (`etl-craft run --pipeline_code NEW` starts one)")
		}
		if after := rowCounts(t, ip.db); !reflect.DeepEqual(before, after) {
			t.Fatalf("the read-only commands changed row counts:\nbefore %v\nafter  %v", before, after)
		}

		// Commands that change a run keep the strict selection: an ended run
		// only by --run-id or --run-key.
		strict := "run selection matched 0 runs: pipeline SALES has no QUEUED or IN-PROGRESS run; " +
			"an ended run is chosen only by --run-id or --run-key"
		e2e.WantExit(t, ip.Run(nil, "cancel", "--pipeline_code", "SALES", "--reason", "wrong date"), 9, strict)
		e2e.WantExit(t, ip.Run(nil, "mark", "--pipeline_code", "SALES", "--status", "SUCCESS", "--reason", "by hand"), 9, strict)
		if n := e2e.Count(t, ip.db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'FAILED'"); n != 1 {
			t.Fatalf("a refused command changed the ended run: %d FAILED runs", n)
		}
	})
}
