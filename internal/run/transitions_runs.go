package run

// The transitions of AUD_PIPELINES_RUN_LOG rows (see transitions.go), and
// the interventions recorded with them.

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/records"
)

// newRun is what a new run row is created with.
type newRun struct {
	PipelineID  int64
	Key         string
	TriggerKind string
	RunDate     string // YYYY-MM-DD
	Backfill    bool
}

// insertRun inserts a QUEUED run and returns its id. A key the pipeline
// already has is a stale transition.
func insertRun(ctx context.Context, tx *wtx, r newRun) (int64, error) {
	ids, err := insertRuns(ctx, tx, []newRun{r})
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// insertRuns inserts QUEUED runs in one statement and returns their ids, in
// order. A key one of the pipelines already has is a stale transition, and
// none is inserted.
func insertRuns(ctx context.Context, tx *wtx, runs []newRun) ([]int64, error) {
	var args []any
	values := make([]string, len(runs))
	for i, r := range runs {
		backfill := "N"
		if r.Backfill {
			backfill = "Y"
		}
		var date any
		if r.RunDate != "" {
			date = r.RunDate
		}
		var in string
		args, in = engine.InList(args, []any{r.PipelineID, RunQueued, date, backfill, r.Key, r.TriggerKind})
		values[i] = "(" + in + ")"
	}
	rows, err := tx.QueryContext(ctx, `INSERT INTO AUD_PIPELINES_RUN_LOG
		(PIPELINE_ID, STATUS, RUN_DATE, BACKFILL, RUN_KEY, TRIGGER_KIND)
		VALUES `+strings.Join(values, ", ")+` RETURNING PIPELINE_RUN_ID, PIPELINE_ID, RUN_KEY`, args...)
	ids := map[string]int64{}
	if err == nil {
		for rows.Next() {
			var id, pipelineID int64
			var key string
			if err = rows.Scan(&id, &pipelineID, &key); err != nil {
				break
			}
			ids[fmt.Sprint(pipelineID, " ", key)] = id
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = rows.Err()
		}
	}
	switch {
	case err != nil && tx.isUnique(err) && len(runs) == 1:
		return nil, exit.Errorf(exit.StaleTransition,
			"%s: another run of the pipeline already has the run key %q", runsTable, runs[0].Key)
	case err != nil && tx.isUnique(err):
		return nil, exit.Errorf(exit.StaleTransition,
			"%s: another run of one of %d pipelines already has its run key", runsTable, len(runs))
	case err != nil:
		return nil, exit.Wrap(exit.EngineDB, err, "could not insert %d run(s) into %s", len(runs), runsTable)
	}
	out := make([]int64, len(runs))
	for i, r := range runs {
		if out[i] = ids[fmt.Sprint(r.PipelineID, " ", r.Key)]; out[i] == 0 {
			return nil, exit.Errorf(exit.EngineDB, "%s: the insert of %d runs returned no id for run key %q", runsTable, len(runs), r.Key)
		}
	}
	return out, nil
}

// admitRun moves a QUEUED run of the pipeline to IN-PROGRESS under owner's
// lease, or with no owner when owner is "" (a run started for an
// orchestrator or a later supervisor, which is told on the events channel).
// Another active run of the pipeline makes it stale: the database allows
// one.
func admitRun(ctx context.Context, tx *wtx, pipelineID, id int64, owner string, now time.Time) error {
	var holder, lease any
	if owner != "" {
		holder, lease = owner, tx.TimeArg(now.Add(LeaseDuration))
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, OWNER_ID = $3, LEASE_EXPIRES_AT = $4, START_DATE = $5
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $6`,
		id, RunInProgress, holder, lease, tx.TimeArg(now), RunQueued)
	if err != nil && tx.isUnique(err) {
		// A failed statement aborts a PostgreSQL transaction: look outside it.
		other, _ := activeRunOf(ctx, tx.db, pipelineID)
		return stale(runsTable, id, "start", "no other "+RunInProgress+" run of the pipeline",
			fmt.Sprintf("another process started pipeline_run_id=%d", other))
	}
	if err := runCAS(ctx, tx, res, err, id, "start", "status QUEUED"); err != nil || owner != "" {
		return err
	}
	return tx.Notify(ctx, engine.EventQueued)
}

// startRuns admits QUEUED runs of different pipelines with no owner, as
// admitRun does each, in one statement and without the event (the caller
// announces them once): all of them, or none and a stale error when one is
// no longer QUEUED or its pipeline has another active run.
func startRuns(ctx context.Context, tx *wtx, ids []int64, now time.Time) error {
	args, in := engine.InList([]any{RunInProgress, tx.TimeArg(now), RunQueued}, ids)
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $1, OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL, START_DATE = $2
		WHERE STATUS = $3 AND PIPELINE_RUN_ID IN (`+in+`)`, args...)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	switch {
	case err != nil && tx.isUnique(err):
		return exit.Errorf(exit.StaleTransition, "%s: cannot start %d runs together: another process started a run of one of their pipelines",
			runsTable, len(ids))
	case err != nil:
		return exit.Wrap(exit.EngineDB, err, "could not start %d runs in %s", len(ids), runsTable)
	case n != int64(len(ids)):
		return exit.Errorf(exit.StaleTransition, "%s: cannot start %d runs together: expected each QUEUED, found %d of them",
			runsTable, len(ids), n)
	}
	return nil
}

// activeRunOf returns the IN-PROGRESS run of the pipeline, 0 when none.
func activeRunOf(ctx context.Context, q engine.Querier, pipelineID int64) (int64, error) {
	var other int64
	err := q.QueryRowContext(ctx, `SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1 AND STATUS = $2`,
		pipelineID, RunInProgress).Scan(&other)
	if engine.IsNoRows(err) {
		return 0, nil
	}
	return other, err
}

// takeRun gives an unowned IN-PROGRESS run to owner, to resume it. A run
// another supervisor holds is stale: "is supervised by <owner>".
func takeRun(ctx context.Context, tx *wtx, id int64, owner string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET OWNER_ID = $2, LEASE_EXPIRES_AT = $3
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $4 AND OWNER_ID IS NULL`,
		id, owner, tx.TimeArg(now.Add(LeaseDuration)), RunInProgress)
	return runCAS(ctx, tx, res, err, id, "supervise", "status "+RunInProgress+" with no owner")
}

// renewRun extends owner's lease on an IN-PROGRESS run. A lease that ended
// and was not taken is renewed too: taking a run always changes OWNER_ID
// (a release clears it, takeRun needs it clear), so the owner alone tells
// whether the run is still owner's, and a renewal that came late (a starved
// Engine DB) does not give up a run nobody else took.
func renewRun(ctx context.Context, tx *wtx, id int64, owner string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET LEASE_EXPIRES_AT = $3
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $4 AND OWNER_ID = $2`,
		id, owner, tx.TimeArg(now.Add(LeaseDuration)), RunInProgress)
	return runCAS(ctx, tx, res, err, id, "renew the lease", fmt.Sprintf("status %s owner='%s'", RunInProgress, owner))
}

