package run

// Operator control of runs: mark, stand-in runs, skipped runs and cancel.
// Each records its intervention in AUD_RUN_INTERVENTIONS, with the reason and
// the context's actor, in the transaction that makes the change. In remote
// mode the orchestrator is the only source of truth for runs, so every one
// of them is refused (exit 10).

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/freetext"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// Change is what an operator command changed.
type Change struct {
	PipelineID   int64
	PipelineCode string
	RunID        int64
	// TaskCode is the task changed; "" for a change of the run itself.
	TaskCode string
	// Message says what was done, in one line; it names request fields as
	// {field} (see exit.RequestFields).
	Message string
}

// CheckReason refuses a blank reason for an intervention, or one that is
// not free text (freetext.Check), with a usage error (exit 2): every
// intervention is recorded with why it was made. what names the
// intervention: an operation such as "cancel", or a request field such as
// "{skip}" (see exit.Fieldf).
func CheckReason(what, reason string) error {
	if strings.TrimSpace(reason) == "" {
		return exit.Fieldf(exit.Usage, "%s needs a {reason}: it is recorded with the change", what)
	}
	return checkText("reason", reason)
}

// checkText refuses the request field's value unless it is free text
// (freetext.Check), with a usage error (exit 2) naming the field.
func checkText(field, value string) error {
	if err := freetext.Check(value); err != nil {
		return exit.Fieldf(exit.Usage, "{%s} %v", field, err)
	}
	return nil
}

// checkIntervention refuses an operator intervention in remote mode (exit
// 10) and one without a reason (exit 2).
func (s *Supervisor) checkIntervention(what, reason string) error {
	if s.opts.Remote {
		return exit.Fieldf(exit.RunRefused,
			"%s is only available in local mode: in remote mode the orchestrator is the only source of truth for runs, "+
				"so mark, clear, stop or pause the run in the orchestrator instead", what)
	}
	return CheckReason(what, reason)
}

// MarkRequest is an operator's mark of a task, or of a run.
type MarkRequest struct {
	PipelineCode string
	// TaskCode names the task to mark; "" marks the run itself.
	TaskCode string
	// RunID or RunKey select the run (see inspect.SelectRun).
	RunID  int64
	RunKey string
	// Status is SUCCESS, FAILED or SKIPPED.
	Status string
	Reason string
	// Rows, with SUCCESS, is the task's row count, which a HAS_DATA
	// dependency reads.
	Rows *int64
	// Stale reconciles the task first, so that an attempt whose process is
	// gone (its lease expired) can be marked.
	Stale bool
}

// checkMark refuses a mark that cannot be made, before anything is read.
func (s *Supervisor) checkMark(what string, req MarkRequest) error {
	if err := s.checkIntervention(what, req.Reason); err != nil {
		return err
	}
	switch {
	case req.Status != TaskSuccess && req.Status != TaskFailed && req.Status != TaskSkipped:
		return exit.Errorf(exit.Usage, "cannot mark %q: choose SUCCESS, FAILED or SKIPPED", req.Status)
	case req.Rows != nil && *req.Rows < 0:
		return exit.Fieldf(exit.Usage, "{rows} is a row count, so it cannot be negative (got %d)", *req.Rows)
	case req.Rows != nil && req.Status != TaskSuccess:
		return exit.Fieldf(exit.Usage, "{rows} goes with SUCCESS: it is the row count a HAS_DATA dependency reads")
	case req.Stale && req.TaskCode == "":
		return usage("{stale} marks a task whose process is gone: name it with {task}")
	}
	return nil
}

