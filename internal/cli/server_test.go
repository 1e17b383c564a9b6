package cli_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// daemon is a server process of the built binary.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *strings.Builder
	done   chan struct{}
}

// startServer starts `etl-craft server` and waits until it is the overseer
// (it prints overseer_id=<id> started).
func startServer(t *testing.T, p *project) *daemon {
	t.Helper()
	cmd := p.command(nil, "server")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d := &daemon{t: t, cmd: cmd, stderr: &strings.Builder{}, done: make(chan struct{})}
	cmd.Stderr = d.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		started <- line
		io.Copy(io.Discard, out)
	}()
	go func() { cmd.Wait(); close(d.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-d.done })
	select {
	case line := <-started:
		if !strings.HasPrefix(line, "overseer_id=") {
			t.Fatalf("the server printed %q; stderr:\n%s", line, d.stderr)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not start; stderr:\n%s", d.stderr)
	}
	return d
}

// stop sends SIGTERM and returns the exit status.
func (d *daemon) stop() int {
	d.t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(90 * time.Second):
		d.t.Fatalf("the server did not stop; stderr:\n%s", d.stderr)
	}
	return d.cmd.ProcessState.ExitCode()
}

// kill ends the server as a crash would.
func (d *daemon) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.done
}

// orchestration adds settings to the Orchestration section.
func (p *project) orchestration(lines string) {
	p.t.Helper()
	b, err := os.ReadFile(p.dir + "/craft-connector.yml")
	if err != nil {
		p.t.Fatal(err)
	}
	p.write("craft-connector.yml", strings.Replace(string(b), "  Mode: local\n", "  Mode: local\n"+lines, 1))
}

// rows returns the query's rows, each as its columns joined by spaces.
func rows(t *testing.T, db *engine.DB, query string) []string {
	t.Helper()
	rs, err := db.QueryContext(t.Context(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	cols, _ := rs.Columns()
	var out []string
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

// I15: a daily schedule started five days ago with CATCHUP Y and
// MAX_CATCHUP_RUNS 2: the server queues and runs the two latest ticks,
// records the four older ones SKIPPED, and a restart records none again.
func TestServerRunsScheduledTicksWithCatchup(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.ok("init-db")
		start := time.Now().UTC().AddDate(0, 0, -5).Format(time.DateOnly)
		p.register("0001_sched", sqlPipeline("SCHED", createTable("load", "main.sched_t", "SELECT 1 AS id"))+
			fmt.Sprintf("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 0 * * *', SCHEDULE_TIMEZONE = 'UTC', SCHEDULE_START_DATE = '%s', "+
				"CATCHUP = 'Y', MAX_CATCHUP_RUNS = 2 WHERE PIPELINE_CODE = 'SCHED';\n", start))
		db := p.db()
		d := startServer(t, p)
		waitFor(t, db, 2, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'SUCCESS'")
		if code := d.stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, d.stderr)
		}
		today := time.Now().UTC()
		var want []string
		for i := 5; i >= 0; i-- {
			day := today.AddDate(0, 0, -i).Format(time.DateOnly)
			status := "SKIPPED"
			if i < 2 {
				status = "SUCCESS"
			}
			want = append(want, fmt.Sprintf("schedule:%sT00:00:00+00:00 %s SCHEDULE %s", day, day, status))
		}
		query := "SELECT RUN_KEY, CAST(RUN_DATE AS VARCHAR), TRIGGER_KIND, STATUS FROM AUD_PIPELINES_RUN_LOG ORDER BY RUN_KEY"
		if got := rows(t, db, query); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("runs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if got := rows(t, db, "SELECT DISTINCT REASON FROM AUD_RUN_INTERVENTIONS WHERE ACTION = 'NEW_RUN' ORDER BY REASON"); strings.Join(got, "|") !=
			"missed while no overseer was running|scheduled tick" {
			t.Fatalf("reasons %q", got)
		}
		if got := rows(t, db, "SELECT DISTINCT REQUESTED_BY_KIND FROM AUD_RUN_INTERVENTIONS"); strings.Join(got, "|") != "SCHEDULE" {
			t.Fatalf("interventions requested by %q", got)
		}
		if n := count(t, db, "SELECT count(*) FROM AUD_OVERSEERS WHERE STOPPED_AT IS NOT NULL AND STOPPED_BY IS NOT NULL"); n != 1 {
			t.Fatalf("%d stopped overseer rows", n)
		}

		// A restart creates none of these ticks again.
		d = startServer(t, p)
		time.Sleep(2 * time.Second)
		if code := d.stop(); code != 0 {
			t.Fatalf("the second server exited %d:\n%s", code, d.stderr)
		}
		if got := rows(t, db, query); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("runs after the restart:\n%s", strings.Join(got, "\n"))
		}
	})
}
