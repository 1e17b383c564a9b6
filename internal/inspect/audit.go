package inspect

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
)

// AuditFilter narrows the audit trail.
type AuditFilter struct {
	// PipelineCode keeps the actions concerning that pipeline and the
	// changes to its rows: the pipeline, its tasks and their parameters, and
	// dependency edges from or to it — rows since retired or deleted
	// included. A retired pipeline's code is accepted.
	PipelineCode string
	// Since keeps what was recorded at or after it; zero keeps everything.
	Since time.Time
}

// Reader is what reads the Engine DB and binds timestamps in its dialect:
// an *engine.DB or an *engine.Tx.
type Reader interface {
	engine.Querier
	TimeArg(t time.Time) any
}

// ParseSince reads --since: an ISO date (midnight UTC) or timestamp, in UTC
// unless it carries an offset. Anything else is a usage error (exit 2).
func ParseSince(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.DateOnly, time.RFC3339, "2006-01-02 15:04:05Z07:00",
		"2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02T15:04Z07:00", "2006-01-02T15:04", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, exit.Fieldf(exit.Usage,
		"{since} %q is not an ISO date or timestamp: write 2026-10-01, 2026-10-01T08:00:00 (UTC) or 2026-10-01T08:00:00+02:00", s)
}

// ReadAudit returns the audit trail the filter keeps. An unknown pipeline
// code is a metadata error (exit 4) suggesting close matches.
func ReadAudit(ctx context.Context, q Reader, f AuditFilter) (report.Audit, error) {
	var owner *rowOwner
	if f.PipelineCode != "" {
		o, err := ownerOf(ctx, q, f.PipelineCode)
		if err != nil {
			return report.Audit{}, err
		}
		owner = o
	}
	actions, err := readActions(ctx, q, f)
	if err != nil {
		return report.Audit{}, err
	}
	changes, err := readChanges(ctx, q, f.Since, "")
	if err != nil {
		return report.Audit{}, err
	}
	out := report.Audit{Schema: report.SchemaAudit, Actions: actions, Changes: []report.MetadataChange{}}
	for _, c := range changes {
		if owner == nil || owner.owns(c) {
			out.Changes = append(out.Changes, c)
		}
	}
	return out, nil
}

