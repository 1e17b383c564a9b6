package run

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// flagRecorder is a handler that succeeds and records how each attempt was
// asked for.
type flagRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (h *flagRecorder) Run(_ context.Context, t *handler.Task) (handler.Result, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, fmt.Sprintf("%d force=%t rerun=%t", t.AttemptNumber, t.Force, t.Rerun))
	return handler.Result{}, nil
}

func (h *flagRecorder) Check(*handler.Task) ([]string, []string) { return nil, nil }

// A handler tells an operator's --force (the task's whole target) from a
// --rerun (the task again under its run): a plain attempt is neither.
func TestHandlersTellForceFromRerun(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		rec := &flagRecorder{}
		f.opts.Handlers = handler.Registry{pipeline.HandlerPython: rec}
		f.b.Pipeline("P", "FULL")
		f.task("P", "a", "succeed")
		out := f.runPipeline("P")
		s := f.supervisor()
		if _, err := s.Rerun(f.ctx(), Request{PipelineCode: "P", RunID: out.RunID, TaskCode: "a", Reason: "late rows"}, false); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RunTask(f.ctx(), Request{PipelineCode: "P", RunID: out.RunID, TaskCode: "a", Force: true}); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(rec.seen); got != "[1 force=false rerun=false 2 force=false rerun=true 3 force=true rerun=false]" {
			t.Fatalf("the handler saw %s", got)
		}
	})
}
