package cli

import (
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/inspect"
)

func (a *app) stepsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "steps",
		Short: "List a pipeline's active tasks under a run",
		Long: "steps lists the pipeline's active tasks: the status of each under the selected run\n" +
			"(NOT-RUN while it has no row), its handler, task type, run condition and active parameters.\n" +
			"Select the run with --run-id or --run-key; without either, steps shows the pipeline's\n" +
			"QUEUED or IN-PROGRESS run, else its most recent run, and logs which run it chose.",
		Args: cobra.NoArgs,
	}
	scope := addRunScope(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		sel, db, err := scope.open(cmd.Context(), a)
		if err != nil {
			return err
		}
		defer db.Close()
		steps, err := inspect.PipelineSteps(cmd.Context(), db, scope.pipe.code, sel)
		if err != nil {
			return err
		}
		a.logChosenRun(steps.Chosen, steps.PipelineCode, steps.PipelineRunID)
		if scope.format.json() {
			return a.printJSON(steps)
		}
		t := newTable("TASK_CODE", "STATUS", "HANDLER", "TASK_TYPE", "RUN_CONDITION", "PARAMETERS")
		for _, s := range steps.Steps {
			status := "NOT-RUN"
			if s.Status != nil {
				status = *s.Status
			}
			params := make([]string, 0, len(s.Parameters))
			for _, name := range slices.Sorted(maps.Keys(s.Parameters)) {
				params = append(params, name+"="+s.Parameters[name])
			}
			t.add(s.TaskCode, status, s.Handler, s.TaskType, s.Condition, strings.Join(params, ", "))
		}
		a.printTable(t, "no active tasks")
		return nil
	}
	return cmd
}
