package inspect

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
)

// The statuses of runs and of task summaries (a task summary is never QUEUED).
const (
	StatusQueued     = "QUEUED"
	StatusInProgress = "IN-PROGRESS"
	StatusSuccess    = "SUCCESS"
	StatusFailed     = "FAILED"
	StatusSkipped    = "SKIPPED"
	StatusCancelled  = "CANCELLED"
)

// RunSelector says which run of a pipeline a command concerns: the run with
// an exact PIPELINE_RUN_ID, or with an exact RUN_KEY, or (the zero value) the
// one run of the pipeline that has not ended (for the read-only commands,
// else the most recent run: see ViewRun).
type RunSelector struct {
	// ID selects by PIPELINE_RUN_ID when positive.
	ID int64
	// Key selects by RUN_KEY when not empty.
	Key string
}

// NewRunSelector checks the --run-id and --run-key flags: a given id must be
// positive, a given key must not be blank, and not both may be given. A
// mistake is a usage error (exit 2).
func NewRunSelector(idGiven bool, id int64, keyGiven bool, key string) (RunSelector, error) {
	switch {
	case idGiven && keyGiven:
		return RunSelector{}, exit.Fieldf(exit.Usage, "{run_id} and {run_key} select a run each: pass only one")
	case idGiven && id <= 0:
		return RunSelector{}, exit.Fieldf(exit.Usage, "{run_id} must be a positive PIPELINE_RUN_ID, got %d", id)
	case keyGiven && strings.TrimSpace(key) == "":
		return RunSelector{}, exit.Fieldf(exit.Usage, "{run_key} must not be blank")
	}
	return RunSelector{ID: id, Key: key}, nil
}

// IsZero reports whether the selector names no run, so the pipeline's one
// run that has not ended is meant.
func (s RunSelector) IsZero() bool { return s.ID <= 0 && s.Key == "" }

// String describes the selector as its flag, such as "--run-id 7".
func (s RunSelector) String() string {
	switch {
	case s.ID > 0:
		return "--run-id " + strconv.FormatInt(s.ID, 10)
	case s.Key != "":
		return "--run-key " + s.Key
	}
	return "no --run-id or --run-key"
}

// Run is a run a selection chose: its document, and what a selection says
// of it.
type Run struct{ report.Run }

// Ended reports whether the run has ended: it is neither QUEUED nor
// IN-PROGRESS.
func (r Run) Ended() bool { return r.Status != StatusQueued && r.Status != StatusInProgress }

// Candidate describes the run as a selection error lists it:
// id=<id> key=<key> kind=<kind> run_date=<date> status=<status>.
func (r Run) Candidate() string {
	d := ""
	if r.RunDate != nil {
		d = *r.RunDate
	}
	return fmt.Sprintf("id=%d key=%s kind=%s run_date=%s status=%s", r.ID, r.Key, r.TriggerKind, d, r.Status)
}

// runColumns are the columns scanRun reads, from AUD_PIPELINES_RUN_LOG r
// joined to CFG_PIPELINES p.
const runColumns = `r.PIPELINE_RUN_ID, r.PIPELINE_ID, p.PIPELINE_CODE, r.RUN_KEY, r.TRIGGER_KIND, r.RUN_DATE,
	r.STATUS, r.START_DATE, r.END_DATE, r.SLA_STATUS, r.BACKFILL, r.STARTED_BY, r.STARTED_BY_KIND,
	r.ENDED_BY, r.ENDED_BY_KIND`

// runsFrom is the FROM clause of runColumns.
const runsFrom = ` FROM AUD_PIPELINES_RUN_LOG r JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID `

func scanRun(s interface{ Scan(...any) error }) (Run, error) {
	r := Run{Run: report.Run{Schema: report.SchemaRun}}
	var runDate, start, end engine.Time
	var sla, startedBy, startedKind, endedBy, endedKind sql.NullString
	var backfill string
	err := s.Scan(&r.ID, &r.PipelineID, &r.PipelineCode, &r.Key, &r.TriggerKind, &runDate, &r.Status,
		&start, &end, &sla, &backfill, &startedBy, &startedKind, &endedBy, &endedKind)
	r.RunDate, r.StartDate, r.EndDate = date(runDate), instant(start), instant(end)
	r.SLAStatus, r.Backfill = nullString(sla), backfill == "Y"
	r.StartedBy, r.StartedByKind = nullString(startedBy), nullString(startedKind)
	r.EndedBy, r.EndedByKind = nullString(endedBy), nullString(endedKind)
	return r, err
}

