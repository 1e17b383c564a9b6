package console

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The console's own reads: what a page shows of many pipelines or runs at
// once, in a few indexed queries whatever the history's size (see
// docs/benchmarks.md). What the command line and the API show of one thing
// the pages read through inspect.

// readError wraps a failed read of table (exit 12).
func readError(err error, table string) error {
	return exit.Wrap(exit.EngineDB, err, "could not read %s", table)
}

// latestRun is the newest run of a pipeline.
type latestRun struct {
	ID        int64
	Status    string
	SLAStatus string
}

// latestRuns returns the newest run of every active pipeline that has one,
// by pipeline id.
func latestRuns(ctx context.Context, q engine.Querier) (map[int64]latestRun, error) {
	rows, err := q.QueryContext(ctx, `SELECT p.PIPELINE_ID, r.PIPELINE_RUN_ID, r.STATUS, r.SLA_STATUS
		FROM CFG_PIPELINES p JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID =
			(SELECT MAX(x.PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG x WHERE x.PIPELINE_ID = p.PIPELINE_ID)
		WHERE p.ACTIVE_FLAG = 'Y'`)
	if err != nil {
		return nil, readError(err, "AUD_PIPELINES_RUN_LOG")
	}
	defer rows.Close()
	out := map[int64]latestRun{}
	for rows.Next() {
		var id int64
		var r latestRun
		var sla sql.NullString
		if err := rows.Scan(&id, &r.ID, &r.Status, &sla); err != nil {
			return nil, readError(err, "AUD_PIPELINES_RUN_LOG")
		}
		r.SLAStatus = sla.String
		out[id] = r
	}
	return out, rows.Err()
}

// activeRun is a pipeline's IN-PROGRESS run.
type activeRun struct {
	ID        int64
	Start     records.Time
	SLAStatus string
	// Running is how many of its tasks are in progress.
	Running int
}

// activeRuns returns the IN-PROGRESS run of every pipeline that has one,
// by pipeline id, and how many QUEUED runs each pipeline has.
func activeRuns(ctx context.Context, q engine.Querier) (map[int64]activeRun, map[int64]int, error) {
	rows, err := q.QueryContext(ctx, `SELECT r.PIPELINE_ID, r.PIPELINE_RUN_ID, r.START_DATE, r.SLA_STATUS,
			(SELECT COUNT(*) FROM AUD_TASK_RUN_LOG t WHERE t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID AND t.STATUS = $1)
		FROM AUD_PIPELINES_RUN_LOG r WHERE r.STATUS = $2`, string(records.TaskInProgress), string(records.RunInProgress))
	if err != nil {
		return nil, nil, readError(err, "AUD_PIPELINES_RUN_LOG")
	}
	defer rows.Close()
	active := map[int64]activeRun{}
	for rows.Next() {
		var id int64
		var r activeRun
		var sla sql.NullString
		if err := rows.Scan(&id, &r.ID, &r.Start, &sla, &r.Running); err != nil {
			return nil, nil, readError(err, "AUD_PIPELINES_RUN_LOG")
		}
		r.SLAStatus = sla.String
		active[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, nil, readError(err, "AUD_PIPELINES_RUN_LOG")
	}
	queued := map[int64]int{}
	rows, err = q.QueryContext(ctx, `SELECT PIPELINE_ID, COUNT(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = $1 GROUP BY PIPELINE_ID`,
		string(records.RunQueued))
	if err != nil {
		return nil, nil, readError(err, "AUD_PIPELINES_RUN_LOG")
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, nil, readError(err, "AUD_PIPELINES_RUN_LOG")
		}
		queued[id] = n
	}
	return active, queued, rows.Err()
}

