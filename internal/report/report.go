// Package report holds every JSON document etl-craft prints with --format
// json (and its HTTP API returns): one typed struct per document, and the
// one list of their schema ids. Each document carries its id in a "schema"
// field, such as "etl-craft/run/1"; a change that breaks readers gets a new
// number. Fields are written in the order the struct declares them.
//
// The packages that answer a command fill these documents: inspect the
// read-only ones, cli the outcomes of the commands that run or change
// something. This package only declares them and how they are written.
package report

import (
	"encoding/json"
	"time"
)

// The schema ids, one per document.
const (
	SchemaOperation      = "etl-craft/operation/1"
	SchemaRun            = "etl-craft/run/1"
	SchemaTaskRun        = "etl-craft/task-run/1"
	SchemaAttempt        = "etl-craft/attempt/1"
	SchemaRunOutcome     = "etl-craft/run-outcome/1"
	SchemaTaskOutcome    = "etl-craft/task-outcome/1"
	SchemaBackfill       = "etl-craft/backfill/1"
	SchemaReconciliation = "etl-craft/reconciliation/1"
	SchemaPipelineList   = "etl-craft/pipeline-list/1"
	SchemaPipeline       = "etl-craft/pipeline/1"
	SchemaGraph          = "etl-craft/graph/1"
	SchemaSteps          = "etl-craft/steps/1"
	SchemaStep           = "etl-craft/step/1"
	SchemaStatus         = "etl-craft/status/1"
	SchemaHistory        = "etl-craft/history/1"
	SchemaAudit          = "etl-craft/audit/1"
	SchemaAction         = "etl-craft/action/1"
	SchemaMetadataChange = "etl-craft/metadata-change/1"
	SchemaValidation     = "etl-craft/validation/1"
	SchemaDoctor         = "etl-craft/doctor/1"
	SchemaToken          = "etl-craft/token/1"
	SchemaTokens         = "etl-craft/tokens/1"
	SchemaLineage        = "etl-craft/lineage/1"
	SchemaTableLineage   = "etl-craft/table-lineage/1"
	SchemaColumnLineage  = "etl-craft/column-lineage/1"
	SchemaDocsVersions   = "etl-craft/docs-versions/1"
	SchemaRuns           = "etl-craft/runs/1"
	SchemaAttemptLog     = "etl-craft/attempt-log/1"
	SchemaHealth         = "etl-craft/health/1"
	SchemaError          = "etl-craft/error/1"
	SchemaExplain        = "etl-craft/explain/1"
	SchemaClone          = "etl-craft/clone/1"
	SchemaNotification   = "etl-craft/notification/1"
	SchemaPurge          = "etl-craft/purge/1"
)

// Instant is a moment in a document, always in UTC. JSON writes it in ISO
// 8601 with microseconds and an explicit +00:00 offset; text output (String)
// writes it to the second, with the same offset.
type Instant struct{ time.Time }

// MarshalJSON writes the instant as an ISO-8601 string such as
// "2026-01-02T03:04:05.123456+00:00".
func (i Instant) MarshalJSON() ([]byte, error) {
	return json.Marshal(i.UTC().Format("2006-01-02T15:04:05.999999-07:00"))
}

// String writes the instant for text output, such as
// "2026-01-02 03:04:05+00:00".
func (i Instant) String() string { return i.UTC().Format("2006-01-02 15:04:05-07:00") }
