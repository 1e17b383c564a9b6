package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/report"
)

func (a *app) graphCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "graph",
		Short: "Show a pipeline's task waves and dependencies",
		Long: "graph prints a pipeline's waves (the order that is always safe), the tasks whose ANY or N\n" +
			"run condition may let them start earlier, each task's dependencies and the pipeline's own\n" +
			"dependencies. An invalid graph exits with its graph error (5 to 8).",
		Args: cobra.NoArgs,
	}
	pipe := addPipelineFlag(cmd, true, "the pipeline to show")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := pipe.check(); err != nil {
			return err
		}
		_, db, err := a.openForReading(cmd.Context())
		if err != nil {
			return err
		}
		defer db.Close()
		g, err := pipeline.Load(cmd.Context(), db, pipe.code)
		if err != nil {
			return err
		}
		doc, err := inspect.PipelineGraph(g)
		if err != nil {
			return err
		}
		if format.json() {
			return a.printJSON(doc)
		}
		a.printGraph(doc)
		return nil
	}
	return cmd
}

// printGraph writes the graph's text layout.
func (a *app) printGraph(g report.Graph) {
	a.printf("Pipeline %s\n", g.PipelineCode)
	a.printf("Waves, the order that is always safe:\n")
	if len(g.Waves) == 0 {
		a.printf("  (no active tasks)\n")
	}
	for i, wave := range g.Waves {
		a.printf("  %d: %s\n", i+1, strings.Join(wave, ", "))
	}
	if len(g.Conditional) > 0 {
		a.printf("May start before their wave (an ANY or N run condition): %s\n", strings.Join(g.Conditional, ", "))
	}
	var lines []string
	for _, task := range slices.Sorted(maps.Keys(g.DependsOn)) {
		for _, e := range g.DependsOn[task] {
			lines = append(lines, fmt.Sprintf("%s <- %s (%s)", task, e.Upstream(), e.Type()))
		}
	}
	a.printList("Task dependencies:", lines)
	lines = nil
	for _, e := range g.PipelineDependencies {
		lines = append(lines, fmt.Sprintf("%s (%s)", e.Upstream(), e.Type()))
	}
	a.printList("Pipeline dependencies:", lines)
}

// printList writes a title line and its items indented by two spaces, or
// "  (none)" when there are none.
func (a *app) printList(title string, items []string) {
	a.printf("%s\n", title)
	if len(items) == 0 {
		a.printf("  (none)\n")
	}
	for _, it := range items {
		a.printf("  %s\n", it)
	}
}