// Mark sets the status of a task under the selected run, or of the run
// itself without TaskCode (see MarkRun).
//
// Marking a task writes its summary (ERROR_MESSAGE "marked <STATUS> by <who>:
// <reason>", and the stated row count) and never rewrites an attempt; a
// queued retry of it is cancelled. A running task is refused (exit 10):
// with Stale, the task is reconciled first, and a task whose lease is still
// live is refused all the same. When the run had ended it is reopened
// (REOPEN, a pending repair) and the tasks the engine skipped without
// running them are reset (RESET), so that the next run of the pipeline goes
// on from there; a skipped task another pipeline already judged or consumed
// is kept. A task marked FAILED gets another attempt then; one marked
// SUCCESS lets its dependents run.
func (s *Supervisor) Mark(ctx context.Context, req MarkRequest) (Change, error) {
	if req.TaskCode == "" {
		return s.MarkRun(ctx, req)
	}
	if err := s.checkMark("mark", req); err != nil {
		return Change{}, err
	}
	g, err := pipeline.Load(ctx, s.opts.DB, req.PipelineCode)
	if err != nil {
		return Change{}, err
	}
	t, err := g.FindTask(req.TaskCode)
	if err != nil {
		return Change{}, err
	}
	if req.Stale {
		if _, err := s.Reconcile(ctx, Scope{PipelineCode: g.Pipeline.Code, TaskCode: t.Code}); err != nil {
			return Change{}, err
		}
	}
	r, err := selectRun(ctx, s.opts.DB, g.Pipeline, Request{RunID: req.RunID, RunKey: req.RunKey})
	if err != nil {
		return Change{}, err
	}
	c := Change{PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code, RunID: r.ID, TaskCode: t.Code}
	who := actor.From(ctx).Name
	what := fmt.Sprintf("%s.%s", g.Pipeline.Code, t.Code)
	err = inTx(ctx, s.opts.DB, func(tx *wtx) error {
		rows, err := loadTaskRuns(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		row, hasRow := rows[t.ID]
		before := ""
		if hasRow {
			before = row.up.Status
		}
		switch {
		case (row.attemptStatus == AttemptClaimed || row.attemptStatus == AttemptRunning) && req.Stale:
			return exit.Fieldf(exit.RunRefused,
				"%s is running under pipeline_run_id=%d and its lease is live (held by %s): its process may still be running; "+
					"{stale} marks a task only once its lease has expired and reconcile has fenced it", what, r.ID, row.owner)
		case row.attemptStatus == AttemptClaimed || row.attemptStatus == AttemptRunning:
			return exit.Fieldf(exit.RunRefused,
				"%s is running under pipeline_run_id=%d (held by %s); wait for it to end, or cancel the run with etl-craft cancel; "+
					"if the process running it is gone, pass {stale} to record its outcome", what, r.ID, row.owner)
		case before == req.Status && req.Rows == nil:
			return exit.Errorf(exit.Usage, "%s is already %s under pipeline_run_id=%d; nothing to mark", what, before, r.ID)
		case r.Status == RunQueued:
			return exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d is QUEUED and has not been admitted yet; cancel it instead (etl-craft cancel {pipeline} %s {run_id} %d {reason} …)",
				g.Pipeline.Code, r.ID, g.Pipeline.Code, r.ID)
		case r.Status == RunCancelled:
			return exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d was CANCELLED and is never reopened; start a new run with etl-craft run {pipeline} %s, or record one with {new_run}",
				g.Pipeline.Code, r.ID, g.Pipeline.Code)
		}
		now := time.Now()
		message := fmt.Sprintf("marked %s by %s: %s", req.Status, who, req.Reason)
		cas := before
		if row.attemptStatus == AttemptQueued {
			if err := stopAttempt(ctx, tx, row.queued.AttemptID, AttemptCancelled, "superseded: "+message, now); err != nil {
				return err
			}
			cas = TaskCancelled
		}
		if _, err := markTaskRun(ctx, tx, r.ID, t.ID, taskMark{From: cas, To: req.Status, Message: message, Rows: req.Rows}, now); err != nil {
			return err
		}
		if err := recordIntervention(ctx, tx, intervention{PipelineID: g.Pipeline.ID, RunID: r.ID, TaskID: t.ID, Action: "MARK",
			From: before, To: req.Status, TargetCount: req.Rows, PreviousMessage: row.message, Reason: req.Reason}); err != nil {
			return err
		}
		was := before
		if was == "" {
			was = "not run"
		}
		c.Message = fmt.Sprintf("%s: marked %s under pipeline_run_id=%d (was %s)", what, req.Status, r.ID, was)
		if runEnded(r.Status) {
			if err := s.reopenForOperator(ctx, tx, g, r, "", req.Reason); err != nil {
				return err
			}
			c.Message += fmt.Sprintf("; the run was %s and is %s again", r.Status, RunInProgress)
		}
		reset, kept, err := resetSkipped(ctx, tx, g.Pipeline.ID, r.ID, req.Reason, nil)
		if err != nil {
			return err
		}
		if len(reset) > 0 {
			c.Message += "; reset to run again: " + strings.Join(reset, ", ")
		}
		if len(kept) > 0 {
			c.Message += "; kept SKIPPED: " + strings.Join(kept, ", ")
		}
		if runEnded(r.Status) || len(reset) > 0 {
			c.Message += fmt.Sprintf(". etl-craft run {pipeline} %s resumes it", g.Pipeline.Code)
		}
		return nil
	})
	if err != nil {
		return Change{}, err
	}
	s.log.Warn(c.Message, "by", who, "reason", req.Reason)
	return c, nil
}

