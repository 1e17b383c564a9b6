package email

import (
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Outcome is what an alert says of its run ($$status).
type Outcome string

// The outcomes, in the order EMAIL_ON_STATUS lists them in messages.
const (
	Failed              Outcome = Outcome(records.RunFailed)
	CompletedWithErrors Outcome = "COMPLETED_WITH_ERRORS"
	Success             Outcome = Outcome(records.RunSuccess)
)

// Outcomes are every outcome.
var Outcomes = []Outcome{Failed, CompletedWithErrors, Success}

// outcomeList names the outcomes, separated by |.
func outcomeList() string {
	names := make([]string, len(Outcomes))
	for i, o := range Outcomes {
		names[i] = string(o)
	}
	return strings.Join(names, "|")
}

// Decide returns the outcome of a run from its tasks and their task runs
// (by task id), alerts left out: FAILED when a task failed or was
// cancelled; COMPLETED_WITH_ERRORS when none did but one was skipped,
// retried, succeeded with a message or has not finished (or not started),
// or when breached (the SLA, under Enforce_sla); else SUCCESS.
func Decide(tasks []*pipeline.Task, rows map[int64]records.TaskRun, breached bool) Outcome {
	out := Success
	if breached {
		out = CompletedWithErrors
	}
	for _, t := range tasks {
		if t.Handler == pipeline.HandlerEmailAlert {
			continue
		}
		r, ok := rows[t.ID]
		switch {
		case ok && (r.Status == records.TaskFailed || r.Status == records.TaskCancelled):
			return Failed
		case !ok, r.Status != records.TaskSuccess, r.AttemptCount > 1, r.ErrorMessage.String != "":
			out = CompletedWithErrors
		}
	}
	return out
}

// tokens returns the replacer of the $$ tokens of subjects and bodies:
// $$status, $$pipeline_code, $$task_code, $$error_message (the errors of the
// failed tasks watched through FAILURE dependencies, one line each),
// $$pipeline_run_id (the run) and $$pipeline_id (the pipeline).
func (s *summary) tokens(t *handler.Task) *strings.Replacer {
	return strings.NewReplacer(
		"$$status", string(s.outcome),
		"$$pipeline_code", t.PipelineCode,
		"$$task_code", t.TaskCode,
		"$$error_message", strings.Join(s.watched, "\n"),
		"$$pipeline_run_id", strconv.FormatInt(t.PipelineRunID, 10),
		"$$pipeline_id", strconv.FormatInt(t.PipelineID, 10),
	)
}