// releaseRun gives up owner's lease on a run that stays IN-PROGRESS, so the
// next supervisor may resume it at once.
func releaseRun(ctx context.Context, tx *wtx, id int64, owner string) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND OWNER_ID = $2`, id, owner)
	return runCAS(ctx, tx, res, err, id, "release", fmt.Sprintf("owner='%s'", owner))
}

// releaseAbandonedRun takes owner's lease, ending before cutoff, away from
// an IN-PROGRESS run that has no live attempt at now, so another supervisor
// can resume it.
func releaseAbandonedRun(ctx context.Context, tx *wtx, id int64, owner string, cutoff, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG SET OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $2 AND OWNER_ID = $3 AND LEASE_EXPIRES_AT < $4
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			WHERE t.PIPELINE_RUN_ID = $1 AND a.STATUS IN ($5, $6) AND a.LEASE_EXPIRES_AT >= $7)`,
		id, RunInProgress, owner, tx.TimeArg(cutoff), AttemptClaimed, AttemptRunning, tx.TimeArg(now))
	return runCAS(ctx, tx, res, err, id, "release",
		fmt.Sprintf("status %s owner='%s' with a lease ended before %s and no live attempt", RunInProgress, owner, cutoff.UTC().Format(time.RFC3339)))
}

// runEnding is how a run ends.
type runEnding struct {
	Status string
}