// reopenForOperator reopens an ended run for an operator's change, in the
// operator's transaction, held by owner ("": by no one). A run that cannot
// be reopened because another run of the pipeline is in progress is a
// run-state error (exit 9).
func (s *Supervisor) reopenForOperator(ctx context.Context, tx *wtx, g *pipeline.Graph, r runRow, owner, reason string) error {
	err := reopenRun(ctx, tx, r.ID, 0, owner, reason)
	if exit.Is(err, exit.StaleTransition) {
		return exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d cannot be reopened: %v", g.Pipeline.Code, r.ID, err)
	}
	return err
}

// skippedRow is a task the engine recorded SKIPPED under a run without
// running it.
type skippedRow struct {
	taskRunID int64
	taskID    int64
	code      string
	message   string
	// consumedBy and judgedBy are the first downstream run that consumed
	// the row, or whose gate selected it; 0 for none.
	consumedBy, judgedBy int64
}

// resetSkipped resets the tasks the engine skipped under the run without
// running them (not marked by an operator, no attempt), so that the resumed
// run decides about them again, and records a RESET for each. only, when
// set, limits it to those task ids. A skipped row that another pipeline's run
// consumed, or whose gate selected it, is part of that run's history and is
// kept. It returns the tasks reset and, one each, those kept.
func resetSkipped(ctx context.Context, tx *wtx, pipelineID, runID int64, reason string, only map[int64]bool) (reset, kept []string, err error) {
	rows, err := tx.QueryContext(ctx, `SELECT t.TASK_RUN_ID, t.TASK_ID, c.TASK_CODE, t.ERROR_MESSAGE,
			(SELECT min(x.PIPELINE_RUN_ID) FROM AUD_DEPENDENCY_CONSUMPTION x WHERE x.CONSUMED_TASK_RUN_ID = t.TASK_RUN_ID),
			(SELECT min(d.PIPELINE_RUN_ID) FROM AUD_GATE_DECISIONS d WHERE d.SELECTED_TASK_RUN_ID = t.TASK_RUN_ID)
		FROM AUD_TASK_RUN_LOG t JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID
		WHERE t.PIPELINE_RUN_ID = $1 AND t.STATUS = $2
		AND NOT EXISTS (SELECT 1 FROM AUD_TASK_ATTEMPTS a WHERE a.TASK_RUN_ID = t.TASK_RUN_ID)
		AND NOT EXISTS (SELECT 1 FROM AUD_RUN_INTERVENTIONS i WHERE i.PIPELINE_RUN_ID = t.PIPELINE_RUN_ID
			AND i.TASK_ID = t.TASK_ID AND i.ACTION IN ('MARK', 'NEW_RUN'))
		ORDER BY c.TASK_CODE`, runID, TaskSkipped)
	if err != nil {
		return nil, nil, exit.Wrap(exit.EngineDB, err, "could not read the skipped tasks of pipeline_run_id=%d", runID)
	}
	var found []skippedRow
	for rows.Next() {
		var r skippedRow
		var msg sql.NullString
		var consumed, judged sql.NullInt64
		if err := rows.Scan(&r.taskRunID, &r.taskID, &r.code, &msg, &consumed, &judged); err != nil {
			rows.Close()
			return nil, nil, exit.Wrap(exit.EngineDB, err, "could not read the skipped tasks of pipeline_run_id=%d", runID)
		}
		r.message, r.consumedBy, r.judgedBy = msg.String, consumed.Int64, judged.Int64
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, exit.Wrap(exit.EngineDB, err, "could not read the skipped tasks of pipeline_run_id=%d", runID)
	}
	for _, r := range found {
		switch {
		case only != nil && !only[r.taskID]:
			continue
		case r.consumedBy != 0:
			kept = append(kept, fmt.Sprintf("%s (consumed by pipeline_run_id=%d)", r.code, r.consumedBy))
			continue
		case r.judgedBy != 0:
			kept = append(kept, fmt.Sprintf("%s (judged by the gate of pipeline_run_id=%d)", r.code, r.judgedBy))
			continue
		}
		if err := recordIntervention(ctx, tx, intervention{PipelineID: pipelineID, RunID: runID, TaskID: r.taskID, Action: "RESET",
			From: TaskSkipped, PreviousMessage: r.message, Reason: reason}); err != nil {
			return nil, nil, err
		}
		if err := resetTaskRun(ctx, tx, r.taskRunID); err != nil {
			return nil, nil, err
		}
		reset = append(reset, r.code)
	}
	return reset, kept, nil
}

