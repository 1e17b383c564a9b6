package run

import (
	"errors"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestGoneOnlyWhenVerified(t *testing.T) {
	t.Parallel()
	p, cmd, done := sleeper(t)
	initStart, err := processStart(1)
	if err != nil {
		t.Fatal(err)
	}
	reused, foreign := p, p
	reused.Start = "1"
	foreign.Host = "elsewhere.example"
	for _, c := range []struct {
		name string
		p    Process
		gone bool
	}{
		{"this process", Self(), false},
		{"a live process", p, false},
		{"a reused pid", reused, true},
		{"another host's process", foreign, false},
		{"a process of no pid", Process{Host: p.Host, Start: p.Start}, false},
		{"a process of no start", Process{Host: p.Host, PID: p.PID}, false},
		{"init", Process{Host: p.Host, PID: 1, Start: initStart}, false},
		{"init's pid reused", Process{Host: p.Host, PID: 1, Start: initStart + "0"}, true},
		{"a free pid", Process{Host: p.Host, PID: 99999999, Start: "1"}, true},
	} {
		if got := c.p.Gone(); got != c.gone {
			t.Errorf("%s %+v: gone %v, want %v", c.name, c.p, got, c.gone)
		}
	}
	cmd.Process.Kill()
	<-done
	if !p.Gone() {
		t.Error("a killed process is not gone")
	}
}

func TestAZombieIsGone(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	start, err := processStart(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := Process{Host: Self().Host, PID: cmd.Process.Pid, Start: start}
	cmd.Process.Kill()
	// Nobody waits for it yet: it stays a zombie.
	deadline := time.Now().Add(10 * time.Second)
	for _, err := processStart(p.PID); !errors.Is(err, errEnded); _, err = processStart(p.PID) {
		if time.Now().After(deadline) {
			t.Fatalf("the killed process did not end: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !p.Gone() {
		t.Error("a zombie is not gone")
	}
}

func TestOwnerIDsNameTheirProcess(t *testing.T) {
	t.Parallel()
	for owner, want := range map[string]Process{
		NewOwner():                    Self(),
		"etl-1:4321:98765:1f2e3d4c":   {Host: "etl-1", PID: 4321, Start: "98765"},
		"fe80::1:4321:98765:1f2e3d4c": {Host: "fe80::1", PID: 4321, Start: "98765"},
		"etl-1:pid:98765:1f2e3d4c":    {},
		"orchestrator":                {},
		"":                            {},
	} {
		if got := ownerProcess(owner); got != want {
			t.Errorf("owner %q names %+v, want %+v", owner, got, want)
		}
	}
}

// I13 §2: the leases of a live process of this host are kept however long
// they last; once it is gone its attempt is lost and its run released at
// once, both leases still live.
func TestTheLeasesOfAGoneProcessAreTakenAtOnce(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		l := newLedger(t, db)
		proc, cmd, done := sleeper(t)
		q, _ := l.runningAttempt(proc)
		owner := fmt.Sprintf("%s:%d:%s:0badc0de", proc.Host, proc.PID, proc.Start)
		l.exec("UPDATE AUD_PIPELINES_RUN_LOG SET OWNER_ID = $1 WHERE PIPELINE_RUN_ID = $2", owner, l.run)
		s := l.supervisor()
		if rec, err := s.Reconcile(l.ctx(), Scope{}); err != nil || len(rec.Lost) != 0 || len(rec.Released) != 0 {
			t.Fatalf("a live process lost its leases: %+v %v", rec, err)
		}
		cmd.Process.Kill()
		<-done
		rec, err := s.Reconcile(l.ctx(), Scope{PipelineCode: "P"})
		if err != nil || len(rec.Lost) != 1 || rec.Lost[0].AttemptID != q.AttemptID || rec.Lost[0].Stopped ||
			len(rec.Released) != 1 || rec.Released[0] != l.run {
			t.Fatalf("after the kill: %+v %v", rec, err)
		}
		if l.nullString("SELECT OWNER_ID FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", l.run).Valid {
			t.Fatal("the released run kept its owner")
		}
	})
}
