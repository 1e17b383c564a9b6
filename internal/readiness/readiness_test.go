package readiness_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
	"github.com/etl-craft/etl-craft/internal/records"
)

// edge is how one dependency stands: satisfied, open (may still be), or
// unmet for good.
type edge int

const (
	sat edge = iota
	open
	unmet
)

// outcome is an upstream outcome under the run.
type outcome struct {
	name string
	up   readiness.Upstream
}

var outcomes = []outcome{
	{"not started", readiness.Upstream{}},
	{"running", readiness.Upstream{Status: records.TaskInProgress}},
	{"SUCCESS with rows", readiness.Upstream{Status: records.TaskSuccess, HasData: true}},
	{"SUCCESS without rows", readiness.Upstream{Status: records.TaskSuccess}},
	{"FAILED", readiness.Upstream{Status: records.TaskFailed}},
	{"SKIPPED", readiness.Upstream{Status: records.TaskSkipped}},
	{"CANCELLED", readiness.Upstream{Status: records.TaskCancelled}},
}

// final is the reference's matrix (execution.md 2.6) once every upstream's
// ending is final, in the order of outcomes.
var final = map[string][]edge{
	pipeline.Success: {open, open, sat, sat, unmet, unmet, unmet},
	pipeline.Failure: {open, open, unmet, unmet, sat, unmet, unmet},
	pipeline.Always:  {open, open, sat, sat, sat, sat, sat},
	pipeline.HasData: {open, open, sat, unmet, unmet, unmet, unmet},
}

// expected returns how the edge stands under a way of counting failures: a
// FAILED or CANCELLED upstream waits while failures are pending, and waits
// where it does not satisfy when failures count as they stand.
func expected(depType string, i int, f readiness.Failures) edge {
	e := final[depType][i]
	failure := outcomes[i].up.Status == records.TaskFailed || outcomes[i].up.Status == records.TaskCancelled
	switch {
	case !failure:
		return e
	case f == readiness.FailuresPending:
		return open
	case f == readiness.FailuresAsTheyStand && e == unmet:
		return open
	}
	return e
}

// condition is a run condition with companion dependencies chosen so that
// the dependency under test (on task 1) decides: it needs one more
// satisfied dependency than the companions give, and the companions leave
// no other way.
type condition struct {
	name      string
	cond      string
	count     int
	companion []readiness.Upstream // each on a SUCCESS dependency
}

var conditions = []condition{
	// ALL of 2: the companion is satisfied.
	{"ALL", pipeline.All, 0, []readiness.Upstream{{Status: records.TaskSuccess}}},
	// ANY of 2: the companion is unmet for good.
	{"ANY", pipeline.Any, 0, []readiness.Upstream{{Status: records.TaskSkipped}}},
	// N=2 of 3: one companion satisfied, one unmet for good.
	{"N=2", pipeline.N, 2, []readiness.Upstream{{Status: records.TaskSuccess}, {Status: records.TaskFailed}}},
}

func task(c condition, depType string) (*pipeline.Task, map[int64]readiness.Upstream) {
	t := &pipeline.Task{ID: 100, Code: "t", RunCondition: c.cond, RunConditionCount: c.count,
		Deps: []*pipeline.Dependency{{UpstreamTaskID: 1, UpstreamTask: "up", Type: depType}}}
	ups := map[int64]readiness.Upstream{}
	for i, u := range c.companion {
		id := int64(10 + i)
		t.Deps = append(t.Deps, &pipeline.Dependency{UpstreamTaskID: id, UpstreamTask: fmt.Sprintf("c%d", i), Type: pipeline.Success})
		ups[id] = u
	}
	return t, ups
}

