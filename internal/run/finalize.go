package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// finalize ends the dispatcher's run. A run someone else ended meanwhile,
// such as an operator's cancel, keeps that ending. When the Engine DB is
// unavailable the run is kept, and the error returned for the supervisor to
// try again (see dispatcher.outage).
func (d *dispatcher) finalize(ctx context.Context) (Outcome, error) {
	out := Outcome{PipelineCode: d.g.Pipeline.Code, RunID: d.run.ID, Status: RunInProgress}
	err := d.hold(d.records)
	if err == nil {
		out, err = d.s.finish(d.records, d.g, d.run, d.owner, strings.Join(d.bypassed, "; "))
	}
	if exit.Is(err, exit.StaleTransition) {
		if ended, _, cerr := d.check(d.records); cerr == nil && ended != "" {
			return d.endedElsewhere(out, ended)
		}
	}
	if err != nil && !d.s.opts.DB.IsUnavailable(err) {
		return out, d.abandon(err)
	}
	return out, err
}

// finish ends an IN-PROGRESS run held by owner ("" for none) from its
// tasks' statuses, in one transaction with its SLA status (recordSLA) and what it
// consumed through its pipeline dependencies (gate.ConsumeRun: only a run
// that ended SUCCESS consumes, and only its SATISFIED admission decisions),
// then runs the after-run hooks. note, when set, is added to the summary.
func (s *Supervisor) finish(ctx context.Context, g *pipeline.Graph, r runRow, owner, note string) (Outcome, error) {
	out := Outcome{PipelineCode: g.Pipeline.Code, RunID: r.ID, Status: RunInProgress}
	var status, detail, sla string
	var breach *Breach
	err := inTx(ctx, s.opts.DB, func(tx *wtx) error {
		rows, err := loadTaskRuns(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		now := time.Now()
		status, detail = verdict(g, rows)
		if breach, err = recordSLA(ctx, tx, g.Pipeline, r, now, true); err != nil {
			return err
		}
		if sla, err = finishRun(ctx, tx, r.ID, owner, runEnding{Status: status}, now); err != nil {
			return err
		}
		if err := fault.Point("pipeline.before_consumption"); err != nil {
			return err
		}
		if _, err := gate.ConsumeRun(ctx, tx.Tx, r.ID); err != nil {
			return err
		}
		return fault.Point("pipeline.after_consumption")
	})
	if err != nil {
		return out, err
	}
	out.Status, out.SLA = status, sla
	out.Detail = joinDetail(detail, note, breachNote(g.Pipeline, sla))
	if status == RunFailed || status == RunCancelled {
		out.Code = exit.Failure
	}
	s.log.Info("run ended", "pipeline", g.Pipeline.Code, "pipeline_run_id", r.ID, "status", status)
	s.breached(ctx, breach)
	s.runHooks(ctx, Ended{PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code, RunID: r.ID, Status: status})
	return out, nil
}

// verdict applies the status rule to the run's tasks and writes the summary
// detail. Only data tasks count; a pipeline of alerts only counts its
// alerts. Every task SKIPPED: SKIPPED; every task SUCCESS or SKIPPED:
// SUCCESS; otherwise FAILED, naming each task that did not succeed and the
// tasks skipped because of the failure.
func verdict(g *pipeline.Graph, rows map[int64]taskRunRow) (status, detail string) {
	var data []*pipeline.Task
	for _, t := range g.Tasks {
		if t.Handler != pipeline.HandlerEmailAlert {
			data = append(data, t)
		}
	}
	if len(data) == 0 {
		data = g.Tasks
	}
	statusOf := func(t *pipeline.Task) string {
		if r, ok := rows[t.ID]; ok {
			return r.up.Status
		}
		return ""
	}
	allSkipped, allGood := true, true
	var bad []string
	for _, t := range data {
		st := statusOf(t)
		if st != TaskSkipped {
			allSkipped = false
		}
		if st != TaskSuccess && st != TaskSkipped {
			allGood = false
			if st == "" {
				st = "never started"
			}
			bad = append(bad, fmt.Sprintf("%s (%s)", t.Code, st))
		}
	}
	switch {
	case allSkipped:
		if len(data) == 0 {
			return RunSkipped, "the pipeline has no active task"
		}
		return RunSkipped, fmt.Sprintf("all %d task(s) were skipped", len(data))
	case allGood:
		return RunSuccess, ""
	}
	detail = fmt.Sprintf("%d task(s) did not succeed: %s", len(bad), strings.Join(bad, ", "))
	if skipped := skippedByFailure(g, statusOf); len(skipped) > 0 {
		detail += "; skipped because of the failure: " + strings.Join(skipped, ", ")
	}
	return RunFailed, detail
}

// skippedByFailure returns the SKIPPED tasks, in wave order, that have an
// upstream that failed or was itself skipped because of a failure.
func skippedByFailure(g *pipeline.Graph, statusOf func(*pipeline.Task) string) []string {
	because := map[int64]bool{}
	var out []string
	for _, wave := range g.Waves() {
		for _, t := range wave {
			if statusOf(t) != TaskSkipped {
				continue
			}
			for _, u := range g.Upstreams(t) {
				if st := statusOf(u); st == TaskFailed || st == TaskCancelled || because[u.ID] {
					because[t.ID] = true
				}
			}
			if because[t.ID] {
				out = append(out, t.Code)
			}
		}
	}
	return out
}

// joinDetail joins the non-empty parts of a summary with "; ".
func joinDetail(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, "; ")
}
