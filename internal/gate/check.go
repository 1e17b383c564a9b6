package gate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Decision is the judgement of one dependency, as AUD_GATE_DECISIONS keeps it.
type Decision struct {
	Dependency Dependency
	Result     Result
	// Reason is the dependency's label and why, such as "upstream pipeline
	// UP (SUCCESS) last finished run 41 ended FAILED, which does not satisfy
	// a SUCCESS dependency".
	Reason string
	// Selected is the upstream output that was judged; nil when the upstream
	// had none or nothing was judged (Dependency_gates off).
	Selected *Output
	// Running is set when the upstream was still running when it was
	// judged: the check had no budget left to wait for it.
	Running bool
	// At is when the dependency was judged.
	At time.Time
}

// Outcome is what one check of a gate found.
type Outcome struct {
	// NextCheckAt, when set, is when to look again: an upstream is still
	// running and the budget allows waiting for it. Nothing was decided.
	NextCheckAt time.Time
	// Decisions holds one decision per judged dependency, in order. A
	// check stops judging once enough are satisfied or, enforced, once
	// enough no longer can be; the rest get no decision.
	Decisions []Decision
	// Satisfied counts the SATISFIED decisions.
	Satisfied int
	// Pass reports whether the run or task may go ahead: enough
	// dependencies were satisfied, or Dependency_gates let them through.
	Pass bool
}

// Waiting reports whether the check must look again at NextCheckAt.
func (o Outcome) Waiting() bool { return !o.NextCheckAt.IsZero() }

// Definitive reports whether the outcome is final: the check is not waiting
// and judged no upstream that was still running. A caller that can come
// back later may treat an outcome that is not definitive as "not yet"
// rather than as a reason to skip.
func (o Outcome) Definitive() bool {
	if o.Waiting() {
		return false
	}
	for _, d := range o.Decisions {
		if d.Running && d.Result != Satisfied {
			return false
		}
	}
	return true
}

// Unmet returns the reasons of the UNSATISFIED decisions.
func (o Outcome) Unmet() []string { return o.reasons(Unsatisfied) }

// Reason says in one line why the gate did not pass: the unmet reasons
// joined with "; ". It is empty when nothing was unsatisfied.
func (o Outcome) Reason() string { return strings.Join(o.Unmet(), "; ") }

func (o Outcome) reasons(r Result) []string {
	var out []string
	for _, d := range o.Decisions {
		if d.Result == r {
			out = append(out, d.Reason)
		}
	}
	return out
}

