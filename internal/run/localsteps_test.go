package run

import (
	"fmt"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// An orchestrator's steps in local mode, where etl-craft judges the gates
// (a local-mode DAG under Airflow): every step of a DAG run whose pipeline
// gate skipped the run at --init-only, and of a paused pipeline, exits 0
// saying why nothing ran, so that the DAG run ends as the Engine DB's run
// (SKIPPED, or none) rather than failing its task steps (exit 9, "use
// --force") and its finalize (exit 9, "expected IN-PROGRESS", or "matched
// 0 runs").
func TestLocalOrchestratorStepsOfASkippedRunOrAPausedPipeline(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		f.b.Pipeline("UP", "FULL")
		f.task("UP", "x", "succeed")
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "succeed")
		f.b.PipelineDep("P", "UP", pipeline.Success) // never satisfied: UP never runs
		s := f.supervisor()
		key := Request{PipelineCode: "P", RunKey: "orchestrator:r1"}
		task := func(r Request) (Outcome, error) {
			r.TaskCode = "a"
			return s.RunTask(f.ctx(), r)
		}

		init, err := s.InitRun(f.ctx(), key)
		if err != nil || init.Status != RunSkipped || !strings.Contains(init.Detail, "upstream pipeline UP (SUCCESS) has no finished run") {
			t.Fatalf("init: %q %v", init.String(), err)
		}
		out, err := task(key)
		if err != nil || out.Status != TaskSkipped || out.Code != exit.Success ||
			out.Detail != fmt.Sprintf("pipeline_run_id=%d ended SKIPPED before this task ran, so it runs nothing; use {force} to run it under that run", init.RunID) {
			t.Fatalf("task of the skipped run: %q %v", out.String(), err)
		}
		fin, err := s.FinalizeRun(f.ctx(), key)
		if err != nil || fin.Status != RunSkipped || fin.Code != exit.Success || fin.RunID != init.RunID {
			t.Fatalf("finalize of the skipped run: %q %v", fin.String(), err)
		}
		if got := f.statuses(init.RunID); len(got) != 0 || f.runStatus(init.RunID) != RunSkipped {
			t.Fatalf("the skipped run: %s, tasks %v", f.runStatus(init.RunID), got)
		}
		// --force still runs the task under the skipped run.
		if out, err := s.RunTask(f.ctx(), Request{PipelineCode: "P", TaskCode: "a", RunKey: "orchestrator:r1", Force: true}); err != nil ||
			out.Status != TaskSuccess {
			t.Fatalf("a forced task of the skipped run: %q %v", out.String(), err)
		}

		// A paused pipeline: no step starts anything, and none fails.
		if _, err := gate.Pause(f.ctx(), db, f.b.PipelineID("P"), "maintenance"); err != nil {
			t.Fatal(err)
		}
		paused := Request{PipelineCode: "P", RunKey: "orchestrator:r2"}
		for name, step := range map[string]func() (Outcome, error){
			"init":     func() (Outcome, error) { return s.InitRun(f.ctx(), paused) },
			"task":     func() (Outcome, error) { return task(paused) },
			"finalize": func() (Outcome, error) { return s.FinalizeRun(f.ctx(), paused) },
		} {
			out, err := step()
			if err != nil || out.Status != Paused || out.Code != exit.Success || !strings.Contains(out.Detail, "maintenance; nothing was started") {
				t.Errorf("%s of a paused pipeline: %q %v", name, out.String(), err)
			}
		}
		if n := f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE RUN_KEY = 'orchestrator:r2'"); n != 0 {
			t.Errorf("%d runs under the paused pipeline's key", n)
		}
	})
}
