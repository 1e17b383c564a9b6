package cli

import (
	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/docversion"
)

func (a *app) docsVersionCommand() *cobra.Command {
	var req docversion.Request
	cmd := &cobra.Command{
		Use:   "docs-version [--check] [--pipeline_code P [--task_code T]]",
		Short: "Record a new version of each task's DOCUMENTATION that changed",
		Long: "docs-version compares each active task's DOCUMENTATION parameter with its latest version in\n" +
			"AUD_TASK_DOCUMENTATION and records the next version of every text that changed; a text that\n" +
			"did not change records nothing. It prints PIPELINE_CODE, TASK_CODE, VERSION and CHANGED (yes\n" +
			"or no). --check reports the same and records nothing.",
		Args: cobra.NoArgs,
	}
	cmd.Flags().BoolVar(&req.Check, "check", false, "report what would change, and record nothing")
	pipe := addPipelineFlag(cmd, false, "only the tasks of this pipeline")
	cmd.Flags().StringVar(&req.TaskCode, "task_code", "", "only this task (needs --pipeline_code)")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		req.PipelineCode = pipe.code
		if req.TaskCode != "" && req.PipelineCode == "" {
			return usagef("--task_code needs --pipeline_code")
		}
		s, err := a.openSession(cmd)
		if err != nil {
			return err
		}
		defer s.db.Close()
		if !req.Check {
			if err := a.record(s.ctx, s.db, cmd, req.PipelineCode, req.TaskCode); err != nil {
				return err
			}
		}
		doc, err := docversion.Refresh(s.ctx, s.db, req)
		if err != nil {
			return err
		}
		if format.json() {
			return a.printJSON(doc)
		}
		t := newTable("PIPELINE_CODE", "TASK_CODE", "VERSION", "CHANGED")
		for _, v := range doc.Tasks {
			t.add(v.PipelineCode, v.TaskCode, v.Version, yesNo(v.Changed))
		}
		a.printTable(t, "no task has a DOCUMENTATION parameter")
		return nil
	}
	return cmd
}

// yesNo writes a flag as yes or no.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
