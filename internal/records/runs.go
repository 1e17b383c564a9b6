package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Run is one AUD_PIPELINES_RUN_LOG row, with its pipeline's code.
type Run struct {
	ID, PipelineID int64
	PipelineCode   string
	Key            string
	TriggerKind    TriggerKind
	// RunDate is YYYY-MM-DD, "" when NULL.
	RunDate       string
	Status        RunStatus
	Start, End    Time
	SLAStatus     sql.NullString
	Backfill      bool
	StartedBy     sql.NullString
	StartedByKind sql.NullString
	EndedBy       sql.NullString
	EndedByKind   sql.NullString
	Owner         string
	Lease         Time
}

// Candidate describes the run as a selection error lists it:
// id=<id> key=<key> kind=<kind> run_date=<date> status=<status>.
func (r Run) Candidate() string {
	return fmt.Sprintf("id=%d key=%s kind=%s run_date=%s status=%s", r.ID, r.Key, r.TriggerKind, r.RunDate, r.Status)
}

// RunColumns are the columns ScanRun reads, from RunsFrom: the run log as
// r joined to CFG_PIPELINES as p.
const RunColumns = `r.PIPELINE_RUN_ID, r.PIPELINE_ID, p.PIPELINE_CODE, r.RUN_KEY, r.TRIGGER_KIND, r.RUN_DATE,
	r.STATUS, r.START_DATE, r.END_DATE, r.SLA_STATUS, r.BACKFILL, r.STARTED_BY, r.STARTED_BY_KIND,
	r.ENDED_BY, r.ENDED_BY_KIND, r.OWNER_ID, r.LEASE_EXPIRES_AT`

// RunsFrom is the FROM clause of RunColumns.
const RunsFrom = ` FROM AUD_PIPELINES_RUN_LOG r JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID `

// ScanRun reads one row of RunColumns.
func ScanRun(s Scanner) (Run, error) {
	var r Run
	var runDate Time
	var backfill string
	var owner sql.NullString
	err := s.Scan(&r.ID, &r.PipelineID, &r.PipelineCode, &r.Key, &r.TriggerKind, &runDate, &r.Status,
		&r.Start, &r.End, &r.SLAStatus, &backfill, &r.StartedBy, &r.StartedByKind, &r.EndedBy, &r.EndedByKind,
		&owner, &r.Lease)
	if runDate.Valid {
		r.RunDate = runDate.Time.Format(time.DateOnly)
	}
	r.Backfill, r.Owner = backfill == "Y", owner.String
	return r, err
}

// QueryRuns returns the runs a query of RunColumns finds, in its order.
func QueryRuns(ctx context.Context, q Querier, stmt string, args ...any) ([]Run, error) {
	return query(ctx, q, "AUD_PIPELINES_RUN_LOG", ScanRun, stmt, args...)
}

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

// IsZero reports whether the selector names no run, so the pipeline's one
// run that has not ended is meant.
func (s RunSelector) IsZero() bool { return s.ID <= 0 && s.Key == "" }

// String describes the selector as its request field, such as "{run_id} 7"
// (see the exit package's RequestFields).
func (s RunSelector) String() string {
	switch {
	case s.ID > 0:
		return "{run_id} " + strconv.FormatInt(s.ID, 10)
	case s.Key != "":
		return "{run_key} " + s.Key
	}
	return "no {run_id} or {run_key}"
}

