package run

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Lease timing: a run or attempt lease lasts LeaseDuration and its holder
// renews it every RenewEvery. Another host's attempt is declared lost only
// after ForeignGrace more, since its process cannot be checked from here.
const (
	LeaseDuration = 60 * time.Second
	RenewEvery    = 15 * time.Second
	ForeignGrace  = 2 * LeaseDuration
	// StopGrace is how long a stuck process is given to end after SIGTERM
	// before it is killed, and how long an attempt's work is given to stop
	// after its context ends.
	StopGrace = 10 * time.Second
)

// Process identifies one operating-system process: its host, pid and start
// time (clock ticks after boot, from /proc/<pid>/stat), so a reused pid is
// never mistaken for the process that once had it.
type Process struct {
	Host  string
	PID   int
	Start string
}

var (
	selfOnce sync.Once
	self     Process
)

// Self returns this process's identity.
func Self() Process {
	selfOnce.Do(func() {
		host, _ := os.Hostname()
		if host == "" {
			host = "localhost"
		}
		pid := os.Getpid()
		start, _ := processStart(pid)
		self = Process{Host: host, PID: pid, Start: start}
	})
	return self
}

// NewOwner returns a fresh owner id for a lease held by this process:
// host:pid:process-start:<8 hex>. Every lease gets its own, so two holders in
// one process are told apart.
func NewOwner() string {
	p := Self()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s:%d:%s:%s", p.Host, p.PID, p.Start, hex.EncodeToString(b))
}

// processStart reads a process's start time, in clock ticks after boot, from
// /proc/<pid>/stat. A missing process is an error.
func processStart(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", errors.New("unreadable /proc stat line")
	}
	fields := strings.Fields(s[i+1:])
	// Fields after the name start at field 3 (the state); starttime is field 22.
	if len(fields) < 20 {
		return "", errors.New("short /proc stat line")
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return "", errors.New("the process has ended")
	}
	return fields[19], nil
}

// Alive reports whether the process still runs: same pid and the same start
// time. A process on another host cannot be checked and is never alive here.
func (p Process) Alive() bool {
	if p.Host != Self().Host || p.PID <= 0 || p.Start == "" {
		return false
	}
	start, err := processStart(p.PID)
	return err == nil && start == p.Start
}

// IsSelf reports whether p is this process.
func (p Process) IsSelf() bool { return p == Self() }

// stop ends a verified process of this host: SIGTERM, then SIGKILL when it
// outlives grace. The identity is checked before each signal, so a pid that
// was reused in the meantime is never signalled.
func (p Process) stop(grace time.Duration) error {
	if !p.Alive() || p.IsSelf() {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil {
		return err
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.Alive() {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	if p.Alive() {
		return syscall.Kill(p.PID, syscall.SIGKILL)
	}
	return nil
}