// finishRun ends an IN-PROGRESS run held by owner ("" for a run nobody
// holds) while no attempt of it is claimed or running. The engine ends it
// (ENDED_BY is the SYSTEM actor) and gives up the lease. A successful end of
// a reopened run publishes its repair (gate.PublishRepair). It returns the
// SLA status recorded on the run: MET, BREACHED, or "" while undecided or
// without an SLA.
func finishRun(ctx context.Context, tx *wtx, id int64, owner string, e runEnding, now time.Time) (string, error) {
	switch e.Status {
	case RunSuccess, RunFailed, RunSkipped, RunCancelled:
	default:
		return "", stale(runsTable, id, "finish", "an ending status", e.Status)
	}
	var sla sql.NullString
	var pending string
	err := tx.QueryRowContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = $3, ENDED_BY = $4, ENDED_BY_KIND = $5, OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $6 AND COALESCE(OWNER_ID, '') = $7
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			WHERE t.PIPELINE_RUN_ID = $1 AND a.STATUS IN ($8, $9))
		RETURNING SLA_STATUS, REPAIR_PENDING`,
		id, e.Status, tx.TimeArg(now), actor.SystemActor.Name, string(actor.SystemActor.Kind),
		RunInProgress, owner, AttemptClaimed, AttemptRunning).Scan(&sla, &pending)
	if err := runCAS(ctx, tx, nil, err, id, "finish",
		fmt.Sprintf("status %s owner='%s' and no claimed or running attempt", RunInProgress, owner)); err != nil {
		return "", err
	}
	if pending == "Y" {
		_, err = gate.PublishRepair(ctx, tx.Tx, id)
	}
	return sla.String, err
}

// endQueuedRun ends a QUEUED run that was never admitted: SKIPPED when its
// pipeline gate was not satisfied. The engine ends it (the SYSTEM actor).
func endQueuedRun(ctx context.Context, tx *wtx, id int64, status string, now time.Time) error {
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = $3, ENDED_BY = $4, ENDED_BY_KIND = $5
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $6`,
		id, status, tx.TimeArg(now), actor.SystemActor.Name, string(actor.SystemActor.Kind), RunQueued)
	return runCAS(ctx, tx, res, err, id, "end", "status QUEUED")
}

// markRun sets a run's status on an operator's request, ending it now when
// it had not ended: the run must still be as the operator read it (status
// and owner), and no attempt of it may be claimed or running. The operator
// is the run's ending actor. A SUCCESS mark of a pending repair publishes
// it.
func markRun(ctx context.Context, tx *wtx, id int64, from, owner, to string, now time.Time) error {
	switch to {
	case RunSuccess, RunFailed, RunSkipped:
	default:
		return stale(runsTable, id, "mark", "a status SUCCESS, FAILED or SKIPPED", to)
	}
	a := actor.From(ctx)
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = COALESCE(END_DATE, $3), ENDED_BY = $4, ENDED_BY_KIND = $5,
		    OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $6 AND COALESCE(OWNER_ID, '') = $7
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			WHERE t.PIPELINE_RUN_ID = $1 AND a.STATUS IN ($8, $9))`,
		id, to, tx.TimeArg(now), a.Name, string(a.Kind), from, owner, AttemptClaimed, AttemptRunning)
	if err := runCAS(ctx, tx, res, err, id, "mark",
		fmt.Sprintf("status %s owner='%s' and no claimed or running attempt", from, owner)); err != nil {
		return err
	}
	if to == RunSuccess {
		if _, err := gate.PublishRepair(ctx, tx.Tx, id); err != nil {
			return err
		}
	}
	return gate.SettleWaits(ctx, tx.Tx, id)
}

// cancelRun ends a QUEUED or IN-PROGRESS run CANCELLED on an operator's
// request: the run must still have the status the operator read, and its
// active attempts must have been cancelled first. The operator is the run's
// ending actor; its gate waits are settled.
func cancelRun(ctx context.Context, tx *wtx, id int64, from string, now time.Time) error {
	a := actor.From(ctx)
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = $3, ENDED_BY = $4, ENDED_BY_KIND = $5, OWNER_ID = NULL, LEASE_EXPIRES_AT = NULL
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $6 AND STATUS IN ($7, $8)
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
			WHERE t.PIPELINE_RUN_ID = $1 AND a.STATUS IN ($9, $10))`,
		id, RunCancelled, tx.TimeArg(now), a.Name, string(a.Kind), from, RunQueued, RunInProgress, AttemptClaimed, AttemptRunning)
	if err := runCAS(ctx, tx, res, err, id, "cancel", "status "+from+" and no claimed or running attempt"); err != nil {
		return err
	}
	if err := tx.Notify(ctx, engine.EventCancelled); err != nil {
		return err
	}
	return gate.SettleWaits(ctx, tx.Tx, id)
}

