package gate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/readiness"
)

// G09: the truth table of the dependency types.
func TestSatisfiesTruthTable(t *testing.T) {
	t.Parallel()
	statuses := []string{"SUCCESS", "FAILED", "SKIPPED", "CANCELLED"}
	want := map[string][]bool{
		pipeline.Success: {true, false, false, false},
		pipeline.Failure: {false, true, false, false},
		pipeline.Always:  {true, true, true, true},
		pipeline.HasData: {true, false, false, false},
	}
	for typ, row := range want {
		for i, status := range statuses {
			got, err := readiness.Satisfies(typ, status, true)
			if err != nil || got != row[i] {
				t.Errorf("%s dependency, upstream %s with rows: %v, %v; want %v", typ, status, got, err, row[i])
			}
		}
	}
	if ok, _ := readiness.Satisfies(pipeline.HasData, "SUCCESS", false); ok {
		t.Error("HAS_DATA is satisfied by a SUCCESS that wrote no rows")
	}
	if ok, _ := readiness.Satisfies(pipeline.Success, "SUCCESS", false); !ok {
		t.Error("SUCCESS needs no rows")
	}
	_, err := readiness.Satisfies("SOMETIMES", "SUCCESS", true)
	if !exit.Is(err, exit.Graph) || !strings.Contains(err.Error(), `"SOMETIMES"`) {
		t.Fatalf("unknown type: %v; want a graph error naming it", err)
	}
	dep := gate.Dependency{UpstreamPipeline: "UP", Type: "SOMETIMES"}
	if _, err := gate.Judge(dep, nil, nil); !exit.Is(err, exit.Graph) {
		t.Fatalf("judging an unknown type with no upstream run: %v; want a graph error", err)
	}
}

// G09, G11: the reasons and freshness against the last consumption.
func TestJudgeReasonsAndFreshness(t *testing.T) {
	t.Parallel()
	success := func(run int64, revision int) *gate.Output {
		return &gate.Output{PipelineRunID: run, Status: "SUCCESS", Revision: revision, HasData: true}
	}
	consumed := func(run int64, revision int) *gate.Consumed {
		return &gate.Consumed{PipelineRunID: run, Revision: revision}
	}
	dep := func(typ string, repairs bool) gate.Dependency {
		return gate.Dependency{ID: 1, UpstreamPipelineID: 9, UpstreamPipeline: "UP", Type: typ, ConsumeRepairs: repairs}
	}
	cases := []struct {
		name string
		dep  gate.Dependency
		out  *gate.Output
		last *gate.Consumed
		ok   bool
		why  string
	}{
		{"no finished run", dep(pipeline.Success, true), nil, nil, false, "has no finished run"},
		{"satisfied", dep(pipeline.Success, true), success(5, 1), nil, true, "last finished run 5 ended SUCCESS"},
		{"satisfied repair", dep(pipeline.Success, true), success(5, 2), consumed(5, 1), true,
			"last finished run 5 ended SUCCESS (revision 2)"},
		{"wrong status", dep(pipeline.Success, true), &gate.Output{PipelineRunID: 41, Status: "FAILED", Revision: 1}, nil, false,
			"last finished run 41 ended FAILED, which does not satisfy a SUCCESS dependency"},
		{"no rows", dep(pipeline.HasData, true), &gate.Output{PipelineRunID: 6, Status: "SUCCESS", Revision: 1}, nil, false,
			"last finished run 6 ended SUCCESS with no rows written, which does not satisfy a HAS_DATA dependency"},
		{"success is not a failure", dep(pipeline.Failure, true), success(6, 1), nil, false,
			"last finished run 6 ended SUCCESS, which does not satisfy a FAILURE dependency"},
		{"already consumed", dep(pipeline.Success, true), success(5, 1), consumed(5, 1), false,
			"has no run since run 5, which was already consumed"},
		{"older than consumed", dep(pipeline.Success, true), success(4, 1), consumed(5, 1), false,
			"has no run since run 5, which was already consumed"},
		{"newer run", dep(pipeline.Success, false), success(6, 1), consumed(5, 3), true, "last finished run 6 ended SUCCESS"},
		{"repair without CONSUME_REPAIRS", dep(pipeline.Success, false), success(5, 2), consumed(5, 1), false,
			"has no run since run 5, which was already consumed: its revision 2 is newer than the consumed revision 1, " +
				"but CONSUME_REPAIRS='N' accepts only a newer run; set CONSUME_REPAIRS to 'Y' to accept repairs"},
		{"consumed failure", dep(pipeline.Success, true), &gate.Output{PipelineRunID: 5, Status: "FAILED", Revision: 1},
			consumed(5, 1), false, "has no run since run 5, which was already consumed"},
		{"task row", gate.Dependency{OnTask: true, UpstreamPipeline: "UP", UpstreamTask: "publish", Type: pipeline.Success},
			&gate.Output{PipelineRunID: 7, TaskRunID: 41, Status: "SKIPPED", Revision: 1}, nil, false,
			"last finished run 7 (task_run_id=41) ended SKIPPED, which does not satisfy a SUCCESS dependency"},
		{"task row consumed", gate.Dependency{OnTask: true, UpstreamPipeline: "UP", UpstreamTask: "publish", Type: pipeline.Success},
			&gate.Output{PipelineRunID: 7, TaskRunID: 41, Status: "SUCCESS", Revision: 1},
			&gate.Consumed{PipelineRunID: 7, TaskRunID: 41, Revision: 1}, false,
			"has no run since run 7 (task_run_id=41), which was already consumed"},
	}
	for _, c := range cases {
		v, err := gate.Judge(c.dep, c.out, c.last)
		if err != nil || v.Satisfied != c.ok || v.Why != c.why {
			t.Errorf("%s: %+v, %v\nwant satisfied=%v %q", c.name, v, err, c.ok, c.why)
		}
	}
	if got := dep(pipeline.HasData, true).Label(); got != "upstream pipeline UP (HAS_DATA)" {
		t.Errorf("label %q", got)
	}
}

// G10: the pacing of looks at a running upstream.
func TestNextLook(t *testing.T) {
	t.Parallel()
	s := time.Second
	cases := []struct {
		name                      string
		average, elapsed, remains time.Duration
		looks                     int
		want                      time.Duration
	}{
		{"first look at 70 %", 100 * s, 30 * s, time.Hour, 0, 40 * s},
		{"second look at 80 %", 100 * s, 30 * s, time.Hour, 1, 50 * s},
		{"the default length", gate.DefaultRunLength, 0, time.Hour, 0, 210 * s},
		{"then 30 s later", gate.DefaultRunLength, 210 * s, time.Hour, 1, 30 * s},
		{"overdue: the minimum interval", 100 * s, 500 * s, time.Hour, 3, gate.MinLookInterval},
		{"never past the deadline", 100 * s, 0, 20 * s, 0, 20 * s},
		{"the deadline within the minimum", 100 * s, 500 * s, 300 * time.Millisecond, 0, 300 * time.Millisecond},
		{"no time left", 100 * s, 0, 0, 0, 0},
	}
	for _, c := range cases {
		if got := gate.NextLook(c.average, c.elapsed, c.looks, c.remains); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
