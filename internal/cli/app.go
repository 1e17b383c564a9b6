package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pemkey"
	"github.com/etl-craft/etl-craft/internal/pgauth"
)

// app is one invocation of the command line: its global options, output
// streams and logger, and the exit status a command chose.
type app struct {
	stdout, stderr io.Writer
	configFlag     string
	logLevel       string
	logFormat      string
	log            *slog.Logger
	status         exit.Code
	started        time.Time
}

// commands returns every subcommand, in the order `--help` lists them.
func (a *app) commands() []*cobra.Command {
	return []*cobra.Command{
		a.quickstartCommand(),
		a.runCommand(),
		a.tokenCommand(),
		a.markCommand(),
		a.cancelCommand(),
		a.reconcileCommand(),
		a.rehashCommand(),
		a.upgradeTargetsCommand(),
		a.pauseCommand(),
		a.resumeCommand(),
		a.listCommand(),
		a.graphCommand(),
		a.stepsCommand(),
		a.statusCommand(),
		a.historyCommand(),
		a.auditCommand(),
		a.cloneCommand(),
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

// engineOptions maps the Engine profile to the options that open it. The
// password is read from its variable for every new connection; an
// auth_mode key_file login sends none and presents its client certificate
// instead, its key decrypted with the secret when the Engine DB is opened.
func engineOptions(cfg *config.Config) engine.Options {
	e := cfg.Engine
	if e.Kind == config.EngineSQLite {
		return engine.Options{Kind: engine.SQLite, Path: e.SQLitePath}
	}
	opts := engine.Options{Kind: engine.Postgres, Schema: e.Schema, Password: postgresPassword(cfg, e.Auth, e.Host, e.Port)}
	e.Params, opts.ClientCert = clientCertificate(cfg, e.Auth, e.Params)
	opts.DSN = e.DSN()
	return opts
}

// clientCertificate returns, for a key_file login, the URL settings params
// without sslkey and sslcert, and the TLS client certificate (cert_file,
// else sslcert, with the key in key_file) that etl-craft reads itself: the
// drivers cannot decrypt every form of key. Other logins get params as
// they are and no certificate.
func clientCertificate(cfg *config.Config, a config.Auth, params map[string]string) (map[string]string, func() (tls.Certificate, error)) {
	if a.AuthMode != pgauth.ModeKeyFile {
		return params, nil
	}
	certFile := a.CertFile
	if certFile == "" {
		certFile = params["sslcert"]
	}
	params = maps.Clone(params)
	delete(params, "sslkey")
	delete(params, "sslcert")
	return params, pemkey.ClientCertificate(a.KeyFile, certFile, secretOf(cfg, a.SecretVar))
}

// postgresPassword returns what a PostgreSQL login of the profile's auth
// sends as its password at each new connection: the secret read from its
// variable, or a token minted from it (see pgauth); nil when none.
func postgresPassword(cfg *config.Config, a config.Auth, host string, port int) func() (string, error) {
	return pgauth.Password(pgauth.Login{Mode: a.AuthMode, Host: host, Port: port, User: a.User, Secret: secretOf(cfg, a.SecretVar),
		ClientID: a.ClientID, TokenURL: a.TokenURL, Scope: a.Scope, Region: a.Region, RoleARN: a.RoleARN})
}

// secretOf returns the function that reads the secret variable v at each
// call; nil when the profile names none.
func secretOf(cfg *config.Config, v string) func() (string, error) {
	if v == "" {
		return nil
	}
	return func() (string, error) { return cfg.Secret(v) }
}

// openEngine connects to the configured Engine DB.
func (a *app) openEngine(ctx context.Context, cfg *config.Config) (*engine.DB, error) {
	db, err := engine.Open(ctx, engineOptions(cfg))
	if err != nil {
		return nil, err
	}
	a.logger().Debug("connected to the Engine DB", "kind", db.Kind().Label(), "schema", db.Schema())
	return db, nil
}

// record writes the command's immutable AUD_ACTIONS request. A failure to
// record is logged, not fatal: the command's own work still decides.
func (a *app) record(ctx context.Context, db *engine.DB, cmd *cobra.Command, pipelineCode, taskCode string) {
	args := map[string]any{}
	cmd.Flags().Visit(func(f *pflag.Flag) { args[f.Name] = f.Value.String() })
	req := audit.Request{Command: cmd.Name(), Arguments: args, PipelineCode: pipelineCode, TaskCode: taskCode, StartedAt: a.started}
	if orch := actor.OrchestratorContext(); len(orch) > 0 {
		for k, v := range orch {
			args[k] = v
		}
	}
	if err := audit.Record(ctx, db, req); err != nil {
		a.logger().Warn("could not record the command in AUD_ACTIONS", "command", cmd.Name(), "error", err)
	}
}

// session is what most commands start from: the context carrying the
// command's actor, the configuration and the open Engine DB.
type session struct {
	ctx context.Context
	cfg *config.Config
	db  *engine.DB
}

// openSession resolves the actor, loads the configuration and opens the
// Engine DB. The caller closes s.db.
func (a *app) openSession(cmd *cobra.Command) (*session, error) {
	ctx, err := a.acting(cmd.Context())
	if err != nil {
		return nil, err
	}
	cfg, err := a.loadConfig()
	if err != nil {
		return nil, err
	}
	db, err := a.openEngine(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &session{ctx: ctx, cfg: cfg, db: db}, nil
}