// recentRuns returns the newest n runs of each pipeline, newest first, by
// pipeline id: one query of a bounded read per pipeline.
func recentRuns(ctx context.Context, q engine.Querier, pipelineIDs []int64, n int) (map[int64][]records.Run, error) {
	out := map[int64][]records.Run{}
	if len(pipelineIDs) == 0 {
		return out, nil
	}
	parts := make([]string, len(pipelineIDs))
	args := make([]any, len(pipelineIDs))
	for i, id := range pipelineIDs {
		parts[i] = fmt.Sprintf("SELECT * FROM (SELECT %s%sWHERE r.PIPELINE_ID = $%d ORDER BY r.PIPELINE_RUN_ID DESC LIMIT %d) recent%d",
			records.RunColumns, records.RunsFrom, i+1, n, i)
		args[i] = id
	}
	runs, err := records.QueryRuns(ctx, q, strings.Join(parts, " UNION ALL "), args...)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		out[r.PipelineID] = append(out[r.PipelineID], r)
	}
	return out, nil
}

// pipelineRuns returns the pipeline's newest n runs, newest first.
func pipelineRuns(ctx context.Context, q engine.Querier, pipelineID int64, n int) ([]records.Run, error) {
	return records.QueryRuns(ctx, q, "SELECT "+records.RunColumns+records.RunsFrom+
		"WHERE r.PIPELINE_ID = $1 ORDER BY r.PIPELINE_RUN_ID DESC LIMIT $2", pipelineID, n)
}

// taskRunsOf returns what the grid shows of the task runs of the runs
// (their status, start, end and attempt count), by run id and task id: one
// read of the task run log alone.
func taskRunsOf(ctx context.Context, q engine.Querier, runs []records.Run) (map[int64]map[int64]records.TaskRun, error) {
	out := map[int64]map[int64]records.TaskRun{}
	if len(runs) == 0 {
		return out, nil
	}
	marks := make([]string, len(runs))
	args := make([]any, len(runs))
	for i, r := range runs {
		marks[i] = fmt.Sprintf("$%d", i+1)
		args[i] = r.ID
		out[r.ID] = map[int64]records.TaskRun{}
	}
	rows, err := q.QueryContext(ctx, `SELECT PIPELINE_RUN_ID, TASK_ID, STATUS, START_DATE, END_DATE, ATTEMPT_COUNT FROM AUD_TASK_RUN_LOG
		WHERE PIPELINE_RUN_ID IN (`+strings.Join(marks, ", ")+")", args...)
	if err != nil {
		return nil, readError(err, "AUD_TASK_RUN_LOG")
	}
	defer rows.Close()
	for rows.Next() {
		var t records.TaskRun
		if err := rows.Scan(&t.PipelineRunID, &t.TaskID, &t.Status, &t.Start, &t.End, &t.AttemptCount); err != nil {
			return nil, readError(err, "AUD_TASK_RUN_LOG")
		}
		out[t.PipelineRunID][t.TaskID] = t
	}
	return out, rows.Err()
}

