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
	"github.com/spf13/pflag"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/freetext"
	"github.com/etl-craft/etl-craft/internal/suggest"
)

// Version is the etl-craft release this binary is.
var Version = "0.1.0"

// Main runs the command line with the arguments (without the program name)
// and returns the process exit status.
//
// Everything written to stdout and stderr passes through a freetext.Writer:
// text stored by anyone (a reason, a run key, a description) never reaches
// the terminal with a control character in it.
func Main(args []string, stdout, stderr io.Writer) (status int) {
	out, errOut := freetext.NewWriter(stdout), freetext.NewWriter(stderr)
	defer out.Flush()
	defer errOut.Flush()
	a := &app{stdout: out, stderr: errOut, terminal: stderr, started: time.Now()}
	stdout, stderr = out, errOut
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	defer a.stopTracing()

	defer func() {
		if p := recover(); p != nil {
			a.logger().Error("unexpected failure", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			fmt.Fprintf(stderr, "error: unexpected panic: %v\n", p)
			status = int(exit.Unexpected)
		}
	}()
	cmd, err := root.ExecuteContextC(ctx)
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
		fmt.Fprintf(stderr, "error: unexpected %T: %v\n", rootCause(err), err)
	} else {
		fmt.Fprintf(stderr, "error: %s\n", exit.Flagged(err))
	}
	fmt.Fprint(stderr, serverDetail(err))
	if code == exit.Usage {
		fmt.Fprintf(stderr, "usage: %s (see %s --help)\n", usageLine(cmd), cmd.CommandPath())
	}
	return int(code)
}

// rootCause returns the innermost error of err's chain.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// usageError is a mistake in the command line: exit 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// usageLine is the usage line of cmd: "etl-craft <command> [flags]" for a
// command that has subcommands, else its own, such as "etl-craft list [flags]".
func usageLine(cmd *cobra.Command) string {
	if cmd.HasAvailableSubCommands() {
		return cmd.CommandPath() + " <command> [flags]"
	}
	return cmd.UseLine()
}

// unknownCommand refuses the words given to the root command: they name no
// command. The error suggests the nearest commands.
func unknownCommand(root *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, c := range root.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return usagef("unknown command %q%s", args[0], suggest.DidYouMean(args[0], names))
}

// flagError makes a flag that does not parse a usage error; an unknown flag
// is named with the nearest flags of the command.
func flagError(cmd *cobra.Command, err error) error {
	var missing *pflag.NotExistError
	if !errors.As(err, &missing) || missing.GetSpecifiedShortnames() != "" {
		return usagef("%v", err)
	}
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, "--"+f.Name)
		}
	})
	return usagef("%v%s", err, suggest.DidYouMean("--"+missing.GetSpecifiedName(), names))
}

// checkFreeText refuses a flag whose value holds a control or format
// character, or is not UTF-8 (freetext.Check), before the command reads or
// records anything: every value a command may store (a reason, a run key, a
// token's name) is free text, and no other value needs such a character.
func checkFreeText(cmd *cobra.Command) error {
	var err error
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if err == nil {
			if bad := freetext.Check(f.Value.String()); bad != nil {
				err = usagef("--%s %v", f.Name, bad)
			}
		}
	})
	return err
}

// usageArgs makes every refusal of positional arguments, by cmd and its
// subcommands, a usage error.
func usageArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				var usage *usageError
				if errors.As(err, &usage) {
					return err
				}
				return usagef("%v", err)
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "etl-craft",
		Short:         "A metadata-driven engine for SQL pipelines",
		Long:          "etl-craft runs SQL pipelines defined as rows in its Engine DB against your warehouse,\nand records every run, attempt and change.",
		Version:       Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          unknownCommand,
		RunE: func(*cobra.Command, []string) error {
			return usagef("no command given")
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.setupLogging(); err != nil {
				return err
			}
			return checkFreeText(cmd)
		},
	}
	root.SetVersionTemplate("etl-craft {{.Version}}\n")
	// --help lists the commands in the order of commands(), not alphabetically.
	cobra.EnableCommandSorting = false
	pf := root.PersistentFlags()
	pf.StringVar(&a.configFlag, "config", "", "path of craft-connector.yml (default: $ETL_CRAFT_CONFIG, then an upward search)")
	pf.StringVar(&a.logLevel, "log-level", "INFO", "DEBUG, INFO, WARNING or ERROR")
	pf.StringVar(&a.logFormat, "log-format", "text", "text or json")
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.DisableDefaultCmd = true
	for _, c := range a.commands() {
		root.AddCommand(c)
	}
	usageArgs(root)
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
		a.log = slog.New(flagLog{slog.NewTextHandler(a.stderr, opts)})
	case "json":
		a.log = slog.New(flagLog{slog.NewJSONHandler(a.stderr, opts)})
	default:
		return usagef("--log-format %q: use text or json", a.logFormat)
	}
	// The domain packages that log without a logger of their own (lock
	// waits, for one) log through the default one.
	slog.SetDefault(a.log)
	return nil
}

func (a *app) logger() *slog.Logger {
	if a.log == nil {
		a.log = slog.New(flagLog{slog.NewTextHandler(a.stderr, nil)})
	}
	return a.log
}

// flagLog is a log handler that writes the request fields a record names
// (see exit.RequestFields) as their flags, in its message and in the
// errors it carries, as the command line prints them.
type flagLog struct{ slog.Handler }

// Handle writes the record with its fields as flags.
func (h flagLog) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, exit.Flags(r.Message), r.PC)
	r.Attrs(func(at slog.Attr) bool {
		var fe *exit.FieldError
		if err, ok := at.Value.Any().(error); ok && at.Value.Kind() == slog.KindAny && errors.As(err, &fe) {
			at.Value = slog.StringValue(exit.Flagged(err))
		}
		out.AddAttrs(at)
		return true
	})
	return h.Handler.Handle(ctx, out)
}

// WithAttrs returns the handler with the attributes, fields still as flags.
func (h flagLog) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flagLog{h.Handler.WithAttrs(attrs)}
}

// WithGroup returns the handler with the group, fields still as flags.
func (h flagLog) WithGroup(name string) slog.Handler { return flagLog{h.Handler.WithGroup(name)} }
