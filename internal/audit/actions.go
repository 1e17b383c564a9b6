// Package audit records and reads the Engine DB's audit trail of requests and
// metadata changes: one immutable AUD_ACTIONS row per state-changing command,
// with its arguments masked, and the AUD_METADATA_CHANGES the triggers
// capture.
package audit

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
)

// Redacted replaces the value of a sensitive argument.
const Redacted = "[REDACTED]"

// sensitive are the name fragments whose values are never recorded.
var sensitive = []string{"password", "passwd", "pwd", "secret", "token", "credential", "private_key", "api_key", "apikey", "access_key"}

// Sensitive reports whether an argument name looks like it holds a secret.
func Sensitive(name string) bool {
	n := strings.ToLower(strings.ReplaceAll(name, "-", "_"))
	for _, s := range sensitive {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// Mask returns a copy of the arguments with the values of sensitive names
// replaced, recursively through maps and lists.
func Mask(args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if Sensitive(k) {
			out[k] = Redacted
			continue
		}
		out[k] = maskValue(v)
	}
	return out
}

func maskValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return Mask(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = maskValue(e)
		}
		return out
	}
	return v
}

// Request is one state-changing command to record.
type Request struct {
	Command   string
	Arguments map[string]any
	// PipelineCode and TaskCode name what the command concerns, when it
	// concerns one pipeline or task.
	PipelineCode string
	TaskCode     string
	// PipelineRunID is the run the command concerns, when known.
	PipelineRunID int64
	StartedAt     time.Time
}

// Record inserts the request's immutable AUD_ACTIONS row (OUTCOME
// REQUESTED, EXIT_CODE empty) with the context's actor. It does nothing when
// the Engine DB has no AUD_ACTIONS table yet: init-db and migrate record
// their request once it exists.
func Record(ctx context.Context, db *engine.DB, req Request) error {
	tables, err := db.Tables(ctx)
	if err != nil {
		return err
	}
	found := false
	for _, t := range tables {
		if strings.EqualFold(t, "AUD_ACTIONS") {
			found = true
		}
	}
	if !found {
		return nil
	}
	a := actor.From(ctx)
	args, err := json.Marshal(Mask(req.Arguments))
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	started := req.StartedAt
	if started.IsZero() {
		started = time.Now()
	}
	var runID any
	if req.PipelineRunID > 0 {
		runID = req.PipelineRunID
	}
	argsValue := any(string(args))
	return db.Tx(ctx, func(tx *engine.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO AUD_ACTIONS
			(STARTED_AT, ENDED_AT, ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS, PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, OUTCOME)
			VALUES ($1, $2, $3, $4, $5, $6, `+tx.JSONParam(7)+`,
			  (SELECT PIPELINE_ID FROM CFG_PIPELINES WHERE PIPELINE_CODE = $8 AND ACTIVE_FLAG = 'Y'),
			  $9,
			  (SELECT t.TASK_ID FROM CFG_TASKS t JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID
			     WHERE p.PIPELINE_CODE = $8 AND p.ACTIVE_FLAG = 'Y' AND t.TASK_CODE = $10 AND t.ACTIVE_FLAG = 'Y'),
			  'REQUESTED')`,
			tx.TimeArg(started), tx.TimeArg(time.Now()), a.Name, string(a.Kind), host, req.Command, argsValue,
			req.PipelineCode, runID, req.TaskCode)
		return err
	})
}
