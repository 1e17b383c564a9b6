// Package inspect answers the read-only questions of the inspection
// commands — list, graph, steps, status, history, audit and validate — with
// documents the command line prints as text or JSON. It only reads the Engine
// DB: it records no action, reconciles nothing and never touches a warehouse.
//
// It also owns run selection: SelectRun, the rule every command that acts
// on one run shares (an explicit --run-id or --run-key, or else the one run
// of the pipeline that has not ended), and ViewRun, the read-only commands'
// rule, which without a selector falls back to the most recent run.
package inspect

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// The schema ids of the documents this package builds. Each document carries
// its id in a "schema" field; a change that breaks readers gets a new number.
const (
	SchemaPipelineList   = "etl-craft/pipeline-list/1"
	SchemaPipeline       = "etl-craft/pipeline/1"
	SchemaGraph          = "etl-craft/graph/1"
	SchemaSteps          = "etl-craft/steps/1"
	SchemaStep           = "etl-craft/step/1"
	SchemaStatus         = "etl-craft/status/1"
	SchemaRun            = "etl-craft/run/1"
	SchemaTaskRun        = "etl-craft/task-run/1"
	SchemaAttempt        = "etl-craft/attempt/1"
	SchemaHistory        = "etl-craft/history/1"
	SchemaAudit          = "etl-craft/audit/1"
	SchemaAction         = "etl-craft/action/1"
	SchemaMetadataChange = "etl-craft/metadata-change/1"
	SchemaValidation     = "etl-craft/validation/1"
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

// instant converts a scanned timestamp; NULL gives nil.
func instant(t engine.Time) *Instant {
	if !t.Valid {
		return nil
	}
	return &Instant{t.Time.UTC()}
}

// date converts a scanned DATE to YYYY-MM-DD; NULL gives nil.
func date(t engine.Time) *string {
	if !t.Valid {
		return nil
	}
	s := t.Time.Format(time.DateOnly)
	return &s
}

// Ready checks that the Engine DB holds etl-craft's tables. A database
// without them is a configuration error (exit 3) that says how to create them.
func Ready(ctx context.Context, db *engine.DB) error {
	tables, err := db.Tables(ctx)
	if err != nil {
		return exit.Wrap(exit.Configuration, err, "could not list the Engine DB's tables")
	}
	for _, t := range tables {
		if strings.EqualFold(t, "CFG_PIPELINES") {
			return nil
		}
	}
	return exit.Errorf(exit.Configuration,
		"the Engine DB (%s, schema %s) has no etl-craft tables: run `etl-craft setup` (or `etl-craft init-db`) first",
		db.Kind().Label(), db.Schema())
}

// firstLine returns the first line of a message.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimRight(line, "\r")
}

// readError wraps a failed read of an Engine DB table.
func readError(err error, table string) error {
	return exit.Wrap(exit.EngineDB, err, "could not read %s", table)
}
