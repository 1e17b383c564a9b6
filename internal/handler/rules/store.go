package rules

import (
	"context"
	"fmt"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The statuses of AUD_BUSINESS_RULES_RUN_LOG (ck_br_run_status), as the
// SQL below binds them.
const (
	statusInProgress = string(records.RuleInProgress)
	statusSuccess    = string(records.RuleSuccess)
	statusFailed     = string(records.RuleFailed)
	statusSkipped    = string(records.RuleSkipped)
)

// rule is an active CFG_BUSINESS_RULES row.
type rule struct {
	id     int64
	name   string
	sql    string
	typ    string // INCOMPLETE, REJECT or REPORT: the STATUS of its flags
	key    string // BUSINESS_RULE_KEY_COLUMN
	target string // TARGET_TABLE as written
	seq    int64
}

// store reads the rules of one task run and records their runs and
// findings in the Engine DB.
type store struct {
	db        *engine.DB
	taskRunID int64
}

// rules returns the active rules of the task run's task.
func (s store) rules(ctx context.Context) ([]rule, error) {
	return readRules(ctx, s.db, fmt.Sprintf("task_run_id=%d", s.taskRunID),
		"JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_ID = r.TASK_ID WHERE tr.TASK_RUN_ID = $1", s.taskRunID)
}

// taskRules returns the active rules of a pipeline's active task.
func taskRules(ctx context.Context, db *engine.DB, pipelineID int64, taskCode string) ([]rule, error) {
	return readRules(ctx, db, "task "+taskCode,
		"JOIN CFG_TASKS t ON t.TASK_ID = r.TASK_ID AND t.ACTIVE_FLAG = 'Y' WHERE t.PIPELINE_ID = $1 AND t.TASK_CODE = $2", pipelineID, taskCode)
}

// readRules reads the active rules the join and condition select; of
// names them in errors.
func readRules(ctx context.Context, db *engine.DB, of, joinWhere string, args ...any) ([]rule, error) {
	rows, err := db.QueryContext(ctx, `SELECT r.BUSINESS_RULE_ID, r.BUSINESS_RULE_NAME, r.BUSINESS_RULE_SQL, r.BUSINESS_RULE_TYPE,
  r.BUSINESS_RULE_KEY_COLUMN, r.TARGET_TABLE, r.SEQUENCE_NUMBER
FROM CFG_BUSINESS_RULES r
`+joinWhere+` AND r.ACTIVE_FLAG = 'Y'`, args...)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the business rules of %s", of)
	}
	defer rows.Close()
	var out []rule
	for rows.Next() {
		var r rule
		if err := rows.Scan(&r.id, &r.name, &r.sql, &r.typ, &r.key, &r.target, &r.seq); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read the business rules of %s", of)
		}
		out = append(out, r)
	}
	return out, exit.Wrap(exit.EngineDB, rows.Err(), "could not read the business rules of %s", of)
}

// ruleRun is a rule's AUD_BUSINESS_RULES_RUN_LOG row of this task run; id 0
// when it has none yet.
type ruleRun struct {
	id     int64
	status string
}

// previous returns the rule's run of this task run, left by an earlier
// attempt.
func (s store) previous(ctx context.Context, r rule) (ruleRun, error) {
	var p ruleRun
	err := s.db.QueryRowContext(ctx,
		"SELECT BUSINESS_RULE_RUN_ID, STATUS FROM AUD_BUSINESS_RULES_RUN_LOG WHERE BUSINESS_RULE_ID = $1 AND TASK_RUN_ID = $2",
		r.id, s.taskRunID).Scan(&p.id, &p.status)
	if engine.IsNoRows(err) {
		return ruleRun{}, nil
	}
	return p, exit.Wrap(exit.EngineDB, err, "could not read the run of business rule %s", r.name)
}

// start records the rule IN-PROGRESS, in its row of this task run, and
// returns the row's id.
func (s store) start(ctx context.Context, r rule, prev ruleRun) (int64, error) {
	id, err := s.setRun(ctx, r, prev, statusInProgress, nil)
	return id, exit.Wrap(exit.EngineDB, err, "could not record the start of business rule %s", r.name)
}

// skip records a rule of a wave after a failed one SKIPPED, unless it
// already succeeded in this task run.
func (s store) skip(ctx context.Context, r rule) error {
	prev, err := s.previous(ctx, r)
	if err != nil || prev.status == statusSuccess {
		return err
	}
	now := time.Now()
	_, err = s.setRun(ctx, r, prev, statusSkipped, &now)
	return exit.Wrap(exit.EngineDB, err, "could not record business rule %s as %s", r.name, statusSkipped)
}

// fail records the rule's run FAILED.
func (s store) fail(ctx context.Context, runID int64) error {
	err := s.db.Tx(ctx, func(tx *engine.Tx) error { return endRun(ctx, tx, runID, statusFailed) })
	return exit.Wrap(exit.EngineDB, err, "could not record business_rule_run_id=%d as %s", runID, statusFailed)
}