// insertEndedRun records a run that ended as soon as it was recorded, on an
// operator's request: a stand-in run, or a run skipped on purpose. The
// operator starts and ends it.
func insertEndedRun(ctx context.Context, tx *wtx, r newRun, status string, now time.Time) (int64, error) {
	a := actor.From(ctx)
	var id int64
	err := tx.QueryRowContext(ctx, `INSERT INTO AUD_PIPELINES_RUN_LOG
		(PIPELINE_ID, STATUS, START_DATE, END_DATE, RUN_DATE, BACKFILL, RUN_KEY, TRIGGER_KIND, ENDED_BY, ENDED_BY_KIND)
		VALUES ($1, $2, $3, $3, $4, 'N', $5, $6, $7, $8) RETURNING PIPELINE_RUN_ID`,
		r.PipelineID, status, tx.TimeArg(now), r.RunDate, r.Key, r.TriggerKind, a.Name, string(a.Kind)).Scan(&id)
	if err != nil && tx.isUnique(err) {
		return 0, exit.Errorf(exit.StaleTransition,
			"%s: another run of the pipeline already has the run key %q", runsTable, r.Key)
	}
	return id, exit.Wrap(exit.EngineDB, err, "could not record a run in %s", runsTable)
}

// reopenRun puts an ended run back IN-PROGRESS for a repair
// (gate.BeginRepair: REPAIR_PENDING 'Y') and records the REOPEN intervention
// with the reason, in the same transaction, held by owner (a lease) or by
// no one when owner is "". A CANCELLED run is never reopened; another
// active run of the pipeline makes it stale.
func reopenRun(ctx context.Context, tx *wtx, id int64, taskID int64, owner, reason string) error {
	var pipelineID int64
	var from string
	err := tx.QueryRowContext(ctx, "SELECT PIPELINE_ID, STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", id).
		Scan(&pipelineID, &from)
	if engine.IsNoRows(err) {
		return stale(runsTable, id, "reopen", "an ended run", "missing")
	}
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not read %s", runsTable)
	}
	if !runEnded(from) || from == RunCancelled {
		return stale(runsTable, id, "reopen", "status SUCCESS, FAILED or SKIPPED", "status "+from)
	}
	var holder, lease any
	if owner != "" {
		holder, lease = owner, tx.TimeArg(time.Now().Add(LeaseDuration))
	}
	res, err := tx.ExecContext(ctx, `UPDATE AUD_PIPELINES_RUN_LOG
		SET STATUS = $2, END_DATE = NULL, ENDED_BY = NULL, ENDED_BY_KIND = NULL, OWNER_ID = $4, LEASE_EXPIRES_AT = $5
		WHERE PIPELINE_RUN_ID = $1 AND STATUS = $3`, id, RunInProgress, from, holder, lease)
	if err != nil && tx.isUnique(err) {
		other, _ := activeRunOf(ctx, tx.db, pipelineID)
		return stale(runsTable, id, "reopen", "no other "+RunInProgress+" run of the pipeline",
			fmt.Sprintf("pipeline_run_id=%d %s", other, RunInProgress))
	}
	if err := runCAS(ctx, tx, res, err, id, "reopen", "status "+from); err != nil {
		return err
	}
	if err := gate.BeginRepair(ctx, tx.Tx, id); err != nil {
		return err
	}
	return recordIntervention(ctx, tx, intervention{
		PipelineID: pipelineID, RunID: id, TaskID: taskID, Action: records.ActionReopen,
		From: from, To: RunInProgress, Reason: reason,
	})
}

