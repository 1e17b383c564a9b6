package sqltask

import (
	"context"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
)

// EngineState is the Engine DB state the SQL handler reads and writes
// besides the attempt itself: the change-hash version of merge targets and
// the created-tables record DROP_TABLE consults.
type EngineState interface {
	// HashVersion returns the recorded change-hash version of a target, 0
	// when none is recorded.
	HashVersion(ctx context.Context, target string) (int, error)
	// SetHashVersion records a target's change-hash version; version 0
	// clears the record (the target was dropped or replaced).
	SetHashVersion(ctx context.Context, target string, version int) error
	// CreatedInRun reports whether a SUCCESS CREATE_TABLE task of this
	// pipeline created the target in this run.
	CreatedInRun(ctx context.Context, target string) (bool, error)
	// Writers returns the SQL actions the pipeline's active tasks perform on
	// the target (SETUP_TABLE adds the audit columns of the real writer).
	Writers(ctx context.Context, target string) ([]string, error)
}

// NewEngineState returns the EngineState of one pipeline run, kept in the
// Engine DB: AUD_TARGET_HASH_VERSION for hash versions, and the pipeline's
// SQL tasks with their task runs for the created-tables record.
//
// Targets are named by their qualified catalog.schema.table in lower case. A
// task's TARGET_OBJECT names the same target when it is that name, or its
// schema.table (which resolves in the warehouse's catalog), in any case.
//
// The state also lists the pipeline's writers of a target (Writers), for
// SETUP_TABLE.
func NewEngineState(db *engine.DB, pipelineID, pipelineRunID int64) EngineState {
	return &engineState{db: db, pipelineID: pipelineID, runID: pipelineRunID}
}

type engineState struct {
	db         *engine.DB
	pipelineID int64
	runID      int64
}

func (s *engineState) HashVersion(ctx context.Context, target string) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, "SELECT HASH_VERSION FROM AUD_TARGET_HASH_VERSION WHERE TARGET_OBJECT = $1", target).Scan(&v)
	if engine.IsNoRows(err) {
		return 0, nil
	}
	if err != nil {
		return 0, exit.Wrap(exit.EngineDB, err, "could not read the change-hash version of %s", target)
	}
	return v, nil
}

func (s *engineState) SetHashVersion(ctx context.Context, target string, version int) error {
	err := s.db.Tx(ctx, func(tx *engine.Tx) error {
		if version == 0 {
			_, err := tx.ExecContext(ctx, "DELETE FROM AUD_TARGET_HASH_VERSION WHERE TARGET_OBJECT = $1", target)
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO AUD_TARGET_HASH_VERSION (TARGET_OBJECT, HASH_VERSION, RECOMPUTED_AT)
VALUES ($1, $2, $3)
ON CONFLICT (TARGET_OBJECT) DO UPDATE SET HASH_VERSION = excluded.HASH_VERSION, RECOMPUTED_AT = excluded.RECOMPUTED_AT`,
			target, version, tx.TimeArg(time.Now()))
		return err
	})
	return exit.Wrap(exit.EngineDB, err, "could not record change-hash version %d of %s", version, target)
}

// sqlTargetsQuery lists the pipeline's SQL tasks with their SQL_ACTION and
// TARGET_OBJECT; the callers add their own conditions.
const sqlTargetsQuery = `SELECT act.PARAMETER_VALUE, tgt.PARAMETER_VALUE
FROM CFG_TASKS t
JOIN CFG_TASK_PARAMETERS act ON act.TASK_ID = t.TASK_ID AND act.ACTIVE_FLAG = 'Y' AND act.PARAMETER_NAME = 'SQL_ACTION'
JOIN CFG_TASK_PARAMETERS tgt ON tgt.TASK_ID = t.TASK_ID AND tgt.ACTIVE_FLAG = 'Y' AND tgt.PARAMETER_NAME = 'TARGET_OBJECT'
WHERE t.PIPELINE_ID = $1 AND t.HANDLER = 'SQL'`

func (s *engineState) CreatedInRun(ctx context.Context, target string) (bool, error) {
	actions, err := s.actionsOn(ctx, target, sqlTargetsQuery+` AND act.PARAMETER_VALUE = 'CREATE_TABLE'
  AND EXISTS (SELECT 1 FROM AUD_TASK_RUN_LOG r WHERE r.TASK_ID = t.TASK_ID AND r.PIPELINE_RUN_ID = $2 AND r.STATUS = $3)`,
		s.pipelineID, s.runID, string(records.TaskSuccess))
	return len(actions) > 0, err
}

// Writers returns the SQL_ACTION of each active SQL task of the pipeline
// whose TARGET_OBJECT names target, in task order.
func (s *engineState) Writers(ctx context.Context, target string) ([]string, error) {
	return s.actionsOn(ctx, target, sqlTargetsQuery+" AND t.ACTIVE_FLAG = 'Y' ORDER BY t.TASK_CODE", s.pipelineID)
}

// actionsOn runs a sqlTargetsQuery and returns the actions of the rows whose
// target is target.
func (s *engineState) actionsOn(ctx context.Context, target, query string, args ...any) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the SQL tasks writing %s", target)
	}
	defer rows.Close()
	var actions []string
	for rows.Next() {
		var action, configured string
		if err := rows.Scan(&action, &configured); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read the SQL tasks writing %s", target)
		}
		if NamesTarget(configured, target) {
			actions = append(actions, strings.TrimSpace(action))
		}
	}
	return actions, exit.Wrap(exit.EngineDB, rows.Err(), "could not read the SQL tasks writing %s", target)
}

// NamesTarget reports whether a configured TARGET_OBJECT names the qualified
// target catalog.schema.table: the whole name, or its schema.table, in any
// letter case.
func NamesTarget(configured, target string) bool {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(configured)), ".")
	full := strings.Split(strings.ToLower(target), ".")
	if len(full) != 3 || (len(parts) != 2 && len(parts) != 3) {
		return false
	}
	tail := full[3-len(parts):]
	for i := range parts {
		if parts[i] != tail[i] {
			return false
		}
	}
	return true
}
