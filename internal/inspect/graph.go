package inspect

import (
	"sort"
	"strconv"

	"github.com/etl-craft/etl-craft/internal/pipeline"
)

// Edge is one dependency as a document lists it: [upstream, type]. A
// cross-pipeline upstream task is written PIPELINE.TASK.
type Edge [2]string

// Upstream is what the edge depends on.
func (e Edge) Upstream() string { return e[0] }

// Type is the edge's dependency type: SUCCESS, FAILURE, ALWAYS or HAS_DATA.
func (e Edge) Type() string { return e[1] }

// Graph is a pipeline's static order and dependency edges.
type Graph struct {
	Schema       string `json:"schema"`
	PipelineID   int64  `json:"pipeline_id"`
	PipelineCode string `json:"pipeline_code"`
	// Waves are the task codes in levels, the order that is always safe.
	Waves [][]string `json:"waves"`
	// Conditional are the tasks whose ANY or N run condition may let them
	// start before their wave.
	Conditional []string `json:"conditional"`
	// DependsOn maps every active task to its dependencies, sorted by
	// upstream and type.
	DependsOn map[string][]Edge `json:"depends_on"`
	// PipelineDependencies are the pipeline's own dependencies on other
	// pipelines, in the order they were defined.
	PipelineDependencies []Edge `json:"pipeline_dependencies"`
}

// PipelineGraph describes a loaded pipeline's waves and edges. The graph is
// validated first: an invalid one returns its graph error (exit 5 to 8).
func PipelineGraph(g *pipeline.Graph) (Graph, error) {
	if err := g.Validate(); err != nil {
		return Graph{}, err
	}
	out := Graph{Schema: SchemaGraph, PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code,
		Waves: [][]string{}, Conditional: []string{}, DependsOn: map[string][]Edge{}, PipelineDependencies: []Edge{}}
	for _, wave := range g.Waves() {
		codes := make([]string, len(wave))
		for i, t := range wave {
			codes[i] = t.Code
		}
		out.Waves = append(out.Waves, codes)
	}
	for _, t := range g.Tasks {
		if t.RunCondition != pipeline.All {
			out.Conditional = append(out.Conditional, t.Code)
		}
		edges := make([]Edge, 0, len(t.Deps))
		for _, d := range t.Deps {
			edges = append(edges, Edge{d.Label(), d.Type})
		}
		sort.Slice(edges, func(i, j int) bool {
			if edges[i][0] != edges[j][0] {
				return edges[i][0] < edges[j][0]
			}
			return edges[i][1] < edges[j][1]
		})
		out.DependsOn[t.Code] = edges
	}
	for _, d := range g.PipelineDeps {
		up := d.Upstream
		if up == "" {
			up = "inactive pipeline id " + strconv.FormatInt(d.UpstreamID, 10)
		}
		out.PipelineDependencies = append(out.PipelineDependencies, Edge{up, d.Type})
	}
	return out, nil
}
