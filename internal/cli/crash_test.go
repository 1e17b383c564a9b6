package cli_test

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// I13 §2: a supervisor killed with SIGKILL leaves its run and its attempt
// held by a process that is gone from this host. Both reconcile and the next
// run fence them at once, without waiting for the leases to expire, and the
// run is resumed under its own id; a live supervisor keeps its run.
func TestAKilledSupervisorIsReconciledAtOnce(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		// supervise starts a run that holds its task "held" on the gate.
		supervise := func() *exec.Cmd {
			t.Helper()
			cmd := p.command(nil, "run", "--pipeline_code", "KP")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, db, 1, runningHeld)
			return cmd
		}
		// kill ends the supervisor as a crash would, and the warehouse query
		// its backend would otherwise wait on forever.
		kill := func(cmd *exec.Cmd) {
			t.Helper()
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			mustExec(t, w, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%wait_for_gate%' AND pid <> pg_backend_pid()")
		}

		cmd := supervise()
		if r := p.ok("reconcile"); r.stdout != "reconcile: 0 attempt(s) LOST, 0 run(s) released\n" {
			t.Fatalf("a live supervisor's work was reconciled: %q", r.stdout)
		}
		wantExit(t, p.run(nil, "run", "--pipeline_code", "KP"), 9, "is supervised by")
		kill(cmd)
		r := p.ok("reconcile", "--pipeline_code", "KP")
		if !strings.HasSuffix(r.stdout, "RELEASED\tpipeline_run_id=1\nreconcile: 1 attempt(s) LOST, 1 run(s) released\n") ||
			!strings.Contains(r.stdout, "LOST\tKP.held\t") {
			t.Fatalf("reconcile right after the kill: %q", r.stdout)
		}
		owner := scalar(t, db, "SELECT OWNER_ID FROM AUD_TASK_ATTEMPTS WHERE STATUS = 'LOST'")
		want := fmt.Sprintf("attempt 1 was lost: its owner %s ended before finishing it (process %d is gone)", owner, cmd.Process.Pid)
		if msg := scalar(t, db, "SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE STATUS = 'FAILED'"); msg != want {
			t.Fatalf("summary %q, want %q", msg, want)
		}

		// The run resumed by a second supervisor, killed too: the next run
		// reconciles it by itself and finishes it.
		kill(supervise())
		mustExec(t, w, "UPDATE public.gate SET open = 1")
		if r := p.ok("run", "--pipeline_code", "KP"); r.stdout != "KP: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("the run after the second kill: %q", r.stdout)
		}
		got := []string{attemptStatuses(t, db, 1, "first"), attemptStatuses(t, db, 1, "held"), attemptStatuses(t, db, 1, "last")}
		if fmt.Sprint(got) != "[SUCCESS LOST LOST SUCCESS SUCCESS]" || count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG") != 1 {
			t.Fatalf("attempts %q", got)
		}
	})
}
