package inspect

import (
	"context"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// RunSelector says which run of a pipeline a command concerns (see
// records.RunSelector).
type RunSelector = records.RunSelector

// SelectionError is a run selection that did not find exactly one run (see
// records.SelectionError).
type SelectionError = records.SelectionError

// Choice says how ViewRun chose its run (see records.Choice).
type Choice = records.Choice

// The ways ViewRun chooses a run (see records.Choice).
const (
	ChoiceSelector = records.ChoiceSelector
	ChoiceActive   = records.ChoiceActive
	ChoiceLatest   = records.ChoiceLatest
)

// NewRunSelector checks the run_id and run_key fields of a request: a given id must be
// positive, a given key must not be blank, and not both may be given. A
// mistake is a usage error (exit 2).
func NewRunSelector(idGiven bool, id int64, keyGiven bool, key string) (RunSelector, error) {
	switch {
	case idGiven && keyGiven:
		return RunSelector{}, exit.Errorf(exit.Usage, "{run_id} and {run_key} select a run each: pass only one")
	case idGiven && id <= 0:
		return RunSelector{}, exit.Errorf(exit.Usage, "{run_id} must be a positive PIPELINE_RUN_ID, got %d", id)
	case keyGiven && strings.TrimSpace(key) == "":
		return RunSelector{}, exit.Errorf(exit.Usage, "{run_key} must not be blank")
	}
	return RunSelector{ID: id, Key: key}, nil
}

// Run is a run a selection chose: its document, and what a selection says
// of it.
type Run struct{ report.Run }

// Ended reports whether the run has ended: it is neither QUEUED nor
// IN-PROGRESS.
func (r Run) Ended() bool { return records.RunStatus(r.Status).Ended() }

// runDoc is the document of a run row.
func runDoc(r records.Run) Run {
	var runDate *string
	if r.RunDate != "" {
		runDate = &r.RunDate
	}
	return Run{report.Run{Schema: report.SchemaRun, PipelineID: r.PipelineID, PipelineCode: r.PipelineCode, ID: r.ID, Key: r.Key,
		TriggerKind: string(r.TriggerKind), RunDate: runDate, Status: string(r.Status), StartDate: instant(r.Start),
		EndDate: instant(r.End), SLAStatus: nullString(r.SLAStatus), Backfill: r.Backfill,
		StartedBy: nullString(r.StartedBy), StartedByKind: nullString(r.StartedByKind),
		EndedBy: nullString(r.EndedBy), EndedByKind: nullString(r.EndedByKind)}}
}

// RunDocument is the etl-craft/run/1 document of a run row.
func RunDocument(r records.Run) report.Run { return runDoc(r).Run }

// runDocs is the documents of run rows.
func runDocs(rows []records.Run) []Run {
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = runDoc(r)
	}
	return out
}

// SelectRun returns the run of the pipeline the selector names, as
// records.SelectRun chooses it (exit 9 wrapping a *SelectionError unless
// exactly one run matches).
func SelectRun(ctx context.Context, q engine.Querier, p pipeline.Pipeline, sel RunSelector) (Run, error) {
	r, err := records.SelectRun(ctx, q, p.ID, p.Code, sel)
	return runDoc(r), err
}

// ViewRun returns the run a read-only command shows, and how it was chosen,
// as records.ViewRun chooses it: the run SelectRun chooses, or, without a
// selector when no run of the pipeline has not ended, its most recent run.
func ViewRun(ctx context.Context, q engine.Querier, p pipeline.Pipeline, sel RunSelector) (Run, Choice, error) {
	r, chosen, err := records.ViewRun(ctx, q, p.ID, p.Code, sel)
	return runDoc(r), chosen, err
}
