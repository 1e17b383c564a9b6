// Package exit owns the process exit codes of etl-craft and the typed errors
// that carry them. Domain packages return these errors; the cli package maps
// them to the process status.
package exit

import (
	"errors"
	"fmt"
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
}

// Codes lists every exit code in ascending order.
func Codes() []Code {
	out := make([]Code, 0, len(names))
	for c := Success; c <= ResourceNotFound; c++ {
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

// CodeOf returns the exit code an error carries: the outermost domain error's
// code, or Unexpected when the error carries none. A nil error is Success.
func CodeOf(err error) Code {
	if err == nil {
		return Success
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Unexpected
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool { return err != nil && CodeOf(err) == code }