// SelectionError is a run selection that did not find exactly one run. The
// exit package gives it the RUN_STATE exit code (9); errors.As finds it.
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
	active := string(RunQueued) + " or " + string(RunInProgress)
	switch {
	case e.NeverRan:
		return fmt.Sprintf("run selection matched 0 runs: pipeline %s has no runs yet "+
			"(`etl-craft run {pipeline} %s` starts one)", e.Pipeline, e.Pipeline)
	case n == 0 && e.Selector.IsZero():
		return fmt.Sprintf("run selection matched 0 runs: pipeline %s has no %s run; "+
			"an ended run is chosen only by {run_id} or {run_key} (`etl-craft history {pipeline} %s` lists them)",
			e.Pipeline, active, e.Pipeline)
	case n == 0:
		return fmt.Sprintf("run selection matched 0 runs: pipeline %s has no run with %s "+
			"(`etl-craft history {pipeline} %s` lists its runs)", e.Pipeline, e.Selector, e.Pipeline)
	}
	lines := make([]string, n)
	for i, r := range e.Candidates {
		lines[i] = "  " + r.Candidate()
	}
	return fmt.Sprintf("run selection matched %d runs: pipeline %s has more than one %s run; "+
		"choose one with {run_id} or {run_key}:\n%s", n, e.Pipeline, active, strings.Join(lines, "\n"))
}

// SelectRun returns the run of the pipeline (its id and code) the selector
// names: the run with that PIPELINE_RUN_ID or RUN_KEY (a run of another
// pipeline never matches), or without a selector the pipeline's one QUEUED or
// IN-PROGRESS run. An ended run is never chosen by recency. Anything but
// exactly one match is a *SelectionError (a run-state error, exit 9).
func SelectRun(ctx context.Context, q Querier, pipelineID int64, code string, sel RunSelector) (Run, error) {
	query := "SELECT " + RunColumns + RunsFrom + "WHERE r.PIPELINE_ID = $1 "
	args := []any{pipelineID}
	switch {
	case sel.ID > 0:
		query += "AND r.PIPELINE_RUN_ID = $2"
		args = append(args, sel.ID)
	case sel.Key != "":
		query += "AND r.RUN_KEY = $2"
		args = append(args, sel.Key)
	default:
		query += "AND r.STATUS IN ($2, $3) ORDER BY r.PIPELINE_RUN_ID"
		args = append(args, string(RunQueued), string(RunInProgress))
	}
	runs, err := QueryRuns(ctx, q, query, args...)
	if err != nil {
		return Run{}, err
	}
	if len(runs) == 1 {
		return runs[0], nil
	}
	return Run{}, &SelectionError{Pipeline: code, Selector: sel, Candidates: runs}
}

// Choice says how ViewRun chose its run.
type Choice string

// The ways ViewRun chooses a run.
const (
	// ChoiceSelector is the run the --run-id or --run-key named.
	ChoiceSelector Choice = "selector"
	// ChoiceActive is the pipeline's one QUEUED or IN-PROGRESS run.
	ChoiceActive Choice = "active"
	// ChoiceLatest is the pipeline's most recent run (the highest
	// PIPELINE_RUN_ID), chosen because no run of it has not ended.
	ChoiceLatest Choice = "latest"
)

// ViewRun returns the run a read-only command shows, and how it was chosen:
// the run SelectRun chooses, or, without a selector when no run of the
// pipeline has not ended, its most recent run. Commands that change a run
// keep SelectRun's strict rule. A pipeline that has never run, a selector
// that matches no run of the pipeline, or more than one run not ended is a
// *SelectionError (a run-state error, exit 9).
func ViewRun(ctx context.Context, q Querier, pipelineID int64, code string, sel RunSelector) (Run, Choice, error) {
	run, err := SelectRun(ctx, q, pipelineID, code, sel)
	var none *SelectionError
	switch {
	case !sel.IsZero():
		return run, ChoiceSelector, err
	case !errors.As(err, &none) || len(none.Candidates) > 0:
		return run, ChoiceActive, err
	}
	runs, err := QueryRuns(ctx, q, "SELECT "+RunColumns+RunsFrom+
		"WHERE r.PIPELINE_ID = $1 ORDER BY r.PIPELINE_RUN_ID DESC LIMIT 1", pipelineID)
	switch {
	case err != nil:
		return Run{}, "", err
	case len(runs) == 0:
		return Run{}, "", &SelectionError{Pipeline: code, NeverRan: true}
	}
	return runs[0], ChoiceLatest, nil
}
