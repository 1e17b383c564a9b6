package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
)

// MaxBackfillDates is the most dates one backfill runs, so that a typo
// cannot start thousands of runs; split a longer range.
const MaxBackfillDates = 366

// BackfillRequest asks for one run of the pipeline per date.
type BackfillRequest struct {
	PipelineCode string
	// From and To are the first and last dates, YYYY-MM-DD.
	From, To string
	Reason   string
}

// BackfillOutcome is how a backfill went.
type BackfillOutcome struct {
	PipelineCode string
	From, To     string
	// Runs are the outcomes of the runs it made, oldest date first.
	Runs []Outcome
	// Stopped is what stopped the backfill before its last date: the first
	// run that did not end SUCCESS or SKIPPED, or why no further run
	// started; nil when every date ran.
	Stopped *Outcome
	// Status is SUCCESS when every date ran, else Stopped's status.
	Status string
	// Message says what was done in one line and, when the backfill
	// stopped, how to take it up again. It names request fields as {field}
	// (see exit.RequestFields).
	Message string
	// Code is the exit status: 0 when every date ran (or the pipeline is
	// paused), 1 when a run ended FAILED or CANCELLED, 22 when the backfill
	// was interrupted or stopped for another reason.
	Code exit.Code
}

// BackfillDates returns the dates from first to last, oldest first. A
// reversed range, or one of more than MaxBackfillDates dates, is a usage
// error (exit 2).
func BackfillDates(first, last string) ([]string, error) {
	from, ok := ParseDate(first)
	if !ok {
		return nil, exit.Fieldf(exit.Usage, "{backfill} %s:%s: %q is not a date from 0001-01-01 to 9999-12-31: write YYYY-MM-DD", first, last, first)
	}
	to, ok := ParseDate(last)
	if !ok {
		return nil, exit.Fieldf(exit.Usage, "{backfill} %s:%s: %q is not a date from 0001-01-01 to 9999-12-31: write YYYY-MM-DD", first, last, last)
	}
	if to.Before(from) {
		return nil, exit.Fieldf(exit.Usage, "{backfill} runs from the first date to the last: %s is after %s", first, last)
	}
	n := int(to.Sub(from).Hours()/24) + 1
	if n > MaxBackfillDates {
		return nil, exit.Fieldf(exit.Usage, "{backfill} %s:%s is %d dates; one backfill runs at most %d, so split it", first, last, n, MaxBackfillDates)
	}
	dates := make([]string, n)
	for i := range dates {
		dates[i] = from.AddDate(0, 0, i).Format(time.DateOnly)
	}
	return dates, nil
}

