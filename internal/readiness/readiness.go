// Package readiness is the one rule that decides whether a task may start
// under a run: from its dependencies' types, its run condition and how its
// upstream tasks stand, it says start, wait, never (with the reasons), or let
// the gate of its dependencies on other pipelines decide. It is pure: the run
// engine, the single-task commands, reruns and `status` adapt their own view
// of the upstreams to it, and the gates of other pipelines judge each edge by
// the same Satisfies.
package readiness

import (
	"fmt"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Satisfies reports whether an upstream that ended with the status (and
// wrote rows or not) satisfies a dependency of the type: SUCCESS needs
// SUCCESS, FAILURE needs FAILED, ALWAYS any ending (SUCCESS, FAILED, SKIPPED
// or CANCELLED), HAS_DATA SUCCESS with rows written. The status is a task
// run's or, for a dependency on a pipeline, a run's: they share these words.
// An unknown type is a graph error (exit 5).
func Satisfies[S ~string](depType string, status S, hasData bool) (bool, error) {
	st := records.TaskRunStatus(status)
	switch depType {
	case pipeline.Success:
		return st == records.TaskSuccess, nil
	case pipeline.Failure:
		return st == records.TaskFailed, nil
	case pipeline.Always:
		switch st {
		case records.TaskSuccess, records.TaskFailed, records.TaskSkipped, records.TaskCancelled:
			return true, nil
		}
		return false, nil
	case pipeline.HasData:
		return st == records.TaskSuccess && hasData, nil
	}
	return false, exit.Errorf(exit.Graph, "unknown dependency type %q: use SUCCESS, FAILURE, ALWAYS or HAS_DATA", depType)
}

// satisfies is Satisfies for a type graph validation has checked: an unknown
// type satisfies nothing.
func satisfies(depType string, u Upstream) bool {
	ok, err := Satisfies(depType, u.Status, u.HasData)
	return ok && err == nil
}

// Upstream is how an upstream task of a dependency stands under the run.
type Upstream struct {
	// Status is its task run's status; "" while it has none.
	Status records.TaskRunStatus
	// HasData reports whether it wrote rows (records.TaskRun.HasData).
	HasData bool
}

// Of is the Upstream of a task run; a task without one (ok false) has not
// started.
func Of(t records.TaskRun, ok bool) Upstream {
	if !ok {
		return Upstream{}
	}
	return Upstream{Status: t.Status, HasData: t.HasData()}
}

// Failures says how an upstream that ended FAILED or CANCELLED counts, since
// it may still run again under the run.
type Failures int

const (
	// FailuresPending waits for it: a retry could still change how it
	// ends (the run engine while anything else can start; `status` asking
	// what a retry would unblock).
	FailuresPending Failures = iota
	// FailuresFinal takes it as it ended: nothing else can start.
	FailuresFinal
	// FailuresAsTheyStand counts it where its status satisfies the
	// dependency, and waits for it to run again where it does not (a
	// single task run by hand, a rerun's downstream tasks).
	FailuresAsTheyStand
)

// Question is what is asked of a task.
type Question struct {
	Task *pipeline.Task
	// Upstream says how the upstream task of a dependency on the task's own
	// pipeline stands.
	Upstream func(d *pipeline.Dependency) Upstream
	Failures Failures
	// Backfill judges the dependencies on other pipelines here, as a
	// backfill's run does (see backfillCross), instead of by their gate.
	Backfill bool
	// OwnOnly judges the dependencies on the task's own pipeline only, its
	// run condition capped at their number.
	OwnOnly bool
}

// Decision is what the rule decided.
type Decision int

// The decisions.
const (
	// Wait: not enough is satisfied yet, but it may be.
	Wait Decision = iota
	// Start: the run condition is met.
	Start
	// Never: the run condition can never be met under the run.
	Never
	// Gate: every upstream of the task's own pipeline has ended and the
	// dependencies on other pipelines decide: their gate must find GateNeed
	// of them satisfied.
	Gate
)

// Verdict is the decision and why.
type Verdict struct {
	Decision Decision
	// Unmet says, for Never, why each unmet dependency is unmet for good.
	Unmet []string
	// Waiting says, for Wait, what is not met yet.
	Waiting []string
	// GateNeed is, for Gate, how many dependencies on other pipelines must
	// be satisfied.
	GateNeed int
}

// Decide applies the rule. Each dependency on the task's own pipeline is
// satisfied, unmet for good, or open, by its upstream: one that has not
// ended is open; one that ended SUCCESS or SKIPPED satisfies it or never
// will; one that ended FAILED or CANCELLED counts as q.Failures says. The run
// condition (ALL, ANY or N of all the task's dependencies) is met when
// enough are satisfied, can never be met when too few are left that could
// be, and otherwise waits while an own upstream is open. Once none is, the
// dependencies on other pipelines decide: by their gate, or under a backfill
// here.
func Decide(q Question) Verdict {
	need := q.Task.Required()
	sat := 0
	var open, unmet []string
	var cross []*pipeline.Dependency
	own := 0
	for _, d := range q.Task.Deps {
		if d.CrossPipeline {
			cross = append(cross, d)
			continue
		}
		own++
		u := q.Upstream(d)
		switch u.Status {
		case "", records.TaskInProgress:
			open = append(open, fmt.Sprintf("%s (%s) has not ended", d.Label(), d.Type))
			continue
		case records.TaskSuccess, records.TaskSkipped:
		default:
			switch {
			case q.Failures == FailuresPending:
				open = append(open, fmt.Sprintf("%s (%s) ended %s and may run again", d.Label(), d.Type, u.Status))
				continue
			case q.Failures == FailuresAsTheyStand && !satisfies(d.Type, u):
				open = append(open, fmt.Sprintf("%s (%s) ended %s and may run again", d.Label(), d.Type, u.Status))
				continue
			}
		}
		if satisfies(d.Type, u) {
			sat++
		} else {
			unmet = append(unmet, "upstream "+unmetText(d, u))
		}
	}
	if q.OwnOnly {
		need, cross = min(need, own), nil
	}
	switch {
	case sat >= need:
		return Verdict{Decision: Start}
	case sat+len(open)+len(cross) < need:
		return Verdict{Decision: Never, Unmet: unmet}
	case len(open) > 0:
		return Verdict{Decision: Wait, Waiting: open}
	case q.Backfill:
		met, reasons := backfillCross(cross)
		if sat+met >= need {
			return Verdict{Decision: Start}
		}
		return Verdict{Decision: Never, Unmet: append(unmet, reasons...)}
	}
	return Verdict{Decision: Gate, GateNeed: need - sat}
}

// Reason joins the verdict's reasons: what is unmet for good, or what is not
// met yet.
func (v Verdict) Reason() string {
	if v.Decision == Never {
		return strings.Join(v.Unmet, "; ")
	}
	return strings.Join(v.Waiting, "; ")
}

// unmetText says why an ended upstream does not satisfy the dependency.
func unmetText(d *pipeline.Dependency, u Upstream) string {
	if d.Type == pipeline.HasData && u.Status == records.TaskSuccess {
		return fmt.Sprintf("%s ended SUCCESS with no rows written, which does not satisfy a HAS_DATA dependency", d.Label())
	}
	return fmt.Sprintf("%s ended %s, which does not satisfy a %s dependency", d.Label(), u.Status, d.Type)
}

// backfillCross judges a task's dependencies on other pipelines under a
// backfill's run, which checks none of them: a backfill replays history as
// if its upstreams had delivered, so SUCCESS, HAS_DATA and ALWAYS
// dependencies count as met; a FAILURE dependency does not, since nothing
// says an upstream failed. Nothing is decided or consumed.
func backfillCross(deps []*pipeline.Dependency) (met int, unmet []string) {
	for _, d := range deps {
		if d.Type == pipeline.Failure {
			unmet = append(unmet, fmt.Sprintf("upstream task %s (%s) is not evaluated in a backfill, so it is not met", d.Label(), d.Type))
			continue
		}
		met++
	}
	return met, unmet
}

// Unwatched returns the tasks of g that ended SKIPPED only because a
// FAILURE dependency was not met: a watcher whose upstream did not fail had
// nothing to watch, and a task skipped because such a watcher was skipped
// had nothing to do either. Neither is an error of the run, as the alerts'
// outcome counts it. upstream says how each task stands under the run. A
// task with a dependency on another pipeline's task is never one: that
// dependency's gate may have been the reason.
func Unwatched(g *pipeline.Graph, upstream func(taskID int64) Upstream) map[int64]bool {
	out := map[int64]bool{}
	for _, wave := range g.Waves() {
		for _, t := range wave {
			if upstream(t.ID).Status != records.TaskSkipped {
				continue
			}
			unwatched, otherwise := false, false
			for _, d := range t.Deps {
				u := upstream(d.UpstreamTaskID)
				switch {
				case d.CrossPipeline:
					otherwise = true
				case satisfies(d.Type, u):
				case out[d.UpstreamTaskID],
					d.Type == pipeline.Failure && (u.Status == records.TaskSuccess || u.Status == records.TaskSkipped):
					unwatched = true
				default:
					otherwise = true
				}
			}
			if unwatched && !otherwise {
				out[t.ID] = true
			}
		}
	}
	return out
}
