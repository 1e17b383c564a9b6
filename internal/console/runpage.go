package console

import (
	"net/http"
	"strconv"
	"time"

	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// The run page: every task with its status, attempts, duration, rows and
// error; a Gantt chart of the attempts; the run's interventions, gate
// decisions and SLA; and an operator's cancel, rerun and mark. The explain
// page says why one task stands as it does.

// runBody is the run page.
type runBody struct {
	Status   report.Status
	Run      statusView
	Duration string
	// Ended is set once the run ended: it can no longer be cancelled.
	Ended bool
	// SLADue is when the run passes its pipeline's SLA.
	SLADue        time.Time
	Tasks         []taskLine
	Gantt         gantt
	Interventions []report.Intervention
	Decisions     []gateDecision
	// MarkStatuses are the statuses a task may be marked with.
	MarkStatuses []string
}

// taskLine is one task of the run page.
type taskLine struct {
	report.TaskStatus
	State statusView
	// Error is the task's whole error message.
	Error    string
	Attempts []attemptLink
	Explain  string
}

// attemptLink is an attempt as a link to its log.
type attemptLink struct {
	ID     int64
	Number int
	Status statusView
	URL    string
}

// attemptPath is an attempt's log page.
func attemptPath(id int64) string { return "/attempts/" + strconv.FormatInt(id, 10) }

func (c *Console) runPage(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := c.runID(w, r, s)
	if !ok {
		return
	}
	ctx := r.Context()
	now := time.Now()
	run, err := inspect.RunByID(ctx, c.p.DB, id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	st, err := inspect.RunStatus(ctx, c.p.DB, run.PipelineCode, inspect.RunSelector{ID: id}, c.p.Config.Orchestration.Location, now)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	ran, err := records.TaskRunsOf(ctx, c.p.DB, id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	attempts, err := runAttempts(ctx, c.p.DB, id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	body := runBody{Status: st, Run: statusOf(st.Run.Status), Duration: duration(st.DurationSeconds), Ended: run.Ended(),
		MarkStatuses: []string{string(records.TaskSuccess), string(records.TaskFailed), string(records.TaskSkipped)}}
	if st.Pipeline.SLAInHours != nil && st.Run.StartDate != nil {
		body.SLADue = st.Run.StartDate.Add(time.Duration(*st.Pipeline.SLAInHours * float64(time.Hour)))
	}
	taskOfRun := map[int64]string{}
	for _, tr := range ran {
		taskOfRun[tr.TaskRunID] = tr.TaskCode
	}
	byTask := map[string][]attemptLink{}
	var bars []ganttAttempt
	for _, a := range attempts {
		task := taskOfRun[a.TaskRunID]
		link := attemptLink{ID: a.AttemptID, Number: a.AttemptNumber, Status: statusOf(string(a.Status)), URL: attemptPath(a.AttemptID)}
		byTask[task] = append(byTask[task], link)
		bars = append(bars, ganttAttempt{Task: task, Attempt: a, LogURL: link.URL, Duration: duration(between(a.StartedAt, a.EndedAt, now))})
	}
	for _, t := range st.Tasks {
		line := taskLine{TaskStatus: t, State: statusPtr(t.Status), Attempts: byTask[t.TaskCode], Explain: explainPath(id, t.TaskCode)}
		if tr, ok := ran[t.TaskID]; ok && tr.ErrorMessage.Valid {
			line.Error = tr.ErrorMessage.String
		}
		body.Tasks = append(body.Tasks, line)
	}
	body.Gantt = layoutGantt(bars, now)
	if body.Interventions, err = inspect.RunInterventions(ctx, c.p.DB, id); err != nil {
		c.fail(w, r, s, err)
		return
	}
	if body.Decisions, err = gateDecisions(ctx, c.p.DB, id); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, http.StatusOK, "run", "Run "+strconv.FormatInt(id, 10)+" of "+run.PipelineCode, "runs tasks attempts", body)
}

// explainBody is the explain page.
type explainBody struct {
	Explain  report.Explain
	State    statusView
	Attempts []attemptLink
}

func (c *Console) explainPage(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := c.runID(w, r, s)
	if !ok {
		return
	}
	ctx := r.Context()
	run, err := inspect.RunByID(ctx, c.p.DB, id)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	doc, err := inspect.Explain(ctx, c.p.DB, run.PipelineCode, r.PathValue("task"), inspect.RunSelector{ID: id}, time.Now())
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	body := explainBody{Explain: doc, State: statusOf(doc.State)}
	if doc.TaskRunID != nil {
		attempts, err := records.AttemptsOf(ctx, c.p.DB, *doc.TaskRunID)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		for _, a := range attempts {
			body.Attempts = append(body.Attempts, attemptLink{ID: a.AttemptID, Number: a.AttemptNumber, Status: statusOf(string(a.Status)),
				URL: attemptPath(a.AttemptID)})
		}
	}
	c.render(w, r, s, http.StatusOK, "explain", doc.TaskCode+" in run "+strconv.FormatInt(id, 10), "runs tasks attempts", body)
}
