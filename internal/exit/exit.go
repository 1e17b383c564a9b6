// Package exit owns the process exit codes of etl-craft and the typed errors
// that carry them. Domain packages return these errors; the cli package maps
// them to the process status.
package exit

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/records"
)

// Code is a process exit status with a fixed meaning.
type Code int

// The exit codes of etl-craft. Each error kind owns exactly one code; 0, 1, 22
// and 23 are outcomes, never errors.
const (
	Success           Code = 0
	Failure           Code = 1
	Usage             Code = 2
	Configuration     Code = 3
	Metadata          Code = 4
	Graph             Code = 5
	SelfDependency    Code = 6
	DependencyCycle   Code = 7
	UnknownTask       Code = 8
	RunState          Code = 9
	RunRefused        Code = 10
	ConnectionTest    Code = 11
	EngineDB          Code = 12
	Migration         Code = 13
	LockTimeout       Code = 14
	Handler           Code = 15
	Unexpected        Code = 16
	Cloning           Code = 17
	RemoteUnsupported Code = 18
	InjectedFault     Code = 19
	StaleTransition   Code = 20
	SQLGuard          Code = 21
	Incomplete        Code = 22
	Waiting           Code = 23
	ResourceNotFound  Code = 24
	// ConfigFiles is an unreadable configuration file or a bad row in one
	// (config plan|apply|export).
	ConfigFiles Code = 25
)

var names = map[Code]string{
	Success: "SUCCESS", Failure: "FAILURE", Usage: "USAGE", Configuration: "CONFIGURATION",
	Metadata: "METADATA", Graph: "GRAPH", SelfDependency: "SELF_DEPENDENCY",
	DependencyCycle: "DEPENDENCY_CYCLE", UnknownTask: "UNKNOWN_TASK", RunState: "RUN_STATE",
	RunRefused: "RUN_REFUSED", ConnectionTest: "CONNECTION_TEST", EngineDB: "ENGINE_DB",
	Migration: "MIGRATION", LockTimeout: "LOCK_TIMEOUT", Handler: "HANDLER",
	Unexpected: "UNEXPECTED", Cloning: "CLONING", RemoteUnsupported: "REMOTE_UNSUPPORTED",
	InjectedFault: "INJECTED_FAULT", StaleTransition: "STALE_TRANSITION", SQLGuard: "SQL_GUARD",
	Incomplete: "INCOMPLETE", Waiting: "WAITING", ResourceNotFound: "RESOURCE_NOT_FOUND",
	ConfigFiles: "CONFIG_FILES",
}

// Codes lists every exit code in ascending order.
func Codes() []Code {
	out := make([]Code, 0, len(names))
	for c := Success; c <= ConfigFiles; c++ {
		out = append(out, c)
	}
	return out
}

// String returns the code's name, such as CONFIGURATION.
func (c Code) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return fmt.Sprintf("CODE_%d", int(c))
}

// classes are the error classes of the reference's exit-code table, by code.
var classes = map[Code]string{
	Usage: "UsageError", Configuration: "ConfigurationError", Metadata: "MetadataError", Graph: "GraphError",
	SelfDependency: "SelfDependencyError", DependencyCycle: "CycleError", UnknownTask: "UnknownTaskError",
	RunState: "RunStateError", RunRefused: "RunRefusedError", ConnectionTest: "ConnectionTestError",
	EngineDB: "EngineDbError", Migration: "MigrationError", LockTimeout: "LockTimeoutError", Handler: "HandlerError",
	Unexpected: "UnexpectedError", Cloning: "CloningError", RemoteUnsupported: "RemoteUnsupportedError",
	InjectedFault: "InjectedFaultError", StaleTransition: "StaleTransitionError", SQLGuard: "SqlGuardError",
	ResourceNotFound: "ResourceNotFoundError", ConfigFiles: "ConfigFilesError",
}

// Class returns the error class of an error carrying the code, such as
// MetadataError, as the HTTP API reports it; "" for the outcome codes (0, 1,
// 22 and 23), which no error carries.
func (c Code) Class() string { return classes[c] }

// Error is a domain error carrying its exit code.
type Error struct {
	Code Code
	Msg  string
	Err  error
}

