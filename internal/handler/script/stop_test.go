package script_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/run"
)

// gone reports, within a few seconds, whether process pid has ended (a
// zombie nobody reaped has ended too).
func gone(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		s := string(b)
		if f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// pids reads the pids a script wrote, one a line, waiting for want of them.
func pids(t *testing.T, path string, want int) []int {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		var out []int
		for _, f := range strings.Fields(string(b)) {
			n, err := strconv.Atoi(f)
			if err == nil {
				out = append(out, n)
			}
		}
		if len(out) >= want {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q, want %d pids", path, b, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hanging writes its pid (and, with children, its child's) to the file
// INPUT_PARAMS names and never returns; with stubborn it ignores SIGTERM.
const hanging = `
import os, signal, subprocess, time

def run(task):
    p = task.input_params
    if p.get("stubborn"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    pids = [os.getpid()]
    if p.get("children"):
        pids.append(subprocess.Popen(["sleep", "300"]).pid)
    with open(p["pids"] + ".tmp", "w") as f:
        f.write("\n".join(str(x) for x in pids) + "\n")
    os.rename(p["pids"] + ".tmp", p["pids"])
    print("waiting", flush=True)
    while True:
        time.sleep(0.1)
`

// A script that hangs past its time limit is killed, and so is one that
// started a child process and ignores SIGTERM: the attempts are TIMED_OUT,
// their pid is the one recorded on the attempt, and no process is left.
func TestTimeLimitKillsTheProcessGroup(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("hang.py", hanging)
		for _, c := range []struct{ code, params string }{
			{"sleeper", `{}`},
			{"parent", `{"children": true, "stubborn": true}`},
		} {
			path := filepath.Join(e.dir, c.code+".pids")
			params := strings.Replace(c.params, "{", `{"pids": "`+path+`", `, 1)
			params = strings.Replace(params, ", }", "}", 1)
			// Five seconds, not one: the limit runs from the process's
			// start, and a loaded machine can take seconds to start Python
			// and reach the pid file.
			e.task(c.code, "hang.py", map[string]string{"INPUT_PARAMS": params, "TASK_TIMEOUT_SECONDS": "5"})
		}
		out := e.run()
		want(t, "outcome", out.Status, run.RunFailed)
		for code, n := range map[string]int{"sleeper": 1, "parent": 2} {
			a := e.latest(code)
			want(t, code+" status", a.status, "TIMED_OUT")
			want(t, code+" ERROR_MESSAGE", a.message, "timed out after 5s and was stopped")
			ps := pids(t, filepath.Join(e.dir, code+".pids"), n)
			want(t, code+" recorded pid", a.pid, ps[0])
			for _, pid := range ps {
				if !gone(pid) {
					t.Fatalf("%s: process %d is still running", code, pid)
				}
			}
		}
	})
}

// Cancelling a run while its script runs stops the process group and
// records the attempt CANCELLED.
func TestCancelStopsTheScript(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("hang.py", hanging)
		path := filepath.Join(e.dir, "cancel.pids")
		e.task("held", "hang.py", map[string]string{"INPUT_PARAMS": `{"pids": "` + path + `", "children": true}`})
		done := make(chan run.Outcome, 1)
		go func() {
			out, _ := e.sup.RunPipeline(acting(), run.Request{PipelineCode: "P"})
			done <- out
		}()
		ps := pids(t, path, 2)
		if _, err := e.sup.Cancel(acting(), run.CancelRequest{PipelineCode: "P", Reason: "test"}); err != nil {
			t.Fatal(err)
		}
		select {
		case out := <-done:
			want(t, "outcome", out.Status, run.RunCancelled)
		case <-time.After(30 * time.Second):
			t.Fatalf("the run did not end after the cancel\n%s", e.supLog())
		}
		want(t, "status", e.latest("held").status, "CANCELLED")
		for _, pid := range ps {
			if !gone(pid) {
				t.Fatalf("process %d is still running", pid)
			}
		}
	})
}
