package cli

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/dag"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline"
)

func (a *app) generateYmlCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "generate-yml",
		Short: "Write the Airflow DAG descriptor of a pipeline, of the global DAG, or of the docs DAG",
		Long: "generate-yml writes, as YAML, the DAG an orchestrator runs: with --pipeline_code P the pipeline's\n" +
			"DAG (__init__, one step per task, __finalize__, with their commands, dependencies and trigger\n" +
			"rules, and in remote mode the sensors on other pipelines), with --global the DAG that triggers\n" +
			"the pipeline DAGs in dependency order (needs Orchestration.Global_dag: true), with --docs the DAG\n" +
			"that regenerates the catalog (needs Docs_site.Schedule). It writes to stdout, or to --output\n" +
			"(creating its folders) and prints 'wrote <path>'. In remote mode a rule the orchestrator\n" +
			"cannot express is refused (exit 18). --print-loader writes instead the Python file that\n" +
			"Airflow loads the descriptors of a folder with (" + dag.LoaderFile + ").",
		Args: cobra.NoArgs,
	}
	pipe := addPipelineFlag(cmd, false, "write this pipeline's DAG")
	fl := cmd.Flags()
	global := fl.Bool("global", false, "write the global DAG of pipeline dependencies (needs Orchestration.Global_dag: true)")
	docs := fl.Bool("docs", false, "write the DAG that regenerates the catalog (needs Docs_site.Schedule)")
	version := fl.String("airflow-version", dag.DefaultAirflowVersion, "the Airflow version range the DAG is for; remote DAGs need at least 2.2.0")
	loader := fl.Bool("print-loader", false, "write the Airflow loader ("+dag.LoaderFile+"), which builds the DAGs of a folder of descriptors")
	output := fl.String("output", "", "write the YAML to this file, creating its folders, instead of stdout")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		chosen := 0
		for _, set := range []bool{pipe.code != "", *global, *docs, *loader} {
			if set {
				chosen++
			}
		}
		if chosen != 1 {
			return usagef("give exactly one of --pipeline_code, --global, --docs or --print-loader")
		}
		if *loader {
			return a.writeOutput(*output, dag.Loader())
		}
		cfg, err := a.loadConfig()
		if err != nil {
			return err
		}
		opts := dag.Options{Orchestration: cfg.Orchestration, AirflowVersion: *version}
		if err := dag.CheckAirflowVersion(*version, cfg.Orchestration.Mode == config.ModeRemote); err != nil {
			return err
		}
		var out []byte
		if *docs {
			out, err = dag.Docs(cfg.DocsSite, opts)
		} else {
			out, err = a.pipelineDAG(cmd, cfg, opts, pipe.code)
		}
		if err != nil {
			return err
		}
		return a.writeOutput(*output, out)
	}
	return cmd
}

// writeOutput writes out to stdout when path is empty, else to the file,
// creating its folders, and prints "wrote <path>".
func (a *app) writeOutput(path string, out []byte) error {
	if path == "" {
		_, err := a.stdout.Write(out)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return exit.Wrap(exit.Configuration, err, "cannot create the folder of %s", path)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return exit.Wrap(exit.Configuration, err, "cannot write %s", path)
	}
	a.printf("wrote %s\n", path)
	return nil
}

// pipelineDAG loads the pipeline's graph (or, for code "", every active
// pipeline's for the global DAG) and writes its DAG. Without Global_dag the
// global DAG is refused before the Engine DB is opened.
func (a *app) pipelineDAG(cmd *cobra.Command, cfg *config.Config, opts dag.Options, code string) ([]byte, error) {
	if code == "" && !cfg.Orchestration.GlobalDAG {
		return dag.Global(nil, opts)
	}
	p, err := a.openReading(cmd.Context())
	if err != nil {
		return nil, err
	}
	defer p.Close()
	ctx := cmd.Context()
	if code != "" {
		g, err := pipeline.Load(ctx, p.DB, code)
		if err != nil {
			return nil, err
		}
		return dag.Pipeline(g, opts)
	}
	pipes, err := pipeline.List(ctx, p.DB)
	if err != nil {
		return nil, err
	}
	graphs := make([]*pipeline.Graph, 0, len(pipes))
	for _, x := range pipes {
		g, err := pipeline.Load(ctx, p.DB, x.Code)
		if err != nil {
			return nil, err
		}
		graphs = append(graphs, g)
	}
	return dag.Global(graphs, opts)
}
