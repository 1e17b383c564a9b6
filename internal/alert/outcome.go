package alert

import (
	"strings"

	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
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

// OutcomeList names the outcomes, separated by |.
func OutcomeList() string {
	names := make([]string, len(Outcomes))
	for i, o := range Outcomes {
		names[i] = string(o)
	}
	return strings.Join(names, "|")
}

// Decide returns the outcome of a run from its pipeline's graph and its
// task runs (by task id), counting only what says how the run went
// (counted): FAILED when a task failed or was cancelled;
// COMPLETED_WITH_ERRORS when none did but one was skipped, retried,
// succeeded with a message or has not finished (or not started), or when
// breached (the SLA, under Enforce_sla); else SUCCESS.
func Decide(g *pipeline.Graph, rows map[int64]records.TaskRun, breached bool) Outcome {
	out := Success
	if breached {
		out = CompletedWithErrors
	}
	counted := counted(g, rows)
	for _, t := range g.Tasks {
		if !counted[t.ID] {
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

// counted returns the tasks whose task runs say how the run went, and
// whose errors an alert lists: neither the alerts themselves (their own
// outcomes are not the run's) nor the tasks skipped only because a FAILURE
// dependency was not met (readiness.Unwatched: a watcher with nothing to
// watch).
func counted(g *pipeline.Graph, rows map[int64]records.TaskRun) map[int64]bool {
	unwatched := readiness.Unwatched(g, func(id int64) readiness.Upstream {
		r, ok := rows[id]
		return readiness.Of(r, ok)
	})
	out := map[int64]bool{}
	for _, t := range g.Tasks {
		out[t.ID] = t.Handler != pipeline.HandlerEmailAlert && !unwatched[t.ID]
	}
	return out
}