// runAttempts returns every attempt under the run, in the order they were
// queued.
func runAttempts(ctx context.Context, q engine.Querier, runID int64) ([]records.Attempt, error) {
	rows, err := q.QueryContext(ctx, "SELECT "+records.AttemptColumns+` FROM AUD_TASK_ATTEMPTS
		WHERE TASK_RUN_ID IN (SELECT TASK_RUN_ID FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1) ORDER BY ATTEMPT_ID`, runID)
	if err != nil {
		return nil, readError(err, "AUD_TASK_ATTEMPTS")
	}
	defer rows.Close()
	var out []records.Attempt
	for rows.Next() {
		a, err := records.ScanAttempt(rows)
		if err != nil {
			return nil, readError(err, "AUD_TASK_ATTEMPTS")
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// gateDecision is one AUD_GATE_DECISIONS row of a run.
type gateDecision struct {
	DecidedAt records.Time
	Result    string
	Reason    string
	// Task is the task whose gate decided; "" for the pipeline's.
	Task string
}

// gateDecisions returns the gate decisions made for the run, in order.
func gateDecisions(ctx context.Context, q engine.Querier, runID int64) ([]gateDecision, error) {
	rows, err := q.QueryContext(ctx, `SELECT d.DECIDED_AT, d.RESULT, d.REASON, t.TASK_CODE
		FROM AUD_GATE_DECISIONS d
		LEFT JOIN AUD_TASK_ATTEMPTS a ON a.ATTEMPT_ID = d.ATTEMPT_ID
		LEFT JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
		LEFT JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
		WHERE d.PIPELINE_RUN_ID = $1 ORDER BY d.DECISION_ID`, runID)
	if err != nil {
		return nil, readError(err, "AUD_GATE_DECISIONS")
	}
	defer rows.Close()
	var out []gateDecision
	for rows.Next() {
		var d gateDecision
		var task sql.NullString
		if err := rows.Scan(&d.DecidedAt, &d.Result, &d.Reason, &task); err != nil {
			return nil, readError(err, "AUD_GATE_DECISIONS")
		}
		d.Task = task.String
		out = append(out, d)
	}
	return out, rows.Err()
}

// overseer is the AUD_OVERSEERS row of the server that runs.
type overseer struct {
	ID                   int64
	Host, Version        string
	PID                  int64
	Started, HeartbeatAt records.Time
}

// liveOverseer returns the newest overseer that has not stopped; ok is
// false when none has.
func liveOverseer(ctx context.Context, q engine.Querier) (o overseer, ok bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT OVERSEER_ID, HOST, PID, VERSION, STARTED_AT, HEARTBEAT_AT FROM AUD_OVERSEERS
		WHERE STOPPED_AT IS NULL ORDER BY OVERSEER_ID DESC LIMIT 1`).Scan(&o.ID, &o.Host, &o.PID, &o.Version, &o.Started, &o.HeartbeatAt)
	if engine.IsNoRows(err) {
		return o, false, nil
	}
	if err != nil {
		return o, false, readError(err, "AUD_OVERSEERS")
	}
	return o, true, nil
}

// workingOwners returns the owner of every attempt that holds a worker
// (CLAIMED or RUNNING).
func workingOwners(ctx context.Context, q engine.Querier) ([]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT COALESCE(OWNER_ID, '') FROM AUD_TASK_ATTEMPTS WHERE STATUS IN ($1, $2)`,
		string(records.AttemptClaimed), string(records.AttemptRunning))
	if err != nil {
		return nil, readError(err, "AUD_TASK_ATTEMPTS")
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var owner string
		if err := rows.Scan(&owner); err != nil {
			return nil, readError(err, "AUD_TASK_ATTEMPTS")
		}
		out = append(out, owner)
	}
	return out, rows.Err()
}

// queuedRuns returns the oldest QUEUED runs, up to limit.
func queuedRuns(ctx context.Context, q engine.Querier, limit int) ([]records.Run, error) {
	return records.QueryRuns(ctx, q, "SELECT "+records.RunColumns+records.RunsFrom+
		"WHERE r.STATUS = $1 ORDER BY r.PIPELINE_RUN_ID LIMIT $2", string(records.RunQueued), limit)
}

// gateWait is a gate of an open run waiting for its upstreams.
type gateWait struct {
	RunID        int64
	Pipeline     string
	Task         string
	FirstCheckAt records.Time
	NextCheckAt  records.Time
	Looks        int
	WaitUntil    records.Time
}

// gateWaits returns the gate waits of the runs not ended, oldest first.
func gateWaits(ctx context.Context, q engine.Querier) ([]gateWait, error) {
	rows, err := q.QueryContext(ctx, `SELECT w.PIPELINE_RUN_ID, p.PIPELINE_CODE, t.TASK_CODE, w.FIRST_CHECK_AT, w.NEXT_CHECK_AT,
			w.LOOKS, w.WAIT_UNTIL
		FROM AUD_GATE_WAITS w
		JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = w.PIPELINE_RUN_ID
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID
		LEFT JOIN CFG_TASKS t ON t.TASK_ID = w.TASK_ID
		WHERE r.STATUS IN ($1, $2) ORDER BY w.FIRST_CHECK_AT`, string(records.RunQueued), string(records.RunInProgress))
	if err != nil {
		return nil, readError(err, "AUD_GATE_WAITS")
	}
	defer rows.Close()
	var out []gateWait
	for rows.Next() {
		var w gateWait
		var task sql.NullString
		if err := rows.Scan(&w.RunID, &w.Pipeline, &task, &w.FirstCheckAt, &w.NextCheckAt, &w.Looks, &w.WaitUntil); err != nil {
			return nil, readError(err, "AUD_GATE_WAITS")
		}
		w.Task = task.String
		out = append(out, w)
	}
	return out, rows.Err()
}

// failure is an attempt that ended in error.
type failure struct {
	AttemptID int64
	RunID     int64
	Pipeline  string
	Task      string
	Status    string
	Error     string
	EndedAt   records.Time
}

// lastFailures returns the newest attempts that ended FAILED, TIMED_OUT or
// LOST, up to limit.
func lastFailures(ctx context.Context, q engine.Querier, limit int) ([]failure, error) {
	rows, err := q.QueryContext(ctx, `SELECT a.ATTEMPT_ID, tr.PIPELINE_RUN_ID, p.PIPELINE_CODE, t.TASK_CODE, a.STATUS,
			COALESCE(a.ERROR_MESSAGE, ''), a.ENDED_AT
		FROM AUD_TASK_ATTEMPTS a
		JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
		JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID
		WHERE a.STATUS IN ($1, $2, $3) ORDER BY a.ATTEMPT_ID DESC LIMIT $4`,
		string(records.AttemptFailed), string(records.AttemptTimedOut), string(records.AttemptLost), limit)
	if err != nil {
		return nil, readError(err, "AUD_TASK_ATTEMPTS")
	}
	defer rows.Close()
	var out []failure
	for rows.Next() {
		var f failure
		if err := rows.Scan(&f.AttemptID, &f.RunID, &f.Pipeline, &f.Task, &f.Status, &f.Error, &f.EndedAt); err != nil {
			return nil, readError(err, "AUD_TASK_ATTEMPTS")
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// likePattern is a LIKE pattern matching text that holds s, in any letter
// case (compared with LOWER), with LIKE's own characters escaped by \.
func likePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

// taskHit is an active task a search found.
type taskHit struct{ Pipeline, Task string }

// searchTasks returns the active tasks whose code holds s, up to limit.
func searchTasks(ctx context.Context, q engine.Querier, s string, limit int) ([]taskHit, error) {
	rows, err := q.QueryContext(ctx, `SELECT p.PIPELINE_CODE, t.TASK_CODE FROM CFG_TASKS t
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y'
		WHERE t.ACTIVE_FLAG = 'Y' AND LOWER(t.TASK_CODE) LIKE $1 ESCAPE '\'
		ORDER BY p.PIPELINE_CODE, t.TASK_CODE LIMIT $2`, likePattern(s), limit)
	if err != nil {
		return nil, readError(err, "CFG_TASKS")
	}
	defer rows.Close()
	var out []taskHit
	for rows.Next() {
		var h taskHit
		if err := rows.Scan(&h.Pipeline, &h.Task); err != nil {
			return nil, readError(err, "CFG_TASKS")
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// searchRuns returns the run with the id, then the newest runs whose
// RUN_KEY holds s, up to limit.
func searchRuns(ctx context.Context, q engine.Querier, s string, id int64, limit int) ([]records.Run, error) {
	return records.QueryRuns(ctx, q, "SELECT "+records.RunColumns+records.RunsFrom+
		`WHERE r.PIPELINE_RUN_ID = $3 OR LOWER(r.RUN_KEY) LIKE $1 ESCAPE '\'
		ORDER BY CASE WHEN r.PIPELINE_RUN_ID = $3 THEN 0 ELSE 1 END, r.PIPELINE_RUN_ID DESC LIMIT $2`, likePattern(s), limit, id)
}