// Evaluate checks the gate once, at now, in the caller's transaction. It
// never sleeps. While an upstream the check still has to judge is running
// and the budget allows, it records the wait in AUD_GATE_WAITS and returns
// only NextCheckAt: call it again then (a restart resumes the same budget
// from the row). Otherwise it judges the dependencies in order, settles the
// wait row (NEXT_CHECK_AT NULL) and returns the decisions for the caller to
// Record in the transaction that admits or skips the run or task.
//
// The budget spans the whole check: Gate.Wait from the first look that found
// an upstream running, and at most MaxLooks looks. Once it is spent, running
// upstreams are judged by their latest finished output. With policy Off
// nothing is judged or waited for (the zero Policy enforces), and a gate
// that needs nothing judges nothing; both still settle a wait left by an
// earlier check.
func Evaluate(ctx context.Context, tx *engine.Tx, g Gate, now time.Time) (Outcome, error) {
	now = now.UTC()
	if len(g.Deps) == 0 {
		return Outcome{Pass: true}, nil
	}
	saved, err := LoadBudget(ctx, tx, g.RunID, g.TaskID)
	if err != nil {
		return Outcome{}, err
	}
	b := Budget{FirstCheckAt: now, WaitUntil: now.Add(g.Wait)}
	waiting, due := saved != nil && saved.Waiting(), false
	if waiting {
		b = *saved
		if due = !now.Before(saved.NextCheckAt); due {
			b.Looks = min(b.Looks+1, MaxLooks)
		}
	}
	var o Outcome
	switch {
	case g.Needed <= 0:
	case g.Policy == Off:
		for _, d := range g.Deps {
			o.Decisions = append(o.Decisions, Decision{Dependency: d, Result: Bypassed,
				Reason: d.Label() + " was not checked: Dependency_gates is off", At: now})
		}
	default:
		for i, d := range g.Deps {
			if o.Satisfied >= g.Needed || (g.Policy != Warn && o.Satisfied+len(g.Deps)-i < g.Needed) {
				break
			}
			run, err := runningOutput(ctx, tx, d)
			if err != nil {
				return Outcome{}, err
			}
			if run != nil && !b.exhausted(now) {
				if waiting && !due {
					return Outcome{NextCheckAt: b.NextCheckAt}, nil
				}
				average, err := averageLength(ctx, tx, d)
				if err != nil {
					return Outcome{}, err
				}
				b.NextCheckAt = now.Add(NextLook(average, now.Sub(run.Start), b.Looks, b.WaitUntil.Sub(now)))
				return Outcome{NextCheckAt: b.NextCheckAt}, saveBudget(ctx, tx, g.RunID, g.TaskID, b)
			}
			dec, err := decide(ctx, tx, d, run, g.Policy, now)
			if err != nil {
				return Outcome{}, err
			}
			o.Decisions = append(o.Decisions, dec)
			if dec.Result == Satisfied {
				o.Satisfied++
			}
		}
	}
	if waiting {
		b.NextCheckAt = time.Time{}
		if err := saveBudget(ctx, tx, g.RunID, g.TaskID, b); err != nil {
			return Outcome{}, err
		}
	}
	o.Pass = o.Satisfied >= g.Needed || g.Policy == Warn || g.Policy == Off
	return o, nil
}

// decide judges one dependency whose upstream is not waited for (any more):
// run is its output still running, if any. Under Warn an unsatisfied
// dependency is BYPASSED.
func decide(ctx context.Context, q engine.Querier, d Dependency, run *running, policy Policy, now time.Time) (Decision, error) {
	out, err := LatestOutput(ctx, q, d)
	if err != nil {
		return Decision{}, err
	}
	last, err := LastConsumed(ctx, q, d)
	if err != nil {
		return Decision{}, err
	}
	v, err := Judge(d, out, last)
	if err != nil {
		return Decision{}, err
	}
	dec := Decision{Dependency: d, Result: Satisfied, Reason: d.Label() + " " + v.Why, Selected: out, Running: run != nil, At: now}
	if !v.Satisfied {
		dec.Result = Unsatisfied
		if policy == Warn {
			dec.Result = Bypassed
		}
		if run != nil {
			dec.Reason += fmt.Sprintf("; %s is still %s", run.name(), records.RunInProgress)
		}
	}
	return dec, nil
}

// Clock tells the time and sleeps; Await takes one so that tests can replace
// both.
type Clock interface {
	Now() time.Time
	// Sleep waits for d, or returns ctx's error when ctx ends first.
	Sleep(ctx context.Context, d time.Duration) error
}

// WallClock is the real clock.
var WallClock Clock = wallClock{}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Await looks at a gate until it settles, for a process that has nothing
// else to do meanwhile (a single CLI run). look is one check in the caller's
// own transaction: it calls Evaluate and, once the outcome is settled,
// records the decisions and admits or skips in that same transaction. Between
// looks Await sleeps until the NextCheckAt look returned; cancelling ctx
// stops the sleep and returns its error with the last outcome.
func Await(ctx context.Context, clock Clock, look func(ctx context.Context, now time.Time) (Outcome, error)) (Outcome, error) {
	for {
		o, err := look(ctx, clock.Now())
		if err != nil || !o.Waiting() {
			return o, err
		}
		if err := clock.Sleep(ctx, o.NextCheckAt.Sub(clock.Now())); err != nil {
			return o, err
		}
	}
}
