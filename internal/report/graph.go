package report

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
