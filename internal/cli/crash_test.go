package cli_test

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

// I13 §2: a supervisor killed with SIGKILL leaves its run and its attempt
// held by a process that is gone from this host. Both reconcile and the next
// run fence them at once, without waiting for the leases to expire, and the
// run is resumed under its own id; a live supervisor keeps its run.
func TestAKilledSupervisorIsReconciledAtOnce(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p, w, db := gatedProject(t, kind)
		// supervise starts a run that holds its task "held" on the gate.
		supervise := func() *exec.Cmd {
			t.Helper()
			cmd := p.Command(nil, "run", "--pipeline_code", "KP")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			e2e.WaitFor(t, db, 1, runningHeld)
			return cmd
		}
		// kill ends the supervisor as a crash would, and the warehouse query
		// its backend would otherwise wait on forever.
		kill := func(cmd *exec.Cmd) {
			t.Helper()
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			e2e.MustExec(t, w, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%wait_for_gate%' AND pid <> pg_backend_pid()")
		}

		cmd := supervise()
		if r := p.OK("reconcile"); r.Stdout != "reconcile: 0 attempt(s) LOST, 0 run(s) released\n" {
			t.Fatalf("a live supervisor's work was reconciled: %q", r.Stdout)
		}
		e2e.WantExit(t, p.Run(nil, "run", "--pipeline_code", "KP"), 9, "is supervised by")
		kill(cmd)
		r := p.OK("reconcile", "--pipeline_code", "KP")
		if !strings.HasSuffix(r.Stdout, "RELEASED\tpipeline_run_id=1\nreconcile: 1 attempt(s) LOST, 1 run(s) released\n") ||
			!strings.Contains(r.Stdout, "LOST\tKP.held\t") {
			t.Fatalf("reconcile right after the kill: %q", r.Stdout)
		}
		owner := e2e.Scalar(t, db, "SELECT OWNER_ID FROM AUD_TASK_ATTEMPTS WHERE STATUS = 'LOST'")
		want := fmt.Sprintf("attempt 1 was lost: its owner %s ended before finishing it (process %d is gone)", owner, cmd.Process.Pid)
		if msg := e2e.Scalar(t, db, "SELECT ERROR_MESSAGE FROM AUD_TASK_RUN_LOG WHERE STATUS = 'FAILED'"); msg != want {
			t.Fatalf("summary %q, want %q", msg, want)
		}

		// The run resumed by a second supervisor, killed too: the next run
		// reconciles it by itself and finishes it.
		kill(supervise())
		e2e.MustExec(t, w, "UPDATE public.gate SET open = 1")
		if r := p.OK("run", "--pipeline_code", "KP"); r.Stdout != "KP: pipeline_run_id=1 SUCCESS\n" {
			t.Fatalf("the run after the second kill: %q", r.Stdout)
		}
		got := []string{attemptStatuses(t, db, 1, "first"), attemptStatuses(t, db, 1, "held"), attemptStatuses(t, db, 1, "last")}
		if fmt.Sprint(got) != "[SUCCESS LOST LOST SUCCESS SUCCESS]" || e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG") != 1 {
			t.Fatalf("attempts %q", got)
		}
	})
}
