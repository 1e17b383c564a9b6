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
	"github.com/etl-craft/etl-craft/internal/exit"
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

// Record records a state-changing request in its immutable AUD_ACTIONS row
// (OUTCOME REQUESTED, EXIT_CODE empty), with the context's actor, before
// the request acts. It is the one rule of every front end (the command
// line, the HTTP API, the console): a request that cannot be recorded is
// not carried out. Its error (exit 12) says so and names what held the
// Engine DB, once the busy timeout is over (engine.DB.BoundedTx), so that
// an HTTP client gets its answer (503: the error IsUnavailable) within the
// busy timeout.
//
// recorded is false, with no error, when the Engine DB has no AUD_ACTIONS
// yet: init-db, migrate and setup then record their request with
// RecordDone once their work created the table.
func Record(ctx context.Context, db *engine.DB, req Request) (recorded bool, err error) {
	has, err := hasActions(ctx, db)
	if err != nil || !has {
		return false, notCarriedOut(err)
	}
	return true, notCarriedOut(insert(ctx, db, req))
}

// notCarriedOut is the error of a request that could not be recorded.
func notCarriedOut(err error) error {
	return exit.Wrap(exit.EngineDB, err, "the request was not carried out, because it could not be recorded in AUD_ACTIONS first")
}

// RecordDone records the request of work that is done and that created
// AUD_ACTIONS itself, so could not be recorded before (see Record).
func RecordDone(ctx context.Context, db *engine.DB, req Request) error {
	has, err := hasActions(ctx, db)
	if err == nil && has {
		err = insert(ctx, db, req)
	}
	return exit.Wrap(exit.EngineDB, err, "the work is done, but its request could not be recorded in AUD_ACTIONS")
}

// hasActions reports whether the Engine DB has AUD_ACTIONS.
func hasActions(ctx context.Context, db *engine.DB) (bool, error) {
	tables, err := db.Tables(ctx)
	if err != nil {
		return false, err
	}
	for _, t := range tables {
		if strings.EqualFold(t, "AUD_ACTIONS") {
			return true, nil
		}
	}
	return false, nil
}

// insert writes the request's row.
func insert(ctx context.Context, db *engine.DB, req Request) error {
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
	return db.BoundedTx(ctx, func(tx *engine.Tx) error {
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
