package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/run"
)

func (a *app) pauseCommand() *cobra.Command {
	return a.pauseOrResume("pause", "Pause a pipeline: start nothing of it until it is resumed",
		"pause stops a pipeline from starting anything: run starts no new run of it, and a run in\n"+
			"progress starts no more tasks and stays IN-PROGRESS until the pipeline is resumed. The\n"+
			"pause (who, when and why) is kept in AUD_PIPELINE_PAUSES. Refused in remote mode.",
		gate.Pause)
}

func (a *app) resumeCommand() *cobra.Command {
	return a.pauseOrResume("resume", "Resume a paused pipeline",
		"resume ends a pipeline's pause: the next run (or the server) starts it again, and goes on\n"+
			"with a run left IN-PROGRESS. Who resumed it, when and why is kept with the pause in\n"+
			"AUD_PIPELINE_PAUSES. Refused in remote mode.",
		gate.Resume)
}

// pauseOrResume builds the pause or the resume command: both take
// --pipeline_code, --reason and --format, and print the change's message.
func (a *app) pauseOrResume(verb, short, long string,
	change func(ctx context.Context, db *engine.DB, pipelineID int64, reason string) (gate.Change, error)) *cobra.Command {
	var reason string
	cmd := &cobra.Command{Use: verb, Short: short, Long: long, Args: cobra.NoArgs}
	pipe := addPipelineFlag(cmd, true, "the pipeline to "+verb)
	cmd.Flags().StringVar(&reason, "reason", "", "why (required); kept in the pause history")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := pipe.check(); err != nil {
			return err
		}
		if strings.TrimSpace(reason) == "" {
			return usagef("--reason is required: say why you %s %s", verb, pipe.code)
		}
		s, err := a.openSession(cmd)
		if err != nil {
			return err
		}
		defer s.db.Close()
		if s.cfg.Orchestration.Mode == config.ModeRemote {
			return gate.RefusedRemotely(verb)
		}
		if err := inspect.Ready(s.ctx, s.db); err != nil {
			return err
		}
		if err := a.record(s.ctx, s.db, cmd, pipe.code, ""); err != nil {
			return err
		}
		p, err := pipeline.Find(s.ctx, s.db, pipe.code)
		if err != nil {
			return err
		}
		c, err := change(s.ctx, s.db, p.ID, reason)
		if err != nil {
			return err
		}
		return a.printOperation(s, format, run.Change{PipelineID: p.ID, PipelineCode: p.Code, Message: c.Message})
	}
	return cmd
}