func readActions(ctx context.Context, q Reader, f AuditFilter) ([]report.Action, error) {
	var conds []string
	var args []any
	if f.PipelineCode != "" {
		args = append(args, f.PipelineCode)
		conds = append(conds, "PIPELINE_ID IN (SELECT PIPELINE_ID FROM CFG_PIPELINES WHERE PIPELINE_CODE = $"+strconv.Itoa(len(args))+")")
	}
	if !f.Since.IsZero() {
		args = append(args, q.TimeArg(f.Since))
		conds = append(conds, "STARTED_AT >= $"+strconv.Itoa(len(args)))
	}
	rows, err := q.QueryContext(ctx, `SELECT ACTION_ID, PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, STARTED_AT, ACTOR,
			ACTOR_KIND, HOST, COMMAND, OUTCOME, CAST(ARGUMENTS AS VARCHAR)
		FROM AUD_ACTIONS`+where(conds)+" ORDER BY ACTION_ID", args...)
	if err != nil {
		return nil, readError(err, "AUD_ACTIONS")
	}
	defer rows.Close()
	out := []report.Action{}
	for rows.Next() {
		a := report.Action{Schema: report.SchemaAction}
		var pipe, run, task sql.NullInt64
		var at engine.Time
		var arguments sql.NullString
		if err := rows.Scan(&a.ActionID, &pipe, &run, &task, &at, &a.Actor, &a.Kind, &a.Host, &a.Command,
			&a.Outcome, &arguments); err != nil {
			return nil, readError(err, "AUD_ACTIONS")
		}
		a.PipelineID, a.PipelineRunID, a.TaskID, a.At = nullInt(pipe), nullInt(run), nullInt(task), report.Instant{Time: at.Time}
		if a.Arguments, err = compact(arguments); err != nil {
			return nil, readError(err, "AUD_ACTIONS.ARGUMENTS")
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// readChanges returns the metadata changes recorded since the time (zero:
// all), of one table when table is not empty, in the order recorded.
func readChanges(ctx context.Context, q Reader, since time.Time, table string) ([]report.MetadataChange, error) {
	var conds []string
	var args []any
	if !since.IsZero() {
		args = append(args, q.TimeArg(since))
		conds = append(conds, "CHANGED_AT >= $"+strconv.Itoa(len(args)))
	}
	if table != "" {
		args = append(args, table)
		conds = append(conds, "TABLE_NAME = $"+strconv.Itoa(len(args)))
	}
	rows, err := q.QueryContext(ctx, `SELECT CHANGE_ID, CHANGED_AT, ACTOR, ACTOR_KIND, TABLE_NAME, ROW_KEY, OPERATION,
			CAST(BEFORE_JSON AS VARCHAR), CAST(AFTER_JSON AS VARCHAR), MIGRATION
		FROM AUD_METADATA_CHANGES`+where(conds)+" ORDER BY CHANGE_ID", args...)
	if err != nil {
		return nil, readError(err, "AUD_METADATA_CHANGES")
	}
	defer rows.Close()
	var out []report.MetadataChange
	for rows.Next() {
		c := report.MetadataChange{Schema: report.SchemaMetadataChange}
		var at engine.Time
		var before, after, migration sql.NullString
		if err := rows.Scan(&c.ChangeID, &at, &c.Actor, &c.Kind, &c.TableName, &c.RowKey, &c.Operation,
			&before, &after, &migration); err != nil {
			return nil, readError(err, "AUD_METADATA_CHANGES")
		}
		c.At, c.Migration = report.Instant{Time: at.Time}, nullString(migration)
		if c.Before, err = compact(before); err == nil {
			c.After, err = compact(after)
		}
		if err != nil {
			return nil, readError(err, "AUD_METADATA_CHANGES")
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

func where(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// compact returns stored JSON text without insignificant spaces; NULL gives nil.
func compact(s sql.NullString) (json.RawMessage, error) {
	if !s.Valid {
		return nil, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s.String)); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// rowOwner knows the ids of one pipeline code's rows, past and present.
type rowOwner struct {
	pipelines map[string]bool // PIPELINE_ID values, as text
	tasks     map[string]bool // TASK_ID values, as text
}

// ownerOf collects the ids of every pipeline row that has had the code and of
// every task row that has belonged to one of them, from the CFG_ tables and
// from the captured images of rows since deleted.
func ownerOf(ctx context.Context, q Reader, code string) (*rowOwner, error) {
	o := &rowOwner{pipelines: map[string]bool{}, tasks: map[string]bool{}}
	if err := collectIDs(ctx, q, o.pipelines, "SELECT PIPELINE_ID FROM CFG_PIPELINES WHERE PIPELINE_CODE = $1", code); err != nil {
		return nil, readError(err, "CFG_PIPELINES")
	}
	pipes, err := readChanges(ctx, q, time.Time{}, "CFG_PIPELINES")
	if err != nil {
		return nil, err
	}
	for _, c := range pipes {
		for _, img := range images(c) {
			if value(img, "pipeline_code") == code {
				o.pipelines[value(img, "pipeline_id")] = true
			}
		}
	}
	if len(o.pipelines) == 0 {
		_, err := pipeline.Find(ctx, q, code)
		return nil, err
	}
	if err := collectIDs(ctx, q, o.tasks, `SELECT t.TASK_ID FROM CFG_TASKS t
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID WHERE p.PIPELINE_CODE = $1`, code); err != nil {
		return nil, readError(err, "CFG_TASKS")
	}
	tasks, err := readChanges(ctx, q, time.Time{}, "CFG_TASKS")
	if err != nil {
		return nil, err
	}
	for _, c := range tasks {
		for _, img := range images(c) {
			if o.pipelines[value(img, "pipeline_id")] {
				o.tasks[value(img, "task_id")] = true
			}
		}
	}
	return o, nil
}

func collectIDs(ctx context.Context, q engine.Querier, into map[string]bool, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		into[strconv.FormatInt(id, 10)] = true
	}
	return rows.Err()
}

// owns reports whether a change is to a row of the pipeline: its before or
// after image names one of the pipeline's ids (as PIPELINE_ID or
// DEPENDS_ON_PIPELINE_ID) or task ids (as TASK_ID).
func (o *rowOwner) owns(c report.MetadataChange) bool {
	for _, img := range images(c) {
		if o.pipelines[value(img, "pipeline_id")] || o.pipelines[value(img, "depends_on_pipeline_id")] ||
			o.tasks[value(img, "task_id")] {
			return true
		}
	}
	return false
}

// images returns the change's before and after images that are JSON objects.
func images(c report.MetadataChange) []map[string]json.RawMessage {
	var out []map[string]json.RawMessage
	for _, raw := range []json.RawMessage{c.Before, c.After} {
		var img map[string]json.RawMessage
		if len(raw) > 0 && json.Unmarshal(raw, &img) == nil {
			out = append(out, img)
		}
	}
	return out
}

// value returns an image's column value as text: a string without its
// quotes, a number as written; "" when absent or null.
func value(img map[string]json.RawMessage, column string) string {
	raw, ok := img[column]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if t := string(raw); t != "null" {
		return t
	}
	return ""
}
