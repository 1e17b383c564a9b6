package run

import (
	"context"
	"errors"
	"fmt"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// errWoundDown is the cause of a pipeline-gate wait the server's wind-down
// interrupted.
var errWoundDown = errors.New("the server is stopping")

// Execute runs one run of the pipeline as the server does, under a lease of
// its own: req names the run by RunID (a QUEUED run, admitted through its
// pipeline gate, or an IN-PROGRESS run no process holds). It goes as
// RunPipeline goes, with the attempts of every run taking the supervisor's
// shared Pool, until the run settles, or until wind is closed: then nothing
// more starts, a pipeline-gate wait ends at once (the run stays QUEUED, its
// persisted wait kept), and the running attempts may finish until ctx ends,
// when they are stopped. A run wound down stays IN-PROGRESS, released for
// the next supervisor (exit 22).
func (s *Supervisor) Execute(ctx context.Context, req Request, wind <-chan struct{}) (Outcome, error) {
	if req.RunID == 0 {
		return Outcome{PipelineCode: req.PipelineCode}, exit.Errorf(exit.Usage,
			"pipeline %s: Execute needs the id of the run to execute", req.PipelineCode)
	}
	return s.runPipeline(ctx, req, wind)
}

// windContext returns ctx, also ended when wind is closed; stop frees it.
// A nil wind gives ctx itself.
func windContext(ctx context.Context, wind <-chan struct{}) (context.Context, context.CancelFunc) {
	if wind == nil {
		return ctx, func() {}
	}
	wctx, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-wind:
			cancel(errWoundDown)
		case <-wctx.Done():
		}
	}()
	return wctx, func() { cancel(nil) }
}

// windDown starts nothing more and waits for the running attempts until
// ctx ends, when the ones still running are stopped (and recorded FAILED).
// The run is released IN-PROGRESS for the next supervisor (exit 22).
func (d *dispatcher) windDown(ctx context.Context, out Outcome) (Outcome, error) {
	d.s.log.Info("winding the run down: starting nothing more", "pipeline_run_id", d.run.ID, "running", d.running)
	finished, stopped := 0, 0
	for d.running > 0 && ctx.Err() == nil {
		select {
		case r := <-d.results:
			if !r.notStarted {
				finished++
			}
			if err := d.settle(d.records, r); err != nil {
				d.s.log.Error("could not record a task while stopping", "error", err)
			}
		case <-ctx.Done():
		}
	}
	if d.running > 0 {
		stopped = d.running
		d.stop(errInterrupted)
		d.drain(d.records)
	}
	if err := d.release(d.records); err != nil {
		return out, err
	}
	out.Detail = fmt.Sprintf("the server stopped: %d running task(s) finished, %d were stopped; the run stays %s for the next server",
		finished, stopped, RunInProgress)
	out.Code = exit.Incomplete
	return out, nil
}
