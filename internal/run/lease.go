package run

import (
	"context"
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

	"github.com/etl-craft/etl-craft/internal/exit"
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

// held are the run leases this process's supervisors hold now, by owner
// id. A reconciler of this process never releases one of them: its
// supervisor is alive and renews it, however late an Engine DB it waits on
// (another writer's lock, a machine short of CPU) makes the renewal.
var held sync.Map

// hold records that a supervisor of this process holds owner's run lease,
// until the returned func is called.
func hold(owner string) (drop func()) {
	held.Store(owner, struct{}{})
	return func() { held.Delete(owner) }
}

// holding reports whether a supervisor of this process holds owner's run
// lease now.
func holding(owner string) bool {
	_, ok := held.Load(owner)
	return ok
}

// keepRun renews owner's lease on the run every renewEvery until the
// returned func is called, which then gives the lease up if owner still
// holds it (a run that was ended meanwhile has no owner left to release).
func (s *Supervisor) keepRun(ctx context.Context, id int64, owner string) (stop func()) {
	ctx = context.WithoutCancel(ctx)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(s.renewEvery)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				if err := inTx(ctx, s.opts.DB, func(tx *wtx) error { return renewRun(ctx, tx, id, owner, time.Now()) }); err != nil {
					s.log.Warn("could not renew the run's lease; trying again", "pipeline_run_id", id, "error", err)
				}
			}
		}
	}()
	return func() {
		close(quit)
		<-done
		err := inTx(ctx, s.opts.DB, func(tx *wtx) error { return releaseRun(ctx, tx, id, owner) })
		if err != nil && !exit.Is(err, exit.StaleTransition) {
			s.log.Warn("could not give up the run's lease", "pipeline_run_id", id, "error", err)
		}
	}
}

// errEnded is processStart's answer for a process that has ended but was not
// yet reaped (a zombie).
var errEnded = errors.New("the process has ended")

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
		return "", errEnded
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

// Gone reports whether the process verifiably no longer runs: it is of this
// host, and its pid is free, names a process that has ended, or names
// another process (another start time: the pid was reused). A process that
// cannot be checked is never gone: one of another host, or one whose /proc
// entry cannot be read while its pid is taken (another user's process, with
// /proc mounted hidepid, answers kill(pid, 0) with EPERM).
func (p Process) Gone() bool {
	if p.Host != Self().Host || p.PID <= 0 || p.Start == "" {
		return false
	}
	start, err := processStart(p.PID)
	switch {
	case err == nil:
		return start != p.Start
	case errors.Is(err, errEnded):
		return true
	}
	return errors.Is(syscall.Kill(p.PID, 0), syscall.ESRCH)
}

// OwnedBySelf reports whether the owner id is a lease this process holds
// (see NewOwner).
func OwnedBySelf(owner string) bool { return ownerProcess(owner) == Self() }

// ownerProcess returns the process an owner id names
// (host:pid:process-start:<8 hex>, see NewOwner); an id of another form
// names no process, and its holder is then never Gone.
func ownerProcess(owner string) Process {
	parts := strings.Split(owner, ":")
	n := len(parts)
	if n < 4 {
		return Process{}
	}
	pid, err := strconv.Atoi(parts[n-3])
	if err != nil {
		return Process{}
	}
	return Process{Host: strings.Join(parts[:n-3], ":"), PID: pid, Start: parts[n-2]}
}

// takeable decides whether a lease held by the process p, read as ending at
// lease, may be taken away at now, and returns the time before which the
// lease must end for the fencing write to take it (the write checks that
// the lease is still the one read, so a holder that renewed keeps it). A
// holder that is Gone can renew no more, so its lease is taken at once. A
// lease of this host is taken once it has expired; one of another host,
// whose process cannot be checked from here, once it has been expired for
// grace more.
func takeable(p Process, lease, now time.Time, grace time.Duration) (before time.Time, ok bool) {
	switch {
	case p.Gone():
		return lease.Add(time.Second), true
	case p.Host != Self().Host:
		before = now.Add(-grace)
	default:
		before = now
	}
	return before, lease.Before(before)
}

// IsSelf reports whether p is this process.
func (p Process) IsSelf() bool { return p == Self() }

// stop ends a verified process of this host: SIGTERM, then SIGKILL when it
// outlives grace. The identity is checked before each signal, so a pid that
// was reused in the meantime is never signalled. A process that leads its
// own process group (a script's child process) is stopped with its group:
// the processes it started go with it.
func (p Process) stop(grace time.Duration) error {
	if !p.Alive() || p.IsSelf() {
		return nil
	}
	target := p.PID
	if g, err := syscall.Getpgid(p.PID); err == nil && g == p.PID {
		target = -p.PID
	}
	if err := syscall.Kill(target, syscall.SIGTERM); err != nil {
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
		return syscall.Kill(target, syscall.SIGKILL)
	}
	return nil
}
