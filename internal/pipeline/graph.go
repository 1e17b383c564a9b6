package pipeline

// The graph of a pipeline's tasks: validation, order and look-ups.

import (
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/suggest"
)

// Validate checks the graph before anything runs: a task depending on itself
// (exit 6), a dependency on an unknown or inactive task (exit 8), a cycle
// among the pipeline's tasks (exit 7), and a run condition that can never be
// met or an unknown dependency type (exit 5).
func (g *Graph) Validate() error {
	code := g.Pipeline.Code
	for _, t := range g.Tasks {
		for _, d := range t.Deps {
			if !d.CrossPipeline && d.UpstreamTaskID == t.ID {
				return exit.Errorf(exit.SelfDependency, "%s.%s depends on itself (CFG_TASK_DEPENDENCY id %d): retire that dependency", code, t.Code, d.ID)
			}
			if d.UpstreamTask == "" || d.UpstreamPipeline == "" {
				return exit.Errorf(exit.UnknownTask, "%s.%s depends on task id %d (CFG_TASK_DEPENDENCY id %d), %s",
					code, t.Code, d.UpstreamTaskID, d.ID, d.notActive(code))
			}
			switch d.Type {
			case Success, Failure, Always, HasData:
			default:
				return exit.Errorf(exit.Graph, "%s.%s has a dependency of unknown type %q (CFG_TASK_DEPENDENCY id %d)", code, t.Code, d.Type, d.ID)
			}
		}
		switch t.RunCondition {
		case All, Any:
		case N:
			if t.RunConditionCount < 1 || t.RunConditionCount > len(t.Deps) {
				return exit.Errorf(exit.Graph,
					"%s.%s has RUN_CONDITION N with RUN_CONDITION_COUNT %d but %d dependencies: it can never run; use a count from 1 to %d",
					code, t.Code, t.RunConditionCount, len(t.Deps), len(t.Deps))
			}
		default:
			return exit.Errorf(exit.Graph, "%s.%s has the unknown RUN_CONDITION %q: use ALL, ANY or N", code, t.Code, t.RunCondition)
		}
	}
	if cycle := g.cycle(); len(cycle) > 0 {
		return exit.Errorf(exit.DependencyCycle, "%s has a dependency cycle: %s", code, strings.Join(cycle, " -> "))
	}
	return nil
}

// notActive says what the task a dependency names is, when it is not an
// active task of the pipeline the dependency names, and what to do: the
// task's code and pipeline whatever their state. own is the code of the
// dependency's own pipeline.
func (d *Dependency) notActive(own string) string {
	n := d.Named
	named := own // the pipeline the dependency names
	if d.CrossPipeline {
		named = d.UpstreamPipeline
		if named == "" {
			named = "pipeline id " + itoa(int(d.UpstreamPipelineID))
		}
	}
	where := "of the pipeline " + n.Pipeline
	if !n.PipelineActive {
		where = "of the retired pipeline " + n.Pipeline
	}
	switch {
	case n.Task == "":
		return "which does not exist: retire the dependency"
	case n.PipelineID != d.UpstreamPipelineID:
		return "which is " + n.Pipeline + "." + n.Task + ", a task " + where + ", not of " + named +
			": name its pipeline in DEPENDS_ON_PIPELINE_ID, or retire the dependency"
	case !n.TaskActive:
		return "which is " + n.Pipeline + "." + n.Task + ", a retired task " + where + ": activate it or retire the dependency"
	}
	return "which is " + n.Pipeline + "." + n.Task + ", a task " + where + ": activate the pipeline or retire the dependency"
}

// Upstreams returns the same-pipeline tasks t depends on.
func (g *Graph) Upstreams(t *Task) []*Task {
	var out []*Task
	for _, d := range t.Deps {
		if !d.CrossPipeline {
			if u := g.byID[d.UpstreamTaskID]; u != nil {
				out = append(out, u)
			}
		}
	}
	return out
}

// Downstreams returns the same-pipeline tasks that depend on t.
func (g *Graph) Downstreams(t *Task) []*Task {
	var out []*Task
	for _, x := range g.Tasks {
		for _, u := range g.Upstreams(x) {
			if u == t {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// cycle returns the task codes of one dependency cycle, or nil.
func (g *Graph) cycle() []string {
	const (
		unseen = iota
		active
		done
	)
	state := map[*Task]int{}
	var stack []*Task
	var found []string
	var visit func(t *Task) bool
	visit = func(t *Task) bool {
		state[t] = active
		stack = append(stack, t)
		for _, u := range g.Upstreams(t) {
			switch state[u] {
			case active:
				for i, s := range stack {
					if s == u {
						for _, x := range stack[i:] {
							found = append(found, x.Code)
						}
						found = append(found, u.Code)
						return true
					}
				}
			case unseen:
				if visit(u) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[t] = done
		return false
	}
	for _, t := range g.Tasks {
		if state[t] == unseen && visit(t) {
			return found
		}
	}
	return nil
}

// Waves orders the tasks in levels: wave 1 has no same-pipeline upstream,
// and every task comes after all its upstreams. The graph must be valid.
func (g *Graph) Waves() [][]*Task {
	level := map[*Task]int{}
	var depth func(t *Task) int
	depth = func(t *Task) int {
		if l, ok := level[t]; ok {
			return l
		}
		l := 0
		for _, u := range g.Upstreams(t) {
			l = max(l, depth(u)+1)
		}
		level[t] = l
		return l
	}
	var waves [][]*Task
	for _, t := range g.Tasks {
		l := depth(t)
		for len(waves) <= l {
			waves = append(waves, nil)
		}
		waves[l] = append(waves[l], t)
	}
	return waves
}

// Codes returns the task codes in order.
func (g *Graph) Codes() []string {
	out := make([]string, len(g.Tasks))
	for i, t := range g.Tasks {
		out[i] = t.Code
	}
	return out
}

// FindTask returns the active task with the code; an unknown code is a
// metadata error (exit 4) suggesting close matches.
func (g *Graph) FindTask(code string) (*Task, error) {
	if t := g.byCode[code]; t != nil {
		return t, nil
	}
	return nil, exit.Errorf(exit.Metadata, "pipeline %s has no active task with the code %q in CFG_TASKS%s",
		g.Pipeline.Code, code, suggest.DidYouMean(code, g.Codes()))
}
