package run

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The SLA statuses of a run (AUD_PIPELINES_RUN_LOG.SLA_STATUS).
const (
	SLAMet      = string(records.SLAMet)
	SLABreached = string(records.SLABreached)
)

// Breach is a run that passed its pipeline's SLA_IN_HOURS, as the
// supervisor that recorded it saw it. Each run has at most one: its SLA
// status is decided once.
type Breach struct {
	Pipeline pipeline.Pipeline
	RunID    int64
	RunKey   string
	// Start is when the run started.
	Start time.Time
	// At is when the breach was recorded.
	At time.Time
	// Live is set when the run was still running then; otherwise it was
	// decided as the run ended.
	Live bool
}

// slaStatus measures the run's SLA at now when the pipeline has one: MET
// within SLA_IN_HOURS of its start, else BREACHED; "" without an SLA.
func slaStatus(p pipeline.Pipeline, r runRow, now time.Time) string {
	deadline, ok := slaDeadline(p, r)
	switch {
	case !ok:
		return ""
	case now.After(deadline):
		return SLABreached
	}
	return SLAMet
}

// slaDeadline is when the run passes its pipeline's SLA; false when the
// pipeline has no SLA or the run has not started.
func slaDeadline(p pipeline.Pipeline, r runRow) (time.Time, bool) {
	if !p.SLAHours.Valid || !r.Start.Valid {
		return time.Time{}, false
	}
	return r.Start.Time.Add(time.Duration(p.SLAHours.Float64 * float64(time.Hour))), true
}

// recordSLA decides the SLA status of an IN-PROGRESS run at now, in tx:
// BREACHED when it is past its SLA; MET when it is within it and ending
// (a live check records breaches only). A run whose SLA status is decided
// keeps it, and a run that was ever reopened is never measured again. It
// returns the breach when this call recorded one.
func recordSLA(ctx context.Context, tx *wtx, p pipeline.Pipeline, r runRow, now time.Time, ending bool) (*Breach, error) {
	status := slaStatus(p, r, now)
	if status == "" || (status == SLAMet && !ending) {
		return nil, nil
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET SLA_STATUS = $2
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $3 AND SLA_STATUS IS NULL
		AND NOT EXISTS (SELECT 1 FROM AUD_RUN_INTERVENTIONS i WHERE i.PIPELINE_RUN_ID = $1 AND i.ACTION = 'REOPEN')`,
		r.ID, status, RunInProgress)
	missed, err := noRow(res, err)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not record the SLA status of pipeline_run_id=%d in %s", r.ID, runsTable)
	}
	if missed || status != SLABreached {
		return nil, nil
	}
	return &Breach{Pipeline: p, RunID: r.ID, RunKey: r.Key, Start: r.Start.Time, At: now, Live: !ending}, nil
}

// breachNote is what a run's result line says of a BREACHED SLA, as the
// reference's does ("SLA of 2 h BREACHED"); "" for any other SLA status.
func breachNote(p pipeline.Pipeline, sla string) string {
	if sla != SLABreached {
		return ""
	}
	return "SLA of " + strconv.FormatFloat(p.SLAHours.Float64, 'g', -1, 64) + " h " + SLABreached
}

// breached logs a breach this supervisor recorded and gives it to
// Options.OnBreach; a failure there is logged and changes nothing else.
func (s *Supervisor) breached(ctx context.Context, b *Breach) {
	if b == nil {
		return
	}
	s.log.Warn("the run passed its SLA", "pipeline", b.Pipeline.Code, "pipeline_run_id", b.RunID,
		"sla_hours", b.Pipeline.SLAHours.Float64, "started", b.Start.UTC().Format(time.RFC3339), "running", b.Live)
	if s.opts.OnBreach == nil {
		return
	}
	if err := s.opts.OnBreach(ctx, *b); err != nil {
		s.log.Error("the SLA breach could not be reported; the run is unchanged",
			"pipeline", b.Pipeline.Code, "pipeline_run_id", b.RunID, "error", err)
	}
}

// slaWatch records, once, the breach of a live run that passes its SLA
// while its supervisor runs it.
type slaWatch struct {
	deadline time.Time
	// done is set once the run was measured, or has no SLA.
	done bool
	// reporting waits for the breach's report.
	reporting sync.WaitGroup
}

// watchSLA arms the dispatcher's SLA watch: local runs only, since in
// remote mode no supervisor watches a run between its tasks.
func (d *dispatcher) watchSLA() {
	deadline, ok := slaDeadline(d.g.Pipeline, d.run)
	d.sla.deadline, d.sla.done = deadline, !ok || d.s.opts.Remote
}

// checkSLA records the run's breach once it is past its SLA, and reports
// it without holding up the dispatch loop (supervise waits for the report
// before it returns). A breach that could not be recorded is tried again at
// the next check.
func (d *dispatcher) checkSLA(ctx context.Context) {
	now := time.Now()
	if d.sla.done || !now.After(d.sla.deadline) {
		return
	}
	var b *Breach
	err := inTx(ctx, d.s.opts.DB, func(tx *wtx) (err error) {
		b, err = recordSLA(ctx, tx, d.g.Pipeline, d.run, now, false)
		return err
	})
	if err != nil {
		d.s.log.Warn("could not record the run's SLA breach; trying again", "pipeline_run_id", d.run.ID, "error", err)
		return
	}
	d.sla.done = true
	if b == nil {
		return
	}
	d.sla.reporting.Add(1)
	go func() {
		defer d.sla.reporting.Done()
		d.s.breached(ctx, b)
	}()
}
