// Package alert is what an alert says, whichever way it goes out: the
// outcome of a run as an EMAIL_ALERT task sees it (Summarise), or a run
// that passed its SLA (Breached). Either is a Message: its subject, the
// author's body, the facts of the run, its tasks with their errors, a
// digest of other pipelines' latest runs, and the console's page of the
// run. The email's plain text and HTML (Text, HTML) are rendered here, and
// the chat and webhook formats of internal/notify render the same parts
// (Heading, Facts, Errors), so every rule of what an alert says is written
// once.
package alert

import (
	"fmt"
	"strconv"
	"time"

	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Event is what an alert is about.
type Event string

// The events.
const (
	// RunAlert is an EMAIL_ALERT task's summary of its run.
	RunAlert Event = "run_alert"
	// SLABreach is a run that passed its pipeline's SLA.
	SLABreach Event = "sla_breach"
)

// Pipeline is the pipeline an alert is about.
type Pipeline struct {
	ID                      int64
	Code, Name, Description string
}

// TaskLine is one task of the run, as the alert lists it.
type TaskLine struct {
	Code, Handler string
	// Status is the task run's status, NotRun without one.
	Status string
	// Attempts is 0 without a task run.
	Attempts int
	// Rows is ROWS_WRITTEN, nil when NULL.
	Rows *int64
	// Error is the task run's error when the task counts for the outcome
	// (an alert's own failure, or why a watcher had nothing to watch, is
	// none of the run's).
	Error string
}

// NotRun is the status shown for a task without a task run under the run.
const NotRun = "NOT-RUN"

// Digest is the latest run of each pipeline an alert asked for.
type Digest struct {
	Runs []records.Run
	// Missing are the codes without a latest run, each with the reason.
	Missing []string
}

// Breach is when a run passed its SLA.
type Breach struct {
	Hours     float64
	Start, At time.Time
	// Live is set when the run was still running then.
	Live bool
}

// Message is one alert, whichever way it goes out.
type Message struct {
	Event Event
	// Subject is one line of at most mail.MaxSubject characters.
	Subject string
	// Body is the author's text, its tokens replaced; "" for none.
	Body string
	// Outcome is a run alert's outcome; "" for an SLA breach.
	Outcome  Outcome
	Pipeline Pipeline
	Run      records.Run
	// AlertTask is the code of the task sending a run alert.
	AlertTask string
	// Tasks are the run's tasks in wave order, the alert itself left out
	// (run alerts).
	Tasks []TaskLine
	// Digest is nil when the alert asked for none.
	Digest *Digest
	// Breach is set for an SLA breach.
	Breach *Breach
	// Link is the console's page of the run, "" when no console is known.
	Link string
}

// Breached is the message of a run that passed its pipeline's SLA, linking
// to link ("" for none).
func Breached(p pipeline.Pipeline, run records.Run, b Breach, link string) *Message {
	return &Message{
		Event:    SLABreach,
		Subject:  mail.Subject(fmt.Sprintf("SLA breached: %s run %d (%g h)", p.Code, run.ID, b.Hours)),
		Pipeline: pipelineOf(p),
		Run:      run,
		Breach:   &b,
		Link:     link,
	}
}

// pipelineOf is what an alert names of a pipeline.
func pipelineOf(p pipeline.Pipeline) Pipeline {
	return Pipeline{ID: p.ID, Code: p.Code, Name: p.Name, Description: p.Description}
}

// Heading is the line that says what the alert is about: "Pipeline SALES,
// run 42 (manual:…, run date 2026-03-01, started …): FAILED", or "Pipeline
// SALES passed its SLA of 1.5 hour(s): pipeline_run_id=42 is still
// running."
func (m *Message) Heading() string {
	if m.Event == SLABreach {
		when := "ended"
		if m.Breach.Live {
			when = "is still running"
		}
		return fmt.Sprintf("Pipeline %s passed its SLA of %g hour(s): pipeline_run_id=%d %s.", m.Pipeline.Code, m.Breach.Hours, m.Run.ID, when)
	}
	h := fmt.Sprintf("Pipeline %s, run %d (%s", m.Pipeline.Code, m.Run.ID, m.Run.Key)
	if m.Run.RunDate != "" {
		h += ", run date " + m.Run.RunDate
	}
	if m.Run.Start.Valid {
		h += ", started " + stamp(m.Run.Start)
	}
	return h + "): " + string(m.Outcome)
}

// Fact is one labelled value of the run.
type Fact struct{ Label, Value string }

// Facts are the run's facts, in order: of an SLA breach the pipeline, the
// run, when it started, when it breached and its SLA; of a run alert the
// outcome, the pipeline, the run, its run date and when it started.
func (m *Message) Facts() []Fact {
	pipe := m.Pipeline.Code
	if m.Pipeline.Name != "" {
		pipe += " (" + m.Pipeline.Name + ")"
	}
	run := fmt.Sprintf("%d (run key %s)", m.Run.ID, m.Run.Key)
	if m.Event == SLABreach {
		b := m.Breach
		return []Fact{{"Pipeline", pipe}, {"Run", run}, {"Started", b.Start.UTC().Format(time.RFC3339)},
			{"Breached", b.At.UTC().Format(time.RFC3339) + ", after " + b.At.Sub(b.Start).Round(time.Second).String()},
			{"SLA", strconv.FormatFloat(b.Hours, 'g', -1, 64) + " hour(s)"}}
	}
	facts := []Fact{{"Outcome", string(m.Outcome)}, {"Pipeline", pipe}, {"Run", run}}
	if m.Run.RunDate != "" {
		facts = append(facts, Fact{"Run date", m.Run.RunDate})
	}
	if m.Run.Start.Valid {
		facts = append(facts, Fact{"Started", stamp(m.Run.Start)})
	}
	return facts
}

// Errors are the tasks with an error to list.
func (m *Message) Errors() []TaskLine {
	var out []TaskLine
	for _, t := range m.Tasks {
		if t.Error != "" {
			out = append(out, t)
		}
	}
	return out
}

// RunPage is the console's page of a run under its address base ("" gives
// ""): base/runs/{id}.
func RunPage(base string, runID int64) string {
	if base == "" {
		return ""
	}
	return base + "/runs/" + strconv.FormatInt(runID, 10)
}

// stamp writes a time as UTC to the second, "" when NULL.
func stamp(t records.Time) string {
	if !t.Valid {
		return ""
	}
	return t.Time.UTC().Format(time.DateTime) + " UTC"
}