// MarkRun sets the selected run's status (SUCCESS, FAILED or SKIPPED),
// ending it now if it had not ended, as the operator's ending: downstream
// gates judge the marked status. Its tasks keep their statuses (a queued
// retry is cancelled) and it consumes nothing. A run with a task running is
// refused (exit 10). A SUCCESS mark of a pending repair publishes it.
func (s *Supervisor) MarkRun(ctx context.Context, req MarkRequest) (Change, error) {
	if err := s.checkMark("mark", req); err != nil {
		return Change{}, err
	}
	if req.Rows != nil {
		return Change{}, usage("{rows} states a task's row count: name the task with {task}")
	}
	g, r, err := s.operatorRun(ctx, req.PipelineCode, req.RunID, req.RunKey)
	if err != nil {
		return Change{}, err
	}
	c := Change{PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code, RunID: r.ID}
	who := actor.From(ctx).Name
	err = inTx(ctx, s.opts.DB, func(tx *wtx) error {
		rows, err := loadTaskRuns(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		var running []string
		for _, id := range sortedTasks(g, rows) {
			if st := rows[id].attemptStatus; st == AttemptClaimed || st == AttemptRunning {
				running = append(running, taskCode(g, id))
			}
		}
		switch {
		case len(running) > 0:
			return exit.Errorf(exit.RunRefused, "pipeline %s: tasks of pipeline_run_id=%d are running (%s); cancel the run with etl-craft cancel, or wait",
				g.Pipeline.Code, r.ID, strings.Join(running, ", "))
		case r.Status == req.Status:
			return exit.Errorf(exit.Usage, "pipeline %s: pipeline_run_id=%d is already %s; nothing to mark", g.Pipeline.Code, r.ID, r.Status)
		}
		now := time.Now()
		for _, id := range sortedTasks(g, rows) {
			if rows[id].attemptStatus == AttemptQueued {
				msg := fmt.Sprintf("superseded: the run was marked %s by %s: %s", req.Status, who, req.Reason)
				if err := stopAttempt(ctx, tx, rows[id].queued.AttemptID, AttemptCancelled, msg, now); err != nil {
					return err
				}
			}
		}
		if err := markRun(ctx, tx, r.ID, r.Status, r.Owner, req.Status, now); err != nil {
			return err
		}
		return recordIntervention(ctx, tx, intervention{PipelineID: g.Pipeline.ID, RunID: r.ID, Action: "MARK",
			From: r.Status, To: req.Status, Reason: req.Reason})
	})
	if err != nil {
		return Change{}, err
	}
	c.Message = fmt.Sprintf("%s: pipeline_run_id=%d marked %s (was %s)", g.Pipeline.Code, r.ID, req.Status, r.Status)
	s.log.Warn(c.Message, "by", who, "reason", req.Reason)
	return c, nil
}

// operatorRun loads the pipeline and selects the run an operator command
// concerns (see selectRun).
func (s *Supervisor) operatorRun(ctx context.Context, code string, runID int64, runKey string) (*pipeline.Graph, runRow, error) {
	g, err := pipeline.Load(ctx, s.opts.DB, code)
	if err != nil {
		return nil, runRow{}, err
	}
	r, err := selectRun(ctx, s.opts.DB, g.Pipeline, Request{RunID: runID, RunKey: runKey})
	return g, r, err
}

// sortedTasks returns the ids of the task runs, in task-code order.
func sortedTasks(g *pipeline.Graph, rows map[int64]taskRunRow) []int64 {
	ids := make([]int64, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return taskCode(g, ids[i]) < taskCode(g, ids[j]) })
	return ids
}

// taskCode returns a task's code, or its id for a task no longer active.
func taskCode(g *pipeline.Graph, id int64) string {
	if t := g.TaskByID(id); t != nil {
		return t.Code
	}
	return fmt.Sprintf("task_id=%d", id)
}

