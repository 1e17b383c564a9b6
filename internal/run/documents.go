package run

import (
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/report"
)

// Document is the outcome's JSON document: etl-craft/run-outcome/1, or
// etl-craft/task-outcome/1 for a single task. fields writes the request
// fields its detail names (see exit.RenderFields): as flags for the command
// line, as JSON names for the HTTP API.
func (o Outcome) Document(fields func(string) string) report.Outcome {
	doc := report.Outcome{Schema: report.SchemaRunOutcome, PipelineCode: o.PipelineCode,
		Status: o.Status, Detail: exit.RenderFields(o.Detail, fields), ExitCode: int(o.Code), SLAStatus: o.SLA}
	if o.RunID != 0 {
		id := o.RunID
		doc.PipelineRunID = &id
	}
	if o.TaskCode != "" {
		doc.Schema, doc.TaskCode = report.SchemaTaskOutcome, o.TaskCode
	}
	return doc
}

// Document is the backfill's JSON document, etl-craft/backfill/1, with
// each run's outcome document and the one that stopped it; fields as in
// Outcome.Document.
func (b BackfillOutcome) Document(fields func(string) string) report.Backfill {
	doc := report.Backfill{Schema: report.SchemaBackfill, PipelineCode: b.PipelineCode, From: b.From, To: b.To,
		Status: b.Status, Message: exit.RenderFields(b.Message, fields), Runs: make([]report.Outcome, len(b.Runs)), ExitCode: int(b.Code)}
	for i, o := range b.Runs {
		doc.Runs[i] = o.Document(fields)
	}
	if b.Stopped != nil {
		stopped := b.Stopped.Document(fields)
		doc.Stopped = &stopped
	}
	return doc
}
