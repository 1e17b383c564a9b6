package exit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/etl-craft/etl-craft/internal/records"
)

func TestCodesAreTheReferenceTable(t *testing.T) {
	want := []string{"SUCCESS", "FAILURE", "USAGE", "CONFIGURATION", "METADATA", "GRAPH",
		"SELF_DEPENDENCY", "DEPENDENCY_CYCLE", "UNKNOWN_TASK", "RUN_STATE", "RUN_REFUSED",
		"CONNECTION_TEST", "ENGINE_DB", "MIGRATION", "LOCK_TIMEOUT", "HANDLER", "UNEXPECTED",
		"CLONING", "REMOTE_UNSUPPORTED", "INJECTED_FAULT", "STALE_TRANSITION", "SQL_GUARD",
		"INCOMPLETE", "WAITING", "RESOURCE_NOT_FOUND", "CONFIG_FILES"}
	codes := Codes()
	if len(codes) != len(want) {
		t.Fatalf("got %d codes, want %d", len(codes), len(want))
	}
	for i, c := range codes {
		if int(c) != i || c.String() != want[i] {
			t.Errorf("code %d = %s, want %d %s", int(c), c, i, want[i])
		}
	}
}

func TestCodeOfFollowsTheChain(t *testing.T) {
	base := Errorf(Migration, "0001_x.sql failed to apply")
	wrapped := fmt.Errorf("context: %w", base)
	if got := CodeOf(wrapped); got != Migration {
		t.Fatalf("CodeOf = %v", got)
	}
	if got := CodeOf(errors.New("plain")); got != Unexpected {
		t.Fatalf("plain error code = %v", got)
	}
	if got := CodeOf(nil); got != Success {
		t.Fatalf("nil code = %v", got)
	}
	if Wrap(EngineDB, nil, "x") != nil {
		t.Fatal("Wrap(nil) must be nil")
	}
	w := Wrap(EngineDB, errors.New("boom"), "opening %s", "db")
	if w.Error() != "opening db: boom" {
		t.Fatalf("message %q", w.Error())
	}
}

// The run log's errors carry no code of their own (records is a leaf): a
// failed read is ENGINE_DB and a run selection RUN_STATE, unless a domain
// error wraps them first.
func TestCodeOfGivesTheRunLogsErrorsTheirCodes(t *testing.T) {
	read := &records.ReadError{Table: "AUD_PIPELINES_RUN_LOG", Err: errors.New("disk I/O error")}
	sel := &records.SelectionError{Pipeline: "P"}
	for _, c := range []struct {
		err  error
		want Code
	}{
		{read, EngineDB},
		{fmt.Errorf("listing: %w", read), EngineDB},
		{sel, RunState},
		{errors.Join(errors.New("first"), sel), RunState},
		{Wrap(Handler, read, "the alert"), Handler},
		{&records.ReadError{Table: "T", Err: Errorf(LockTimeout, "busy")}, EngineDB},
	} {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("CodeOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