// setRun gives the rule's run of this task run a status, starting it again
// (START_DATE now) in the row an earlier attempt left, or in a new row.
func (s store) setRun(ctx context.Context, r rule, prev ruleRun, status string, end *time.Time) (int64, error) {
	id := prev.id
	err := s.db.Tx(ctx, func(tx *engine.Tx) error {
		var endArg any
		if end != nil {
			endArg = tx.TimeArg(*end)
		}
		if id != 0 {
			_, err := tx.ExecContext(ctx,
				"UPDATE AUD_BUSINESS_RULES_RUN_LOG SET STATUS = $1, START_DATE = $2, END_DATE = $3 WHERE BUSINESS_RULE_RUN_ID = $4",
				status, tx.TimeArg(time.Now()), endArg, id)
			return err
		}
		return tx.QueryRowContext(ctx, `INSERT INTO AUD_BUSINESS_RULES_RUN_LOG (BUSINESS_RULE_ID, TASK_RUN_ID, START_DATE, END_DATE, STATUS)
VALUES ($1, $2, $3, $4, $5) RETURNING BUSINESS_RULE_RUN_ID`, r.id, s.taskRunID, tx.TimeArg(time.Now()), endArg, status).Scan(&id)
	})
	return id, err
}

// endRun ends a rule's run with a status.
func endRun(ctx context.Context, tx *engine.Tx, runID int64, status string) error {
	_, err := tx.ExecContext(ctx, "UPDATE AUD_BUSINESS_RULES_RUN_LOG SET STATUS = $1, END_DATE = $2 WHERE BUSINESS_RULE_RUN_ID = $3",
		status, tx.TimeArg(time.Now()), runID)
	return err
}

// standing returns the keys the rule flags now (its active results).
func (s store) standing(ctx context.Context, r rule) (map[string]struct{}, error) {
	rows, err := s.db.QueryContext(ctx,
		"SELECT BUSINESS_RULE_KEY FROM AUD_BUSINESS_RULES_RESULTS WHERE BUSINESS_RULE_ID = $1 AND ACTIVE_FLAG = 'Y'", r.id)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read the flags of business rule %s", r.name)
	}
	defer rows.Close()
	out := map[string]struct{}{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read the flags of business rule %s", r.name)
		}
		out[k] = struct{}{}
	}
	return out, exit.Wrap(exit.EngineDB, rows.Err(), "could not read the flags of business rule %s", r.name)
}

// succeed records, in one transaction, the rule's new flags, the flags it
// clears and its run's SUCCESS.
func (s store) succeed(ctx context.Context, r rule, runID int64, flag, clear []string) error {
	err := s.db.Tx(ctx, func(tx *engine.Tx) error {
		now := tx.TimeArg(time.Now())
		for _, k := range flag {
			if _, err := tx.ExecContext(ctx, `INSERT INTO AUD_BUSINESS_RULES_RESULTS
  (BUSINESS_RULE_RUN_ID, BUSINESS_RULE_ID, BUSINESS_RULE_KEY, TARGET_TABLE, STATUS, ACTIVE_FLAG, START_DATE)
VALUES ($1, $2, $3, $4, $5, 'Y', $6)`, runID, r.id, k, r.target, r.typ, now); err != nil {
				return err
			}
		}
		for _, k := range clear {
			if _, err := tx.ExecContext(ctx, `UPDATE AUD_BUSINESS_RULES_RESULTS SET ACTIVE_FLAG = 'N', END_DATE = $1
WHERE BUSINESS_RULE_ID = $2 AND BUSINESS_RULE_KEY = $3 AND ACTIVE_FLAG = 'Y'`, now, r.id, k); err != nil {
				return err
			}
		}
		return endRun(ctx, tx, runID, statusSuccess)
	})
	return exit.Wrap(exit.EngineDB, err, "could not record the findings of business rule %s", r.name)
}

// Flag is a standing finding of a business rule: an active
// AUD_BUSINESS_RULES_RESULTS row.
type Flag struct {
	Rule   string // BUSINESS_RULE_NAME
	Key    string // BUSINESS_RULE_KEY
	Status string // the rule's type: INCOMPLETE, REJECT or REPORT
}

// Flags returns the standing findings of the rules of a pipeline's tasks,
// by rule name and key.
func Flags(ctx context.Context, q engine.Querier, pipelineCode string) ([]Flag, error) {
	rows, err := q.QueryContext(ctx, `SELECT r.BUSINESS_RULE_NAME, s.BUSINESS_RULE_KEY, s.STATUS
FROM AUD_BUSINESS_RULES_RESULTS s
JOIN CFG_BUSINESS_RULES r ON r.BUSINESS_RULE_ID = s.BUSINESS_RULE_ID
JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
WHERE s.ACTIVE_FLAG = 'Y' AND p.PIPELINE_CODE = $1
ORDER BY r.BUSINESS_RULE_NAME, s.BUSINESS_RULE_KEY`, pipelineCode)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not read AUD_BUSINESS_RULES_RESULTS")
	}
	defer rows.Close()
	var out []Flag
	for rows.Next() {
		var f Flag
		if err := rows.Scan(&f.Rule, &f.Key, &f.Status); err != nil {
			return nil, exit.Wrap(exit.EngineDB, err, "could not read AUD_BUSINESS_RULES_RESULTS")
		}
		out = append(out, f)
	}
	return out, rows.Err()
}
