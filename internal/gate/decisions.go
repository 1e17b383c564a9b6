package gate

import (
	"context"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// Record writes one AUD_GATE_DECISIONS row per decision, in the caller's
// transaction: the one that admits the run (attemptID 0: a pipeline gate, or
// a task skipped without an attempt) or the attempt. The selected upstream
// run and task row are kept whenever one was judged; the selected revision
// only when the decision is SATISFIED, since only those are consumed.
func Record(ctx context.Context, tx *engine.Tx, runID, attemptID int64, decisions []Decision) error {
	var attempt any
	if attemptID != 0 {
		attempt = attemptID
	}
	for _, d := range decisions {
		var pipeDep, taskDep, selRun, selTask, selRevision any
		if d.Dependency.OnTask {
			taskDep = d.Dependency.ID
		} else {
			pipeDep = d.Dependency.ID
		}
		if s := d.Selected; s != nil {
			selRun = s.PipelineRunID
			if s.TaskRunID != 0 {
				selTask = s.TaskRunID
			}
			if d.Result == Satisfied {
				selRevision = s.Revision
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO AUD_GATE_DECISIONS (PIPELINE_RUN_ID, ATTEMPT_ID, PIPELINE_DEPENDENCY_ID,
				TASK_DEPENDENCY_ID, SELECTED_PIPELINE_RUN_ID, SELECTED_TASK_RUN_ID, SELECTED_REVISION, RESULT, REASON, DECIDED_AT)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			runID, attempt, pipeDep, taskDep, selRun, selTask, selRevision, string(d.Result), d.Reason, tx.TimeArg(d.At))
		if err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not record the decision on the %s for pipeline_run_id=%d in AUD_GATE_DECISIONS",
				d.Dependency.Label(), runID)
		}
	}
	return nil
}

// BypassReason says which dependencies Dependency_gates let through without
// their being satisfied, for the GATE_BYPASS intervention and the run
// summary; it is empty when the outcome bypassed nothing.
func (o Outcome) BypassReason() string {
	bypassed := o.reasons(Bypassed)
	if len(bypassed) == 0 {
		return ""
	}
	return "dependency gate bypassed: " + strings.Join(bypassed, "; ")
}

// RecordBypass appends the GATE_BYPASS intervention of a run (taskID 0) or
// of a task under it, requested by the context's actor, in the caller's
// transaction. The reason names the dependencies let through (BypassReason,
// or the caller's own words, as a backfill's); an empty reason records
// nothing.
func RecordBypass(ctx context.Context, tx *engine.Tx, pipelineID, runID, taskID int64, reason string, now time.Time) error {
	if reason == "" {
		return nil
	}
	var task any
	if taskID != 0 {
		task = taskID
	}
	a := actor.From(ctx)
	_, err := tx.ExecContext(ctx, `INSERT INTO AUD_RUN_INTERVENTIONS
			(PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, ACTION, REASON, REQUESTED_BY, REQUESTED_BY_KIND, REQUESTED_AT)
		VALUES ($1, $2, $3, 'GATE_BYPASS', $4, $5, $6, $7)`,
		pipelineID, runID, task, reason, a.Name, string(a.Kind), tx.TimeArg(now))
	return exit.Wrap(exit.EngineDB, err, "could not record the GATE_BYPASS intervention of pipeline_run_id=%d", runID)
}

// CarryOver gives a retry the decisions its failed attempt was admitted with,
// in the transaction that queues the retry: one new AUD_GATE_DECISIONS row for
// attempt to per row of attempt from, with the same selected upstream output,
// result and reason, decided at now. The retry then consumes what the first
// attempt would have consumed, had it succeeded. It returns how many rows it
// added.
func CarryOver(ctx context.Context, tx *engine.Tx, from, to int64, now time.Time) (int64, error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO AUD_GATE_DECISIONS (PIPELINE_RUN_ID, ATTEMPT_ID, PIPELINE_DEPENDENCY_ID,
			TASK_DEPENDENCY_ID, SELECTED_PIPELINE_RUN_ID, SELECTED_TASK_RUN_ID, SELECTED_REVISION, RESULT, REASON, DECIDED_AT)
		SELECT PIPELINE_RUN_ID, $2, PIPELINE_DEPENDENCY_ID, TASK_DEPENDENCY_ID, SELECTED_PIPELINE_RUN_ID,
			SELECTED_TASK_RUN_ID, SELECTED_REVISION, RESULT, REASON, $3
		FROM AUD_GATE_DECISIONS WHERE ATTEMPT_ID = $1 ORDER BY DECISION_ID`, from, to, tx.TimeArg(now))
	n, err := affected(res, err)
	return n, exit.Wrap(exit.EngineDB, err, "could not carry the decisions of attempt_id=%d over to attempt_id=%d", from, to)
}
