package inspect

import (
	"sort"
	"strconv"

	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
)

// PipelineGraph describes a loaded pipeline's waves and edges. The graph is
// validated first: an invalid one returns its graph error (exit 5 to 8).
func PipelineGraph(g *pipeline.Graph) (report.Graph, error) {
	if err := g.Validate(); err != nil {
		return report.Graph{}, err
	}
	out := report.Graph{Schema: report.SchemaGraph, PipelineID: g.Pipeline.ID, PipelineCode: g.Pipeline.Code,
		Waves: [][]string{}, Conditional: []string{}, DependsOn: map[string][]report.Edge{}, PipelineDependencies: []report.Edge{}}
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
		edges := make([]report.Edge, 0, len(t.Deps))
		for _, d := range t.Deps {
			edges = append(edges, report.Edge{d.Label(), d.Type})
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
		out.PipelineDependencies = append(out.PipelineDependencies, report.Edge{up, d.Type})
	}
	return out, nil
}