// StandIn records a finished stand-in run of the pipeline (mark --new-run):
// a run that did not really run, TRIGGER_KIND STAND_IN with a
// stand-in:<uuid> key, which downstream gates judge like any run, so that a
// dependency on a pipeline that cannot run here can be met. With TaskCode the
// task gets the status and the stated row count too. It is refused while
// the pipeline has a run in progress.
func (s *Supervisor) StandIn(ctx context.Context, req MarkRequest) (Change, error) {
	if err := s.checkMark("mark {new_run}", req); err != nil {
		return Change{}, err
	}
	if req.Rows != nil && req.TaskCode == "" {
		return Change{}, usage("{rows} states a task's row count: name the task with {task}")
	}
	g, err := pipeline.Load(ctx, s.opts.DB, req.PipelineCode)
	if err != nil {
		return Change{}, err
	}
	var t *pipeline.Task
	if req.TaskCode != "" {
		if t, err = g.FindTask(req.TaskCode); err != nil {
			return Change{}, err
		}
	}
	who := actor.From(ctx).Name
	c := Change{PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code}
	nr := newRun{PipelineID: g.Pipeline.ID, Key: "stand-in:" + newUUID(), TriggerKind: TriggerStandIn,
		RunDate: time.Now().In(s.opts.Location).Format(time.DateOnly)}
	err = s.newEndedRun(ctx, g, nr, req.Status, "a stand-in run", func(tx *wtx, id int64, now time.Time) error {
		c.RunID = id
		var taskID int64
		if t != nil {
			taskID = t.ID
			msg := fmt.Sprintf("stand-in run recorded %s by %s: %s", req.Status, who, req.Reason)
			if _, err := markTaskRun(ctx, tx, id, t.ID, taskMark{To: req.Status, Message: msg, Rows: req.Rows}, now); err != nil {
				return err
			}
		}
		return recordIntervention(ctx, tx, intervention{PipelineID: g.Pipeline.ID, RunID: id, TaskID: taskID, Action: "NEW_RUN",
			To: req.Status, TargetCount: req.Rows, Reason: req.Reason})
	})
	if err != nil {
		return Change{}, err
	}
	what := g.Pipeline.Code
	if t != nil {
		what += "." + t.Code
		c.TaskCode = t.Code
	}
	c.Message = fmt.Sprintf("%s: stand-in run pipeline_run_id=%d recorded %s", what, c.RunID, req.Status)
	if req.Rows != nil {
		c.Message += fmt.Sprintf(" with %d row(s)", *req.Rows)
	}
	s.log.Warn(c.Message, "by", who, "reason", req.Reason)
	return c, nil
}

// Skip records a run of the pipeline SKIPPED on purpose, running nothing (run
// --skip): downstream SUCCESS dependencies on it are not met, ALWAYS ones
// are. The run is MANUAL, with the request's key and date when given. It is
// refused while the pipeline has a run in progress.
func (s *Supervisor) Skip(ctx context.Context, req Request) (Outcome, error) {
	if err := s.checkIntervention("{skip}", req.Reason); err != nil {
		return Outcome{}, err
	}
	g, err := pipeline.Load(ctx, s.opts.DB, req.PipelineCode)
	if err != nil {
		return Outcome{}, err
	}
	nr := newRun{PipelineID: g.Pipeline.ID, Key: req.RunKey, TriggerKind: TriggerManual, RunDate: req.RunDate}
	if nr.Key == "" {
		nr.Key = "manual:" + newUUID()
	}
	if nr.RunDate == "" {
		nr.RunDate = time.Now().In(s.opts.Location).Format(time.DateOnly)
	}
	out := Outcome{PipelineCode: g.Pipeline.Code, Status: RunSkipped, Detail: "skipped on purpose: " + req.Reason}
	err = s.newEndedRun(ctx, g, nr, RunSkipped, "a skipped run", func(tx *wtx, id int64, _ time.Time) error {
		out.RunID = id
		return recordIntervention(ctx, tx, intervention{PipelineID: g.Pipeline.ID, RunID: id, Action: "NEW_RUN",
			To: RunSkipped, Reason: req.Reason})
	})
	if err != nil {
		return Outcome{}, err
	}
	s.log.Warn("run skipped on purpose", "pipeline", g.Pipeline.Code, "pipeline_run_id", out.RunID, "reason", req.Reason)
	return out, nil
}