// Error returns the message, followed by the cause when there is one.
func (e *Error) Error() string {
	switch {
	case e.Msg == "" && e.Err != nil:
		return e.Err.Error()
	case e.Err != nil:
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns a domain error with the code and a formatted message.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// Wrap returns a domain error with the code whose message is the formatted text
// followed by the cause's message. A nil cause gives nil.
func Wrap(code Code, err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: err}
}

// CodeOf returns the exit code an error carries: the code of the outermost
// domain error, or of the outermost error of the run log's vocabulary
// (records, a leaf that names no code: a *records.ReadError is ENGINE_DB, a
// *records.SelectionError RUN_STATE), whichever comes first; Unexpected when
// the error carries none. A nil error is Success.
func CodeOf(err error) Code {
	if err == nil {
		return Success
	}
	if code, ok := codeIn(err); ok {
		return code
	}
	return Unexpected
}

// codeIn finds the first error in err's tree, depth first as errors.As
// walks it, that carries a code.
func codeIn(err error) (Code, bool) {
	switch e := err.(type) {
	case *Error:
		return e.Code, true
	case *records.ReadError:
		return EngineDB, true
	case *records.SelectionError:
		return RunState, true
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			return codeIn(inner)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range u.Unwrap() {
			if code, ok := codeIn(inner); ok {
				return code, true
			}
		}
	}
	return 0, false
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool { return err != nil && CodeOf(err) == code }

// RequestFields are the fields of the requests domain packages take, in
// the words their errors and outcome texts name them: {reason} in a text
// is the reason field. Each front end writes them its own way: the command
// line as flags (Flag), an HTTP API as JSON names.
var RequestFields = []string{
	"pipeline", "task", "run_id", "run_key", "run_date", "reason", "force", "ignore_dependencies",
	"rerun", "with_downstream", "skip", "backfill", "init_only", "finalize_only", "rows", "stale",
	"new_run", "limit", "all", "since", "migrations_dir", "airflow_version", "offset", "before", "full",
	"accept_new_url", "out_of_order",
}

// RenderFields writes the request fields a text names as {field} (see
// RequestFields) as name writes them; other braces are left as they are.
func RenderFields(text string, name func(field string) string) string {
	if !strings.Contains(text, "{") {
		return text
	}
	pairs := make([]string, 0, 2*len(RequestFields))
	for _, f := range RequestFields {
		pairs = append(pairs, "{"+f+"}", name(f))
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// FieldError is a request refused because of its fields, such as a missing
// reason. Its text names each field as {field} (see RequestFields). Error
// writes the bare field names.
type FieldError struct {
	// Fields are the fields the text names, in order; the first is the one
	// at fault.
	Fields []string
	// Text is the message, with each field written {field}.
	Text string
}

// Fieldf returns a domain error with the code whose message names request
// fields as {field} (see FieldError).
func Fieldf(code Code, format string, args ...any) error {
	text := fmt.Sprintf(format, args...)
	var fields []string
	for rest := text; ; {
		_, after, ok := strings.Cut(rest, "{")
		if !ok {
			break
		}
		name, tail, ok := strings.Cut(after, "}")
		if !ok {
			break
		}
		if slices.Contains(RequestFields, name) {
			fields = append(fields, name)
		}
		rest = tail
	}
	return &Error{Code: code, Err: &FieldError{Fields: fields, Text: text}}
}

// Error writes the message with the bare field names.
func (e *FieldError) Error() string { return e.Render(func(f string) string { return f }) }

// Render writes the message with each field as name writes it.
func (e *FieldError) Render(name func(field string) string) string { return RenderFields(e.Text, name) }

// Flag is the command-line flag that sets a request field: --pipeline_code
// and --task_code for pipeline and task, else the field with dashes, such
// as --run-date for run_date.
func Flag(field string) string {
	switch field {
	case "pipeline", "task":
		return "--" + field + "_code"
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}

// Flags returns a text that names request fields as {field}, such as an
// outcome's detail, with the fields written as their flags.
func Flags(text string) string { return RenderFields(text, Flag) }

// Flagged returns err's message as the command line prints it: the request
// fields it names, in a FieldError or as {field} in any message, written as
// their flags.
func Flagged(err error) string {
	msg := err.Error()
	var fe *FieldError
	if errors.As(err, &fe) {
		msg = strings.Replace(msg, fe.Error(), fe.Text, 1)
	}
	return Flags(msg)
}

// Text returns err's message with the request fields it names kept as
// {field}, for a text that carries it on, such as an outcome's detail.
func Text(err error) string {
	msg := err.Error()
	var fe *FieldError
	if !errors.As(err, &fe) {
		return msg
	}
	return strings.Replace(msg, fe.Error(), fe.Text, 1)
}
