package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/metrics"
	"github.com/etl-craft/etl-craft/internal/project"
)

// app is one invocation of the command line: its global options, output
// streams and logger, and the exit status a command chose.
type app struct {
	stdout, stderr io.Writer
	// terminal is stderr as the process has it, for what needs to know
	// whether it is a terminal; messages go to stderr.
	terminal   io.Writer
	configFlag string
	logLevel   string
	logFormat  string
	log        *slog.Logger
	status     exit.Code
	started    time.Time
	// tracing exports the command's spans, when tracing is on.
	tracing *metrics.Tracing
}

// commands returns every subcommand, in the order `--help` lists them.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{
		a.quickstartCommand(),
		a.runCommand(),
		a.serverCommand(),
		a.tokenCommand(),
		a.markCommand(),
		a.cancelCommand(),
		a.reconcileCommand(),
		a.rehashCommand(),
		a.upgradeTargetsCommand(),
		a.configCommand(),
		a.pauseCommand(),
		a.resumeCommand(),
		a.listCommand(),
		a.graphCommand(),
		a.stepsCommand(),
		a.statusCommand(),
		a.explainCommand(),
		a.historyCommand(),
		a.auditCommand(),
		a.lineageCommand(),
		a.docsVersionCommand(),
		a.generateYmlCommand(),
		a.generateDocsCommand(),
		a.publishDocsCommand(),
		a.cloneCommand(),
		a.purgeCommand(),
		a.validateCommand(),
		a.doctorCommand(),
		a.setupCommand(),
		a.initDBCommand(),
		a.migrateCommand(),
	}
}

// printf writes a result line to stdout.
func (a *app) printf(format string, args ...any) {
	fmt.Fprintf(a.stdout, format, args...)
}

// loadConfig finds and loads craft-connector.yml.
func (a *app) loadConfig() (*config.Config, error) {
	path, err := a.configPath()
	if err != nil {
		return nil, err
	}
	return config.Load(path)
}

// trace starts exporting the command's spans when the configuration or the
// OTEL_ variables turn tracing on (metrics.StartTracing); Main stops it as
// the command ends.
func (a *app) trace(ctx context.Context, cfg *config.Config) error {
	if a.tracing != nil {
		return nil
	}
	var err error
	a.tracing, err = metrics.StartTracing(ctx, cfg.Orchestration.TracesEndpoint, Version, a.logger())
	return err
}

// stopTracing exports the spans not exported yet, waiting at most
// tracingFlush.
func (a *app) stopTracing() {
	if a.tracing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), tracingFlush)
	defer cancel()
	if err := a.tracing.Stop(ctx); err != nil {
		a.logger().Warn("tracing: the last spans could not be exported", "error", err)
	}
}

// tracingFlush is how long a command waits, as it ends, for its last spans
// to be exported.
const tracingFlush = 5 * time.Second

// loadConfigForChecks loads craft-connector.yml for doctor and setup, which
// report an unset secret variable as a failed check instead of stopping.
func (a *app) loadConfigForChecks() (*config.Config, error) {
	path, err := a.configPath()
	if err != nil {
		return nil, err
	}
	return config.LoadForChecks(path)
}

func (a *app) configPath() (string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", exit.Wrap(exit.Configuration, err, "cannot tell the working directory")
	}
	return config.Discover(a.configFlag, cwd)
}

// acting returns ctx with the command's actor, resolved from the environment.
func (a *app) acting(ctx context.Context) (context.Context, error) {
	act, err := actor.FromEnv()
	if err != nil {
		return nil, err
	}
	return actor.With(ctx, act), nil
}

// projectOptions are the options every command opens its project with,
// then more: the command's logger and, at --log-level DEBUG, attempt logs
// at DEBUG too.
func (a *app) projectOptions(more ...project.Option) []project.Option {
	opts := []project.Option{project.WithLogger(a.logger())}
	if strings.EqualFold(a.logLevel, "DEBUG") {
		opts = append(opts, project.WithAttemptLogLevel(slog.LevelDebug))
	}
	return append(opts, more...)
}

// record writes the command's immutable AUD_ACTIONS request before the
// command acts. A command that cannot be recorded does not act
// (audit.Record): the caller returns the error (exit 12).
func (a *app) record(ctx context.Context, db *engine.DB, cmd *cobra.Command, pipelineCode, taskCode string) error {
	_, err := audit.Record(ctx, db, a.request(cmd, pipelineCode, taskCode))
	return err
}

// recordAround records the request of a command whose work may create
// AUD_ACTIONS (init-db, migrate, setup) and does the work: the request is
// recorded before the work when the table exists, and the work is not done
// when that fails; otherwise it is recorded once the work is done, whether
// it failed or not.
func (a *app) recordAround(ctx context.Context, db *engine.DB, cmd *cobra.Command, work func() error) error {
	req := a.request(cmd, "", "")
	recorded, err := audit.Record(ctx, db, req)
	if err != nil {
		return err
	}
	err = work()
	if !recorded {
		if rerr := audit.RecordDone(ctx, db, req); err == nil {
			err = rerr
		}
	}
	return err
}

// request is the command's AUD_ACTIONS request: its name, the flags given
// and a remote orchestrator's context.
func (a *app) request(cmd *cobra.Command, pipelineCode, taskCode string) audit.Request {
	args := map[string]any{}
	cmd.Flags().Visit(func(f *pflag.Flag) { args[f.Name] = f.Value.String() })
	for k, v := range actor.OrchestratorContext() {
		args[k] = v
	}
	return audit.Request{Command: commandName(cmd), Arguments: args, PipelineCode: pipelineCode, TaskCode: taskCode, StartedAt: a.started}
}

// commandName is the command as AUD_ACTIONS.COMMAND names it: its path
// below the root, so `token create` for a subcommand.
func commandName(cmd *cobra.Command) string {
	name := cmd.Name()
	for p := cmd.Parent(); p != nil && p.HasParent(); p = p.Parent() {
		name = p.Name() + " " + name
	}
	return name
}

// session is what most commands start from: the context carrying the
// command's actor, the configuration and the open project with its Engine
// DB.
type session struct {
	ctx context.Context
	cfg *config.Config
	db  *engine.DB
	p   *project.Project
}

// openSession resolves the actor, loads the configuration and opens its
// Engine DB only (project.WithoutWarehouse). The caller closes s.db.
func (a *app) openSession(cmd *cobra.Command) (*session, error) {
	return a.start(cmd, project.WithoutWarehouse())
}

// openProject resolves the actor, loads the configuration and opens its
// whole project, the warehouse included. The caller closes s.p.
func (a *app) openProject(cmd *cobra.Command) (*session, error) {
	return a.start(cmd)
}

func (a *app) start(cmd *cobra.Command, opts ...project.Option) (*session, error) {
	ctx, err := a.acting(cmd.Context())
	if err != nil {
		return nil, err
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	if err := a.trace(ctx, cfg); err != nil {
		return nil, err
	}
	p, err := project.Open(ctx, cfg, a.projectOptions(opts...)...)
	if err != nil {
		return nil, err
	}
	return &session{ctx: ctx, cfg: cfg, db: p.DB, p: p}, nil
}
