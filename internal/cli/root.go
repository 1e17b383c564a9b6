// Package cli is the etl-craft command line: one cobra command per file, text
// and JSON output, and the mapping from domain errors to exit codes. Commands
// parse and print; the domain packages decide.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Version is the etl-craft release this binary is.
var Version = "0.1.0"

// Main runs the command line with the arguments (without the program name)
// and returns the process exit status.
func Main(args []string, stdout, stderr io.Writer) (status int) {
	a := &app{stdout: stdout, stderr: stderr, started: time.Now()}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()

	defer func() {
		if p := recover(); p != nil {
			a.logger().Error("unexpected failure", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			fmt.Fprintf(stderr, "error: unexpected panic: %v\n", p)
			status = int(exit.Unexpected)
		}
	}()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return int(a.status)
	}
	code := exit.CodeOf(err)
	var usage *usageError
	if errors.As(err, &usage) {
		code = exit.Usage
	}
	if code == exit.Unexpected {
		a.logger().Error("unexpected failure", "error", err.Error())
		fmt.Fprintf(stderr, "error: unexpected %T: %v\n", errors.Unwrap(err), err)
	} else {
		fmt.Fprintf(stderr, "error: %v\n", err)
	}
	return int(code)
}

// usageError is a mistake in the command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "etl-craft",
		Short:         "A metadata-driven engine for SQL pipelines",
		Long:          "etl-craft runs SQL pipelines defined as rows in its Engine DB against your warehouse,\nand records every run, attempt and change.",
		Version:       Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(a.stderr)
			cmd.Usage()
			return usagef("no command given")
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return a.setupLogging()
		},
	}
	root.SetVersionTemplate("etl-craft {{.Version}}\n")
	// --help lists the commands in the order of commands(), not alphabetically.
	cobra.EnableCommandSorting = false
	pf := root.PersistentFlags()
	pf.StringVar(&a.configFlag, "config", "", "path of craft-connector.yml (default: $ETL_CRAFT_CONFIG, then an upward search)")
	pf.StringVar(&a.logLevel, "log-level", "INFO", "DEBUG, INFO, WARNING or ERROR")
	pf.StringVar(&a.logFormat, "log-format", "text", "text or json")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usagef("%v", err) })
	root.CompletionOptions.DisableDefaultCmd = true
	for _, c := range a.commands() {
		root.AddCommand(c)
	}
	return root
}

func (a *app) setupLogging() error {
	var level slog.Level
	switch strings.ToUpper(a.logLevel) {
	case "DEBUG":
		level = slog.LevelDebug
	case "INFO":
		level = slog.LevelInfo
	case "WARNING", "WARN":
		level = slog.LevelWarn
	case "ERROR", "CRITICAL":
		level = slog.LevelError
	default:
		return usagef("--log-level %q: use DEBUG, INFO, WARNING or ERROR", a.logLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(a.logFormat) {
	case "text":
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	default:
		return usagef("--log-format %q: use text or json", a.logFormat)
	}
	return nil
}

func (a *app) logger() *slog.Logger {
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(a.stderr, nil))
	}
	return a.log
}
