package inspect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// The states Explain gives a task without a row under the run: the
// readiness rule's decision while the run has not ended.
const (
	StateReady   = "READY"
	StateWaiting = "WAITING"
	StateBlocked = "BLOCKED"
	StateGated   = "GATED"
	// StateNotRun is a task without a row under a run that has ended: it
	// will not run under it.
	StateNotRun = "NOT RUN"
)

// How Explain says a dependency stands.
const (
	MetYes  = "yes"
	MetNo   = "no"
	MetOpen = "open"
)

// Explain says why the task is in its state under the selected run (see
// ViewRun) and what happens next. It asks the readiness rule what the
// dispatcher asks of a task without a row, with the upstreams as they stand
// (a failed one may still run again; one the run will skip counts as
// SKIPPED), and judges each dependency on another pipeline as its gate
// would, by that pipeline's latest finished run; so explain, status and
// the dispatcher never disagree. Times not yet come are compared with now.
func Explain(ctx context.Context, q engine.Querier, code, taskCode string, sel RunSelector, now time.Time) (report.Explain, error) {
	g, err := pipeline.Load(ctx, q, code)
	if err != nil {
		return report.Explain{}, err
	}
	if err := g.Validate(); err != nil {
		return report.Explain{}, err
	}
	t, err := g.FindTask(taskCode)
	if err != nil {
		return report.Explain{}, err
	}
	run, chosen, err := ViewRun(ctx, q, g.Pipeline, sel)
	if err != nil {
		return report.Explain{}, err
	}
	ran, err := records.TaskRunsOf(ctx, q, run.ID)
	if err != nil {
		return report.Explain{}, err
	}
	pauses, err := openPauses(ctx, q)
	if err != nil {
		return report.Explain{}, err
	}
	out := report.Explain{Schema: report.SchemaExplain, PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code, TaskID: t.ID,
		TaskCode: t.Code, Run: run.Run, Paused: pauses[g.Pipeline.ID], RunCondition: t.RunCondition, RequiredCount: t.Required(),
		Dependencies: []report.ExplainDependency{}, GateWaits: []report.ExplainGateWait{}, Chosen: chosen}
	row, hasRow := ran[t.ID]
	if hasRow {
		id := row.TaskRunID
		out.TaskRunID = &id
		attempts, err := records.AttemptsOf(ctx, q, row.TaskRunID)
		if err != nil {
			return report.Explain{}, err
		}
		if len(attempts) > 0 {
			a := attemptDoc(attempts[len(attempts)-1])
			out.Attempt = &a
		}
		if a := row.Active; a != nil && a.Status == records.AttemptQueued && a.NotBefore.Valid && a.NotBefore.Time.After(now) {
			out.RetryAt = &report.Instant{Time: a.NotBefore.Time.UTC()}
		}
	}
	skipped := cannotRun(g, ran, readiness.FailuresPending)
	upstream := func(d *pipeline.Dependency) readiness.Upstream {
		if u := g.TaskByID(d.UpstreamTaskID); u != nil && skipped[u] {
			return readiness.Upstream{Status: records.TaskSkipped}
		}
		tr, ok := ran[d.UpstreamTaskID]
		return readiness.Of(tr, ok)
	}
	crossDeps := gate.TaskGate(run.ID, t, 0, gate.Enforce, 0).Deps
	for _, d := range t.Deps {
		var dep report.ExplainDependency
		if d.CrossPipeline {
			i := slices.IndexFunc(crossDeps, func(c gate.Dependency) bool { return c.ID == d.ID })
			if dep, err = crossDependency(ctx, q, crossDeps[i]); err != nil {
				return report.Explain{}, err
			}
		} else {
			u := g.TaskByID(d.UpstreamTaskID)
			dep = ownDependency(d, upstream(d), u != nil && skipped[u] && !hasRowOf(ran, u))
		}
		out.Dependencies = append(out.Dependencies, dep)
	}
	v := readiness.Decide(readiness.Question{Task: t, Upstream: upstream, Failures: readiness.FailuresPending})
	out.State = state(row, hasRow, v)
	if !hasRow && run.Ended() {
		out.State = StateNotRun
	}
	for _, w := range []struct {
		gate   string
		taskID int64
	}{{"pipeline", 0}, {"task", t.ID}} {
		b, err := gate.LoadBudget(ctx, q, run.ID, w.taskID)
		if err != nil {
			return report.Explain{}, err
		}
		if b != nil {
			gw := report.ExplainGateWait{Gate: w.gate, FirstCheckAt: report.Instant{Time: b.FirstCheckAt}, Looks: b.Looks,
				WaitUntil: report.Instant{Time: b.WaitUntil}}
			if !b.NextCheckAt.IsZero() {
				gw.NextCheckAt = &report.Instant{Time: b.NextCheckAt}
			}
			out.GateWaits = append(out.GateWaits, gw)
		}
	}
	// What the dispatcher does once nothing else can start and failures
	// are final.
	final := readiness.Decide(readiness.Question{Task: t, Upstream: upstream, Failures: readiness.FailuresFinal})
	blockedByFailures := slices.Contains(BlockedByFailures(g, ran), t.Code)
	out.Next = next(out, row, hasRow, v, final.Decision == readiness.Start, blockedByFailures)
	return out, nil
}

// hasRowOf reports whether the task has a row under the run.
func hasRowOf(ran map[int64]records.TaskRun, t *pipeline.Task) bool {
	_, ok := ran[t.ID]
	return ok
}