// newEndedRun records, in one transaction, a run that ended as soon as it
// was recorded, and what record adds to it; what names the run in the
// refusal while the pipeline has a run in progress.
func (s *Supervisor) newEndedRun(ctx context.Context, g *pipeline.Graph, nr newRun, status, what string,
	record func(tx *wtx, id int64, now time.Time) error) error {
	return inTx(ctx, s.opts.DB, func(tx *wtx) error {
		active, err := activeRunOf(ctx, tx, g.Pipeline.ID)
		if err != nil {
			return exit.Wrap(exit.EngineDB, err, "could not read %s", runsTable)
		}
		if active != 0 {
			return exit.Errorf(exit.RunState, "pipeline %s has a run in progress (pipeline_run_id=%d); mark that run ({run_id} %d), or cancel it (etl-craft cancel {pipeline} %s {run_id} %d {reason} …), before recording %s",
				g.Pipeline.Code, active, active, g.Pipeline.Code, active, what)
		}
		now := time.Now()
		id, err := insertEndedRun(ctx, tx, nr, status, now)
		if err != nil {
			return err
		}
		return record(tx, id, now)
	})
}

// CancelRequest is an operator's cancel of a run.
type CancelRequest struct {
	PipelineCode string
	// RunID or RunKey select the run; without either, the pipeline's one run
	// that has not ended.
	RunID  int64
	RunKey string
	Reason string
}

// Cancel ends the selected QUEUED or IN-PROGRESS run CANCELLED, with its
// active attempts: each is recorded CANCELLED (its task too) with a CANCEL
// intervention, then the run with its own. The process running each attempt
// notices within CancelPoll and stops it; a supervising process starts
// nothing more. A cancelled run is never reopened.
func (s *Supervisor) Cancel(ctx context.Context, req CancelRequest) (Change, error) {
	if err := s.checkIntervention("cancel", req.Reason); err != nil {
		return Change{}, err
	}
	g, r, err := s.operatorRun(ctx, req.PipelineCode, req.RunID, req.RunKey)
	if err != nil {
		return Change{}, err
	}
	if runEnded(r.Status) {
		return Change{}, exit.Errorf(exit.RunState, "pipeline %s: pipeline_run_id=%d ended %s; only a "+RunQueued+" or "+RunInProgress+" run can be cancelled",
			g.Pipeline.Code, r.ID, r.Status)
	}
	who := actor.From(ctx).Name
	var stopped []string
	err = inTx(ctx, s.opts.DB, func(tx *wtx) error {
		stopped = nil
		if err := lockRun(ctx, tx, r.ID, r.Status, "cancel"); err != nil {
			return err
		}
		rows, err := loadTaskRuns(ctx, tx, r.ID)
		if err != nil {
			return err
		}
		now := time.Now()
		message := fmt.Sprintf("cancelled by %s: %s", who, req.Reason)
		for _, id := range sortedTasks(g, rows) {
			row := rows[id]
			if row.attemptStatus == "" {
				continue
			}
			if err := stopAttempt(ctx, tx, row.queued.AttemptID, AttemptCancelled, message, now); err != nil {
				return err
			}
			if err := recordIntervention(ctx, tx, intervention{PipelineID: g.Pipeline.ID, RunID: r.ID, TaskID: id, Action: "CANCEL",
				From: TaskInProgress, To: TaskCancelled, PreviousMessage: row.message, Reason: req.Reason}); err != nil {
				return err
			}
			stopped = append(stopped, taskCode(g, id))
		}
		if err := cancelRun(ctx, tx, r.ID, r.Status, now); err != nil {
			return err
		}
		return recordIntervention(ctx, tx, intervention{PipelineID: g.Pipeline.ID, RunID: r.ID, Action: "CANCEL",
			From: r.Status, To: RunCancelled, Reason: req.Reason})
	})
	if err != nil {
		return Change{}, err
	}
	c := Change{PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code, RunID: r.ID,
		Message: fmt.Sprintf("%s: pipeline_run_id=%d CANCELLED", g.Pipeline.Code, r.ID)}
	if len(stopped) > 0 {
		c.Message += fmt.Sprintf("; stopping %d running task(s): %s (the process running each stops it within a few seconds)",
			len(stopped), strings.Join(stopped, ", "))
	}
	s.log.Warn(c.Message, "by", who, "reason", req.Reason)
	return c, nil
}
