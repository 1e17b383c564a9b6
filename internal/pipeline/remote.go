package pipeline

// The rules of a pipeline an external orchestrator cannot express, shared by
// run --init-only in remote mode, validate and generate-yml.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// RemoteRule is one rule of a pipeline an orchestrator cannot express: where
// it is (PIPE.task, or PIPE for a pipeline dependency) and why, with the
// remedy.
type RemoteRule struct {
	Where  string
	Reason string
}

// String writes the rule as "where: reason".
func (r RemoteRule) String() string { return r.Where + ": " + r.Reason }

// RemoteUnsupported lists the rules of the pipeline an orchestrator cannot
// express, in task order: RUN_CONDITION N (a trigger rule waits for all or
// one of the upstream steps), a HAS_DATA dependency (an orchestrator sees
// whether a step succeeded, not whether it wrote rows), a task whose
// dependencies have different types (one trigger rule covers every upstream
// step; a dependency on another pipeline's task is a sensor, which counts as
// SUCCESS), and with globalDAG a pipeline whose dependencies on other
// pipelines have different types.
func (g *Graph) RemoteUnsupported(globalDAG bool) []RemoteRule {
	const local = "or run the pipeline in local mode (Orchestration.Mode: local), where etl-craft applies it"
	code := g.Pipeline.Code
	var out []RemoteRule
	for _, t := range g.Tasks {
		where := code + "." + t.Code
		if t.RunCondition == N {
			out = append(out, RemoteRule{where, fmt.Sprintf("RUN_CONDITION = 'N' (RUN_CONDITION_COUNT = %d): an orchestrator's trigger rule waits for all or one of the upstream steps; use 'ALL' or 'ANY', %s",
				t.RunConditionCount, local)})
		}
		for _, d := range t.Deps {
			if d.Type == HasData {
				out = append(out, RemoteRule{where, fmt.Sprintf("depends on %s with DEPENDENCY_TYPE = 'HAS_DATA': an orchestrator sees whether a step succeeded, not whether it wrote rows; use 'SUCCESS', %s",
					d.Label(), local)})
			}
		}
		if kinds := StepKinds(t); distinct(kinds) > 1 {
			out = append(out, RemoteRule{where, fmt.Sprintf("its dependencies have different types (%s): an orchestrator applies one trigger rule to every upstream step; give them one DEPENDENCY_TYPE or split the task, %s",
				listKinds(kinds), local)})
		}
	}
	kinds := map[string]string{}
	for _, d := range g.PipelineDeps {
		if d.Type == HasData {
			out = append(out, RemoteRule{code, fmt.Sprintf("depends on pipeline %s with DEPENDENCY_TYPE = 'HAS_DATA': an orchestrator sees whether a DAG run succeeded, not whether it wrote rows; use 'SUCCESS', %s",
				d.Upstream, local)})
			continue
		}
		kinds[d.Upstream] = d.Type
	}
	if globalDAG && distinct(kinds) > 1 {
		out = append(out, RemoteRule{code, fmt.Sprintf("its dependencies on other pipelines have different types (%s) and Global_dag is on: the global DAG applies one trigger rule to every upstream pipeline; give them one DEPENDENCY_TYPE or turn Global_dag off, %s",
			listKinds(kinds), local)})
	}
	return out
}

// RemoteRefusal returns the remote-unsupported error (exit 18) listing every
// rule of RemoteUnsupported, or nil when there is none.
func (g *Graph) RemoteRefusal(globalDAG bool) error {
	rules := g.RemoteUnsupported(globalDAG)
	if len(rules) == 0 {
		return nil
	}
	lines := make([]string, len(rules))
	for i, r := range rules {
		lines[i] = r.String()
	}
	return exit.Errorf(exit.RemoteUnsupported,
		"%s has %d rule(s) the remote orchestrator cannot express, so remote mode cannot apply them: %s",
		g.Pipeline.Code, len(rules), strings.Join(lines, " | "))
}

// StepKinds maps each of the task's upstreams (Dependency.Label) to the type
// its orchestrator step is judged by: its own type, except that HAS_DATA
// reads as SUCCESS and a dependency on another pipeline's task is a sensor,
// whose own states carry the type, so it counts as SUCCESS.
func StepKinds(t *Task) map[string]string {
	kinds := map[string]string{}
	for _, d := range t.Deps {
		kind := d.Type
		if d.Type == HasData || d.CrossPipeline {
			kind = Success
		}
		kinds[d.Label()] = kind
	}
	return kinds
}

// distinct counts the different values of the map.
func distinct(m map[string]string) int {
	seen := map[string]bool{}
	for _, v := range m {
		seen[v] = true
	}
	return len(seen)
}

// listKinds writes "upstream: TYPE" pairs in upstream order.
func listKinds(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for i, k := range keys {
		keys[i] = k + ": " + m[k]
	}
	return strings.Join(keys, ", ")
}