// Backfill runs the whole pipeline once per date from From to To, oldest
// first, each as a run of its own: TRIGGER_KIND BACKFILL, BACKFILL 'Y', a
// backfill:<date>:<uuid> key and RUN_DATE that date (SQL's $$run_date). A
// backfill checks no pipeline gate (it records a GATE_BYPASS saying so),
// counts its tasks' SUCCESS, HAS_DATA and ALWAYS dependencies on other
// pipelines as met and FAILURE ones as not, and consumes nothing; its runs
// are invisible to every gate. It stops at the first run that does not end
// SUCCESS or SKIPPED, leaving the later dates untouched, and says how to
// take up from there. It is refused while the pipeline has a run in
// progress, and stops when another run starts, or the pipeline is paused,
// between two dates.
func (s *Supervisor) Backfill(ctx context.Context, req BackfillRequest) (BackfillOutcome, error) {
	if err := s.checkIntervention("{backfill}", req.Reason); err != nil {
		return BackfillOutcome{}, err
	}
	dates, err := BackfillDates(req.From, req.To)
	if err != nil {
		return BackfillOutcome{}, err
	}
	g, policies, err := s.load(ctx, req.PipelineCode)
	if err != nil {
		return BackfillOutcome{}, err
	}
	code := g.Pipeline.Code
	out := BackfillOutcome{PipelineCode: code, From: req.From, To: req.To}
	first := Outcome{PipelineCode: code}
	if paused, err := s.beforeRun(ctx, g, g.Tasks, &first); paused || err != nil {
		out.Stopped, out.Status, out.Message = &first, first.Status, first.String()
		return out, err
	}
	stop := func(day string, o Outcome, why string) (BackfillOutcome, error) {
		out.Stopped, out.Status, out.Code = &o, o.Status, o.Code
		if out.Code == exit.Success {
			out.Code = exit.Incomplete
		}
		out.Message = fmt.Sprintf("%s: backfill stopped at %s after %d of %d run(s): %s; %s", code, day, len(out.Runs), len(dates), why,
			resumeBackfill(code, day, req.To, o))
		return out, nil
	}
	for i, day := range dates {
		if i > 0 {
			if ctx.Err() != nil {
				return stop(day, Outcome{PipelineCode: code, Status: RunInProgress}, "the backfill was interrupted")
			}
			p, err := records.PausedBy(ctx, s.opts.DB, g.Pipeline.ID)
			if err != nil {
				return out, err
			}
			if p != nil {
				return stop(day, Outcome{PipelineCode: code, Status: Paused, Detail: p.String()}, "the pipeline was "+p.String())
			}
		}
		active, err := activeRunOf(ctx, s.opts.DB, g.Pipeline.ID)
		if err != nil {
			return out, exit.Wrap(exit.EngineDB, err, "could not read %s", runsTable)
		}
		if active != 0 {
			why := fmt.Sprintf("%s has a run in progress (pipeline_run_id=%d); finish or cancel it before a backfill", code, active)
			if i == 0 {
				return out, exit.Errorf(exit.RunState, "%s", why)
			}
			return stop(day, Outcome{PipelineCode: code, Status: RunInProgress}, why)
		}
		owner := NewOwner()
		key := "backfill:" + day + ":" + newUUID()
		b, err := s.bindRun(ctx, g, start{req: Request{RunKey: key}, owner: owner, key: key,
			kind: TriggerBackfill, date: day, backfill: true,
			bypass: fmt.Sprintf("backfill for %s: %s; dependencies on other pipelines are not checked, and nothing is consumed", day, req.Reason)})
		if err == nil {
			var o Outcome
			if o, err = s.dispatcher(g, policies, b.run, owner).supervise(ctx); err == nil {
				out.Runs = append(out.Runs, o)
				if o.Status != RunSuccess && o.Status != RunSkipped {
					return stop(day, o, o.String())
				}
				continue
			}
		}
		if i == 0 || (!exit.Is(err, exit.StaleTransition) && !exit.Is(err, exit.RunState)) {
			return out, err
		}
		return stop(day, Outcome{PipelineCode: code, Status: RunInProgress}, exit.Text(err))
	}
	runs := make([]string, len(out.Runs))
	for i, o := range out.Runs {
		runs[i] = fmt.Sprintf("%d %s", o.RunID, o.Status)
	}
	out.Status = RunSuccess
	out.Message = fmt.Sprintf("%s: backfill of %d date(s) from %s to %s done: %s", code, len(dates), req.From, req.To, strings.Join(runs, ", "))
	return out, nil
}

// resumeBackfill says how to take a stopped backfill up again from day.
func resumeBackfill(code, day, last string, o Outcome) string {
	cmd := fmt.Sprintf("etl-craft run {pipeline} %s {backfill} %s:%s {reason} ...", code, day, last)
	if o.RunID != 0 && o.Status == RunInProgress {
		return fmt.Sprintf("finish pipeline_run_id=%d with etl-craft run {pipeline} %s {run_id} %d (or cancel it), then %s takes up from there",
			o.RunID, code, o.RunID, cmd)
	}
	return cmd + " takes up from there once it is fixed"
}
