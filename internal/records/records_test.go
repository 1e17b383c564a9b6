package records_test

import (
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