func TestDecideEveryTypeOutcomeAndCondition(t *testing.T) {
	want := map[edge]readiness.Decision{sat: readiness.Start, open: readiness.Wait, unmet: readiness.Never}
	modes := map[readiness.Failures]string{readiness.FailuresPending: "pending", readiness.FailuresFinal: "final",
		readiness.FailuresAsTheyStand: "as they stand"}
	for _, c := range conditions {
		for depType := range final {
			for i, o := range outcomes {
				for f, mode := range modes {
					tk, ups := task(c, depType)
					ups[1] = o.up
					// Companions on FAILED upstreams stay unmet only once
					// failures are final: judge them so in every mode.
					if f != readiness.FailuresFinal {
						for id, u := range ups {
							if id != 1 && u.Status == records.TaskFailed {
								ups[id] = readiness.Upstream{Status: records.TaskSkipped}
							}
						}
					}
					v := readiness.Decide(readiness.Question{Task: tk, Failures: f,
						Upstream: func(d *pipeline.Dependency) readiness.Upstream { return ups[d.UpstreamTaskID] }})
					e := expected(depType, i, f)
					if v.Decision != want[e] {
						t.Errorf("%s, %s dependency on %s, failures %s: decision %d, want %d", c.name, depType, o.name, mode, v.Decision, want[e])
						continue
					}
					switch e {
					case unmet:
						if !strings.Contains(v.Reason(), "upstream up ended "+string(o.up.Status)) {
							t.Errorf("%s, %s on %s: reason %q does not say how up ended", c.name, depType, o.name, v.Reason())
						}
					case open:
						if !strings.Contains(v.Reason(), "up ("+depType+")") {
							t.Errorf("%s, %s on %s: waiting %q does not name up", c.name, depType, o.name, v.Reason())
						}
					}
				}
			}
		}
	}
}

func TestDecideLeavesDependenciesOnOtherPipelinesToTheGate(t *testing.T) {
	tk := &pipeline.Task{RunCondition: pipeline.All, Deps: []*pipeline.Dependency{
		{UpstreamTaskID: 1, UpstreamTask: "up", Type: pipeline.Success},
		{UpstreamTaskID: 2, UpstreamPipeline: "OTHER", UpstreamTask: "x", Type: pipeline.Success, CrossPipeline: true},
		{UpstreamTaskID: 3, UpstreamPipeline: "OTHER", UpstreamTask: "y", Type: pipeline.Failure, CrossPipeline: true},
	}}
	succeeded := func(*pipeline.Dependency) readiness.Upstream { return readiness.Upstream{Status: records.TaskSuccess} }
	v := readiness.Decide(readiness.Question{Task: tk, Upstream: succeeded})
	if v.Decision != readiness.Gate || v.GateNeed != 2 {
		t.Fatalf("own upstream ended: %+v; want the gate to find 2 satisfied", v)
	}
	// A backfill judges them itself: a FAILURE dependency is never met.
	v = readiness.Decide(readiness.Question{Task: tk, Upstream: succeeded, Backfill: true})
	if v.Decision != readiness.Never || !strings.Contains(v.Reason(), "OTHER.y (FAILURE) is not evaluated in a backfill") {
		t.Fatalf("backfill: %+v", v)
	}
	tk.RunCondition, tk.RunConditionCount = pipeline.N, 2
	if v = readiness.Decide(readiness.Question{Task: tk, Upstream: succeeded, Backfill: true}); v.Decision != readiness.Start {
		t.Fatalf("backfill, N=2: %+v; want start", v)
	}
	// While the own upstream runs, the task waits, whatever the gate would say.
	running := func(*pipeline.Dependency) readiness.Upstream {
		return readiness.Upstream{Status: records.TaskInProgress}
	}
	if v = readiness.Decide(readiness.Question{Task: tk, Upstream: running}); v.Decision != readiness.Wait {
		t.Fatalf("own upstream running: %+v; want wait", v)
	}
	// Judged over its own pipeline only, the run condition is capped at the
	// own dependencies.
	tk.RunCondition = pipeline.All
	if v = readiness.Decide(readiness.Question{Task: tk, Upstream: succeeded, OwnOnly: true}); v.Decision != readiness.Start {
		t.Fatalf("own only: %+v; want start", v)
	}
}

func TestSatisfiesRefusesAnUnknownType(t *testing.T) {
	if _, err := readiness.Satisfies("SOMETIMES", records.RunSuccess, true); err == nil || !strings.Contains(err.Error(), `"SOMETIMES"`) {
		t.Fatalf("unknown type: %v", err)
	}
}