// state is the task's status under the run, or the readiness rule's word
// for a task without a row under a run that has not ended.
func state(row records.TaskRun, hasRow bool, v readiness.Verdict) string {
	if hasRow {
		return string(row.Status)
	}
	switch v.Decision {
	case readiness.Start:
		return StateReady
	case readiness.Never:
		return StateBlocked
	case readiness.Gate:
		return StateGated
	}
	return StateWaiting
}

// needs says what a dependency type needs of its upstream.
func needs(depType string) string {
	switch depType {
	case pipeline.Failure:
		return "FAILURE needs it to end FAILED"
	case pipeline.Always:
		return "ALWAYS needs it to end, however it ends"
	case pipeline.HasData:
		return "HAS_DATA needs it to end SUCCESS with rows written"
	}
	return "SUCCESS needs it to end SUCCESS"
}

// ownDependency says how a dependency on a task of the same pipeline
// stands, as the readiness rule counts it; willSkip is set when the upstream
// has no row and the run will skip it.
func ownDependency(d *pipeline.Dependency, u readiness.Upstream, willSkip bool) report.ExplainDependency {
	dep := report.ExplainDependency{Upstream: d.UpstreamTask, Type: d.Type}
	switch {
	case willSkip:
		dep.Met, dep.Reason = MetNo, "the run will skip it: its own dependencies can never be met; "+needs(d.Type)
		if ok, _ := readiness.Satisfies(d.Type, records.TaskSkipped, false); ok {
			dep.Met, dep.Reason = MetYes, "the run will skip it, and ALWAYS takes any ending"
		}
		return dep
	case u.Status == "":
		dep.Met, dep.Reason = MetOpen, "not run yet; "+needs(d.Type)
		return dep
	}
	status := string(u.Status)
	dep.Status = &status
	ok, _ := readiness.Satisfies(d.Type, u.Status, u.HasData)
	rows := ""
	if u.Status == records.TaskSuccess && !u.HasData {
		rows = " without rows"
	}
	switch {
	case ok:
		dep.Met, dep.Reason = MetYes, "it ended "+status+rows
	case u.Status == records.TaskInProgress:
		dep.Met, dep.Reason = MetOpen, "still running; "+needs(d.Type)
	case u.Status == records.TaskFailed || u.Status == records.TaskCancelled:
		dep.Met, dep.Reason = MetOpen, "it ended "+status+" but may run again under the run (a retry, a rerun or a mark); "+needs(d.Type)
	default:
		dep.Met, dep.Reason = MetNo, "it ended "+status+rows+"; "+needs(d.Type)
	}
	return dep
}

// crossDependency judges a dependency on a task of another pipeline as the
// task's gate does: by that pipeline's latest finished run and what the
// dependency last consumed.
func crossDependency(ctx context.Context, q engine.Querier, d gate.Dependency) (report.ExplainDependency, error) {
	dep := report.ExplainDependency{Upstream: d.UpstreamPipeline + "." + d.UpstreamTask, Type: d.Type, CrossPipeline: true}
	output, err := gate.LatestOutput(ctx, q, d)
	if err != nil {
		return dep, err
	}
	last, err := gate.LastConsumed(ctx, q, d)
	if err != nil {
		return dep, err
	}
	v, err := gate.Judge(d, output, last)
	if err != nil {
		return dep, err
	}
	if output != nil {
		dep.Status = &output.Status
	}
	dep.Met, dep.Reason = MetNo, v.Why
	if v.Satisfied {
		dep.Met = MetYes
	}
	return dep, nil
}

// next says what happens next to the task.
// startsOnceFinal is set when the task waits only for failed upstreams that
// may run again, and starts with them as they ended once nothing else can
// start.
func next(e report.Explain, row records.TaskRun, hasRow bool, v readiness.Verdict, startsOnceFinal, blockedByFailures bool) string {
	runEnded := records.RunStatus(e.Run.Status).Ended()
	switch {
	case runEnded && hasRow:
		return "nothing: the run has ended; rerun the task (run --rerun) or mark it to change its outcome"
	case runEnded:
		return "nothing: the run ended without running it"
	case e.Paused != nil:
		return "nothing starts while the pipeline is paused: resume it first"
	case hasRow && row.Active != nil:
		a := row.Active
		switch {
		case e.RetryAt != nil:
			return fmt.Sprintf("attempt %d (a retry) starts at %s", a.Number, e.RetryAt)
		case a.Status == records.AttemptQueued:
			return fmt.Sprintf("attempt %d is queued: the run's supervisor starts it", a.Number)
		}
		return fmt.Sprintf("attempt %d is %s: wait for it to end", a.Number, strings.ToLower(string(a.Status)))
	case hasRow && row.Status == records.TaskSuccess:
		return "nothing: it succeeded, and its dependents may run"
	case hasRow && row.Status == records.TaskSkipped:
		return "nothing: the run skipped it"
	case hasRow && row.Status == records.TaskInProgress:
		return "the run's next supervisor (etl-craft server, or run --pipeline_code) takes it up"
	case hasRow:
		return "nothing more unless it is rerun (run --rerun) or marked; dependents that need it to succeed wait for that"
	}
	switch v.Decision {
	case readiness.Start:
		return "the run's supervisor starts it at its next look"
	case readiness.Never:
		return "the run records it SKIPPED: " + v.Reason()
	case readiness.Gate:
		return fmt.Sprintf("its gate must find %d of its dependencies on other pipelines satisfied; then it starts", v.GateNeed)
	}
	switch {
	case blockedByFailures:
		return "it runs only if a failed upstream runs again and that meets its run condition; once nothing else can start, the run skips it"
	case startsOnceFinal:
		return "it waits while a failed upstream may still run again; once nothing else can start, it starts with the upstreams as they ended"
	}
	return "it waits, then the readiness rule decides again: " + v.Reason()
}
