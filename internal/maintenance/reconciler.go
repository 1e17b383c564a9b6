package maintenance

import (
	"context"
	"log/slog"

	"github.com/etl-craft/etl-craft/internal/run"
)

// ReconcileEvery is how often the reconciler looks for expired leases.
const ReconcileEvery = run.RenewEvery

// Reconciler fences the attempts of dead or stuck holders as LOST and
// releases their runs for resumption (run.Supervisor.Reconcile), at start
// and every ReconcileEvery, and calls Released when it released runs.
type Reconciler struct {
	Supervisor *run.Supervisor
	Logger     *slog.Logger
	// Released is called after a pass that released runs or fenced
	// attempts, so that the server takes them up at once; nil for none.
	Released func()

	loop loop
}

// Name names the service.
func (r *Reconciler) Name() string { return "reconciler" }

// Start runs a first pass, then one every ReconcileEvery.
func (r *Reconciler) Start(ctx context.Context) error {
	r.loop = loop{every: ReconcileEvery, work: r.pass}
	r.loop.start(ctx)
	return nil
}

// pass reconciles every pipeline once.
func (r *Reconciler) pass(ctx context.Context) {
	rec, err := r.Supervisor.Reconcile(ctx, run.Scope{})
	log := logger(r.Logger)
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("reconciliation failed; trying again", "every", ReconcileEvery.String(), "error", err)
	case len(rec.Lost) > 0 || len(rec.Released) > 0:
		for _, l := range rec.Lost {
			log.Warn("an attempt was lost with its holder", "pipeline", l.PipelineCode, "task", l.TaskCode,
				"attempt_id", l.AttemptID, "owner", l.Owner, "retry_attempt_id", l.RetryAttemptID)
		}
		if len(rec.Released) > 0 {
			log.Info("runs released for resumption", "pipeline_run_ids", rec.Released)
		}
		if r.Released != nil {
			r.Released()
		}
	}
}

// Stop ends the reconciler.
func (r *Reconciler) Stop() { r.loop.stop() }
