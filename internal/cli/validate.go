package cli

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// warehouseCheckTimeout bounds validate's connection to the warehouse.
const warehouseCheckTimeout = 20 * time.Second

func (a *app) validateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Check the active pipelines' graphs, dependencies and task parameters",
		Long: "validate checks every active pipeline (or only --pipeline_code) the way a run would meet it:\n" +
			"its graph, its pipeline dependencies, HAS_DATA dependencies on tasks that never report rows,\n" +
			"each task's parameters through its handler, and in remote mode every rule the orchestrator\n" +
			"cannot express (RUN_CONDITION N, HAS_DATA, mixed dependency types). It prints one [FAIL] or [WARN] line per\n" +
			"finding and a summary, and exits 1 when anything failed. It connects to the warehouse only to check\n" +
			"business rules (their target tables, key columns and SQL), and only when there are some; when it\n" +
			"cannot connect, that is one warning.",
		Args: cobra.NoArgs,
	}
	pipe := addPipelineFlag(cmd, false, "check only this pipeline")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := a.loadConfig()
		if err != nil {
			return err
		}
		p, err := project.Open(cmd.Context(), cfg, a.projectOptions(project.ForChecking())...)
		if err != nil {
			return err
		}
		defer p.Close()
		req := inspect.ValidateRequest{PipelineCode: pipe.code, Handlers: p.Handlers, CheckPipeline: p.CheckPipeline, ProjectDir: cfg.ProjectDir,
			Remote: cfg.Orchestration.Mode == config.ModeRemote, GlobalDAG: cfg.Orchestration.GlobalDAG}
		if p.Warehouse != nil {
			req.Warehouse = func(ctx context.Context) (warehouse.Warehouse, func(), error) {
				ctx, cancel := context.WithTimeout(ctx, warehouseCheckTimeout)
				defer cancel()
				w, release, err := p.Warehouse.Acquire(ctx)
				if err == nil {
					if err = w.Ping(ctx); err != nil {
						release()
					}
				}
				return w, release, err
			}
		}
		v, err := inspect.Validate(cmd.Context(), p.DB, req)
		if err != nil {
			return err
		}
		if v.Failed > 0 {
			a.status = exit.Failure
		}
		if format.json() {
			return a.printJSON(v)
		}
		a.printFindings(v)
		a.printf("checked %d pipeline(s) and %d task(s): %d failed, %d warning(s)\n", v.Pipelines, v.Tasks, v.Failed, v.Warnings)
		return nil
	}
	return cmd
}

// printFindings writes one [FAIL] or [WARN] line per validation finding.
func (a *app) printFindings(v report.Validation) {
	for _, f := range v.Findings {
		a.printf("[%-4s] %s: %s\n", f.Status, f.Where, f.Message)
	}
}
