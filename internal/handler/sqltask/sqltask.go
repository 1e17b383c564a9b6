// Package sqltask is the handler of SQL tasks (HANDLER='SQL'): a task gives
// one read-only SELECT and a SQL_ACTION, and etl-craft performs the write —
// creating, replacing, appending to, merging into, deleting from or
// dropping the TARGET_OBJECT — adding the engine-managed columns each action
// needs and reporting counts from their own COUNT(*).
//
// Every guard is checked before the target is written. On DuckDB and
// PostgreSQL every action runs in one warehouse transaction; the other
// warehouses keep a write safe by their Dialect's capabilities: one atomic
// CREATE OR REPLACE or INSERT OVERWRITE (Snowflake native), the row
// changes in a transaction begun after the DDL (Snowflake, whose DDL
// commits), or a recovery copy of the target named by the attempt where
// statements commit one by one (Trino, Databricks, Snowflake Iceberg; see
// recovery.go). Joined updates are MERGE statements where the dialect says
// so, and a computed ROW_ID is numbered under the target's lock.
//
// The SELECT is staged in a scratch table etl_stage_<task_run_id>_<token>
// of the target's schema, dropped again before the commit, where the guards look at its rows (the merges and
// DELETE_ROWS: NULL and duplicate keys) or it must be read before the
// target changes (OVERWRITE_TABLE). CREATE_TABLE and APPEND_TABLE need only
// the SELECT's column names, which a LIMIT 0 query gives without running
// it, and write its rows once: CREATE_TABLE builds the replacement with one
// CREATE TABLE … AS SELECT and renames it in place of the target,
// APPEND_TABLE inserts them straight from the SELECT. A failure, a
// cancellation or a crash leaves the target as it was (or, where statements
// commit one by one, for the next attempt to restore) and no scratch table
// behind.
//
// The package also upgrades targets: Rehash recomputes a merge target's
// change hash (version 2) and UpgradeTargets adds the run-identity columns
// older targets lack.
package sqltask

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The fault points of a replacement (CREATE_TABLE, OVERWRITE_TABLE): after
// the SELECT is staged and before the target changes, and after the target
// changed but before the commit.
const (
	FaultBeforePublish = "sql.replace.before_publish"
	FaultAfterPublish  = "sql.replace.after_publish"
)

// The fault points of every action's warehouse commit: its writes done and
// not committed, and committed before the attempt's outcome is recorded.
const (
	FaultBeforeCommit = "sql.before_commit"
	FaultAfterCommit  = "sql.after_commit"
)

// New returns the handler of SQL tasks, keeping its own state of each run
// (EngineState) in the Engine DB db. Check needs no Engine DB: validate
// passes nil.
func New(db *engine.DB) handler.Handler { return sqlHandler{db: db} }

type sqlHandler struct {
	db *engine.DB
}

// Check reviews a task's parameters and its SELECT for validate.
func (sqlHandler) Check(t *handler.Task) (failures, warnings []string) {
	_, failures, warnings = readSpec(t)
	return failures, warnings
}

// Run performs one attempt of a SQL task.
func (h sqlHandler) Run(ctx context.Context, t *handler.Task) (handler.Result, error) {
	log := t.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s, failures, warnings := readSpec(t)
	for _, w := range warnings {
		log.Warn(w)
	}
	if len(failures) > 0 {
		return handler.Result{}, exit.Errorf(exit.SQLGuard, "%s", strings.Join(failures, "; "))
	}
	if t.Warehouse == nil || h.db == nil {
		return handler.Result{}, exit.Errorf(exit.Handler, "the SQL task %s has no warehouse or Engine DB to work with", t.TaskCode)
	}
	w, release, err := t.Warehouse(ctx)
	if err != nil {
		return handler.Result{}, err
	}
	defer release()
	a, err := warehouse.ActionsOf(w)
	if err != nil {
		return handler.Result{}, err
	}
	tgt, err := resolveTarget(w, s.target, s.parts)
	if err != nil {
		return handler.Result{}, err
	}
	j := &job{t: t, s: s, state: NewEngineState(h.db, t.PipelineID, t.PipelineRunID), log: log.With("target", tgt.key, "action", s.action),
		w: w, a: a, tgt: tgt, token: newToken(), caps: w.Capabilities()}
	if err := j.storageRefusal(); err != nil {
		return handler.Result{}, err
	}
	if j.oneByOne() || j.caps.RowID == warehouse.Computed {
		// Statements that commit one by one, a recovery copy and computed
		// ROW_IDs all need the target to themselves.
		held, err := lock.Acquire(ctx, h.db, lock.Target(tgt.key), 0)
		if err != nil {
			return handler.Result{}, err
		}
		defer held.Release()
	}
	r, err := j.run(ctx)
	if err != nil {
		return handler.Result{}, err
	}
	r.RowsWritten = handler.Int(value(r.InsertCount) + value(r.UpdateCount) + value(r.DeleteCount))
	r.Reported = append([]handler.Reported{{Name: pAction, Value: s.action}, {Name: pTarget, Value: tgt.table.Full()}}, r.Reported...)
	return r, nil
}

func value(c handler.Count) int64 {
	if c == nil {
		return 0
	}
	return *c
}

// newToken returns the random part of this attempt's scratch table names.
func newToken() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}
