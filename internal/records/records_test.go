package records_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/records"
)

func TestStatusesReadAsTheRunLogDoes(t *testing.T) {
	for s, ended := range map[records.RunStatus]bool{records.RunQueued: false, records.RunInProgress: false,
		records.RunSuccess: true, records.RunFailed: true, records.RunSkipped: true, records.RunCancelled: true} {
		if s.Ended() != ended {
			t.Errorf("%s: ended %v, want %v", s, s.Ended(), ended)
		}
	}
	want := map[records.AttemptStatus]records.TaskRunStatus{
		records.AttemptQueued: records.TaskInProgress, records.AttemptClaimed: records.TaskInProgress,
		records.AttemptRunning: records.TaskInProgress, records.AttemptSuccess: records.TaskSuccess,
		records.AttemptFailed: records.TaskFailed, records.AttemptTimedOut: records.TaskFailed,
		records.AttemptCancelled: records.TaskCancelled, records.AttemptLost: records.TaskFailed,
	}
	for a, s := range want {
		if got := a.Summary(); got != s {
			t.Errorf("attempt %s reads as %s, want %s", a, got, s)
		}
	}
	if got := records.SQLActiveAttempts; got != "'QUEUED', 'CLAIMED', 'RUNNING'" {
		t.Errorf("active attempts list %s", got)
	}
}

func TestTimeScansBothDialects(t *testing.T) {
	want := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	for _, v := range []any{want.In(time.FixedZone("x", 3600)), "2026-03-01 09:30:00+00:00", []byte("2026-03-01T09:30:00")} {
		var got records.Time
		if err := got.Scan(v); err != nil || !got.Valid || !got.Time.Equal(want) {
			t.Errorf("scan %v: %v %v", v, got, err)
		}
	}
	var null records.Time
	if err := null.Scan(nil); err != nil || null.Valid {
		t.Errorf("NULL: %v %v", null, err)
	}
}

// records is the shared vocabulary every package may import: it imports no
// package of etl-craft, the exit codes included (exit gives its errors
// their codes).
func TestRecordsIsALeaf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path := strings.Trim(imp.Path.Value, `"`); strings.Contains(path, ".") {
				t.Errorf("%s imports %s: records imports the standard library only", name, path)
			}
		}
	}
}
