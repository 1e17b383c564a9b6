// Package inspect answers the read-only questions of the inspection
// commands — list, graph, steps, status, history, audit and validate — with
// the documents of package report, which the command line prints as text or
// JSON. It only reads the Engine DB: it records no action, reconciles
// nothing and never touches a warehouse.
//
// It also owns run selection: SelectRun, the rule every command that acts
// on one run shares (an explicit --run-id or --run-key, or else the one run
// of the pipeline that has not ended), and ViewRun, the read-only commands'
// rule, which without a selector falls back to the most recent run.
package inspect

import (
	"context"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/report"
)

// instant converts a scanned timestamp; NULL gives nil.
func instant(t engine.Time) *report.Instant {
	if !t.Valid {
		return nil
	}
	return &report.Instant{Time: t.Time.UTC()}
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
