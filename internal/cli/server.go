package cli

import (
	"net/http"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/console"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/server"
	"github.com/etl-craft/etl-craft/internal/server/api"
)

func (a *app) serverCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "server",
		Short: "Run the pipelines on their schedules and supervise every local run, until SIGTERM or SIGINT",
		Long: "server is the one overseer of the Engine DB. It records each due schedule tick of the active\n" +
			"pipelines as a QUEUED run (RUN_KEY schedule:<UTC instant>), admits the oldest QUEUED run of each\n" +
			"pipeline through its pipeline gate, runs the tasks of every run it owns in one worker pool of\n" +
			"Orchestration.Max_parallel_tasks, takes up runs made by run --init-only and runs whose process\n" +
			"died, and reconciles expired leases. It serves the HTTP API under /api/v1 and the web console at /\n" +
			"on Orchestration.Api_address. A second server exits at once (exit 14), naming the\n" +
			"overseer. SIGTERM or Ctrl-C stops new dispatch and gives running tasks\n" +
			"Orchestration.Shutdown_grace_seconds before they are stopped; unfinished runs stay IN-PROGRESS.\n" +
			"It serves Prometheus metrics at /metrics beside the API (a viewer's token, unless\n" +
			"Orchestration.Metrics_public). Local mode only.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.start(cmd, project.ForServer(), project.WithMetrics(Version))
			if err != nil {
				return err
			}
			defer s.p.Close()
			if err := a.record(s.ctx, s.db, cmd, "", ""); err != nil {
				return err
			}
			viewers := func(h http.Handler) http.Handler {
				return api.Protect(s.p, apitoken.Viewer, h, api.WithLogger(a.logger()))
			}
			return server.Run(s.ctx, server.Options{Project: s.p, Version: Version, Logger: a.logger(),
				Handler:  api.New(s.p, api.WithLogger(a.logger())),
				Console:  console.New(s.p, console.Options{Logger: a.logger(), Done: s.ctx.Done()}),
				Observer: s.p.Metrics.Server(viewers),
				Started: func(id int64, addr string) {
					a.printf("overseer_id=%d started\n", id)
					if addr != "" {
						a.printf("api=http://%s\n", addr)
						a.printf("console=http://%s/\n", addr)
					}
				}})
		},
	}
}