// runCAS turns the result of a run update (errNoRow for an UPDATE …
// RETURNING that matched no row) into nil or the stale error that
// describes the row as it is.
func runCAS(ctx context.Context, tx *wtx, res sql.Result, err error, id int64, action, expected string) error {
	missed := err == errNoRow
	switch {
	case missed:
	case res == nil && err == nil: // an UPDATE … RETURNING that matched
	default:
		if missed, err = noRow(res, err); err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not %s pipeline_run_id=%d in %s", action, id, runsTable)
		}
	}
	if !missed {
		return nil
	}
	var status string
	var owner sql.NullString
	var lease engine.Time
	var busy int
	err = tx.QueryRowContext(ctx, `SELECT r.STATUS, r.OWNER_ID, r.LEASE_EXPIRES_AT,
		(SELECT count(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
		 WHERE t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND a.STATUS IN ($2, $3))
		FROM AUD_PIPELINES_RUN_LOG r WHERE r.PIPELINE_RUN_ID = $1`, id, AttemptClaimed, AttemptRunning).
		Scan(&status, &owner, &lease, &busy)
	if engine.IsNoRows(err) {
		return stale(runsTable, id, action, expected, "missing")
	}
	if err != nil {
		return exit.Wrap(exit.EngineDB, err, "could not read %s", runsTable)
	}
	found := "status " + status
	if owner.Valid {
		found += fmt.Sprintf(" owner='%s'", owner.String)
		if lease.Valid {
			found += " (is supervised by " + owner.String + ", lease until " + lease.Time.Format(time.RFC3339) + ")"
		}
	}
	if busy > 0 {
		found += fmt.Sprintf(" with %d claimed or running attempt(s)", busy)
	}
	return stale(runsTable, id, action, expected, found)
}

// intervention is one AUD_RUN_INTERVENTIONS row. Empty texts and a nil
// count are recorded as NULL.
type intervention struct {
	PipelineID, RunID, TaskID int64
	Action, From, To, Reason  string
	// TargetCount is the row count an operator stated (mark --rows).
	TargetCount *int64
	// PreviousMessage is the task's ERROR_MESSAGE before the change.
	PreviousMessage string
}

// recordIntervention appends an operator intervention, requested by the
// transaction's actor.
func recordIntervention(ctx context.Context, tx *wtx, iv intervention) error {
	return recordInterventions(ctx, tx, []intervention{iv})
}

// recordInterventions appends interventions in one statement, each
// requested by the transaction's actor.
func recordInterventions(ctx context.Context, tx *wtx, ivs []intervention) error {
	var args []any
	values := make([]string, len(ivs))
	a := actor.From(ctx)
	for i, iv := range ivs {
		var task any
		if iv.TaskID != 0 {
			task = iv.TaskID
		}
		var in string
		args, in = engine.InList(args, []any{iv.PipelineID, iv.RunID, task, iv.Action, nullText(iv.From), nullText(iv.To),
			iv.TargetCount, nullText(iv.PreviousMessage), iv.Reason, a.Name, string(a.Kind)})
		values[i] = "(" + in + ")"
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO AUD_RUN_INTERVENTIONS
		(PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, ACTION, FROM_STATUS, TO_STATUS, TARGET_COUNT, PREVIOUS_MESSAGE, REASON,
		 REQUESTED_BY, REQUESTED_BY_KIND)
		VALUES `+strings.Join(values, ", "), args...)
	return exit.Wrap(exit.EngineDB, err, "could not record the %s intervention", ivs[0].Action)
}

// nullText is NULL for an empty text.
func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}