// queryRuns returns the runs a query of runColumns finds.
func queryRuns(ctx context.Context, q engine.Querier, query string, args ...any) ([]Run, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, readError(err, "AUD_PIPELINES_RUN_LOG")
	}
	defer rows.Close()
	out := []Run{}
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, readError(err, "AUD_PIPELINES_RUN_LOG")
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SelectionError is a run selection that did not find exactly one run. It
// reaches callers wrapped in an exit.Error with code RunState (exit 9);
// errors.As finds it.
type SelectionError struct {
	Pipeline string
	Selector RunSelector
	// Candidates are the runs the selection matched: none, or (without a
	// selector) every run that has not ended.
	Candidates []Run
	// NeverRan is set when a read-only command's selection (see ViewRun)
	// found no run because the pipeline has none.
	NeverRan bool
}

// Error says how many runs matched, lists them, and how to choose.
func (e *SelectionError) Error() string {
	n := len(e.Candidates)
	switch {
	case e.NeverRan:
		return fmt.Sprintf("run selection matched 0 runs: pipeline %s has no runs yet "+
			"(`etl-craft run --pipeline_code %s` starts one)", e.Pipeline, e.Pipeline)
	case n == 0 && e.Selector.IsZero():
		return fmt.Sprintf("run selection matched 0 runs: pipeline %s has no QUEUED or IN-PROGRESS run; "+
			"an ended run is chosen only by --run-id or --run-key (`etl-craft history --pipeline_code %s` lists them)",
			e.Pipeline, e.Pipeline)
	case n == 0:
		return fmt.Sprintf("run selection matched 0 runs: pipeline %s has no run with %s "+
			"(`etl-craft history --pipeline_code %s` lists its runs)", e.Pipeline, e.Selector, e.Pipeline)
	}
	lines := make([]string, n)
	for i, r := range e.Candidates {
		lines[i] = "  " + r.Candidate()
	}
	return fmt.Sprintf("run selection matched %d runs: pipeline %s has more than one QUEUED or IN-PROGRESS run; "+
		"choose one with --run-id or --run-key:\n%s", n, e.Pipeline, strings.Join(lines, "\n"))
}

// SelectRun returns the run of the pipeline the selector names: the run with
// that PIPELINE_RUN_ID or RUN_KEY (a run of another pipeline never matches),
// or without a selector the pipeline's one QUEUED or IN-PROGRESS run. An
// ended run is never chosen by recency. Anything but exactly one match is a
// run-state error (exit 9) wrapping a *SelectionError.
func SelectRun(ctx context.Context, q engine.Querier, p pipeline.Pipeline, sel RunSelector) (Run, error) {
	query := "SELECT " + runColumns + runsFrom + "WHERE r.PIPELINE_ID = $1 "
	args := []any{p.ID}
	switch {
	case sel.ID > 0:
		query += "AND r.PIPELINE_RUN_ID = $2"
		args = append(args, sel.ID)
	case sel.Key != "":
		query += "AND r.RUN_KEY = $2"
		args = append(args, sel.Key)
	default:
		query += "AND r.STATUS IN ('QUEUED', 'IN-PROGRESS') ORDER BY r.PIPELINE_RUN_ID"
	}
	runs, err := queryRuns(ctx, q, query, args...)
	if err != nil {
		return Run{}, err
	}
	if len(runs) == 1 {
		return runs[0], nil
	}
	return Run{}, &exit.Error{Code: exit.RunState, Err: &SelectionError{Pipeline: p.Code, Selector: sel, Candidates: runs}}
}

// ViewRun returns the run a read-only command shows, and how it was chosen:
// the run SelectRun chooses, or, without a selector when no run of the
// pipeline has not ended, its most recent run. Commands that change a run
// keep SelectRun's strict rule. A pipeline that has never run, a selector
// that matches no run of the pipeline, or more than one run not ended is a
// run-state error (exit 9) wrapping a *SelectionError.
func ViewRun(ctx context.Context, q engine.Querier, p pipeline.Pipeline, sel RunSelector) (Run, report.Choice, error) {
	run, err := SelectRun(ctx, q, p, sel)
	var none *SelectionError
	switch {
	case !sel.IsZero():
		return run, report.ChoiceSelector, err
	case !errors.As(err, &none) || len(none.Candidates) > 0:
		return run, report.ChoiceActive, err
	}
	runs, err := queryRuns(ctx, q, "SELECT "+runColumns+runsFrom+
		"WHERE r.PIPELINE_ID = $1 ORDER BY r.PIPELINE_RUN_ID DESC LIMIT 1", p.ID)
	switch {
	case err != nil:
		return Run{}, "", err
	case len(runs) == 0:
		return Run{}, "", &exit.Error{Code: exit.RunState, Err: &SelectionError{Pipeline: p.Code, NeverRan: true}}
	}
	return runs[0], report.ChoiceLatest, nil
}
