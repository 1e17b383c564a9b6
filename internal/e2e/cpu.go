package e2e

import (
	"syscall"
	"testing"
	"time"
)

// CPUTime is the CPU time this process has used, user and system: what a
// benchmark compares where the machine's load makes wall time too noisy.
func CPUTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
