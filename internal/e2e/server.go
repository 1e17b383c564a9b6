package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Server is a running `etl-craft server` process of the built binary.
type Server struct {
	t    testing.TB
	cmd  *exec.Cmd
	errs *SyncBuffer
	done chan struct{}
	// API is the base URL of its HTTP API, such as http://127.0.0.1:41234.
	API string
	// OverseerID is the id it printed as the overseer.
	OverseerID string
}

// StartServer starts `etl-craft server` in the project with extra
// environment variables, and waits until it is the overseer and serves its
// API (it prints overseer_id=<id> started, then api=<url>). The process is
// killed when the test ends, if it still runs.
func (p *Project) StartServer(env ...string) *Server {
	p.T.Helper()
	return p.StartServerWith(env)
}

// StartServerWith is StartServer with extra arguments after `server`, such
// as a --log-level.
func (p *Project) StartServerWith(env []string, args ...string) *Server {
	p.T.Helper()
	t := p.T
	cmd := p.Command(env, append([]string{"server"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, cmd: cmd, errs: &SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started := make(chan [2]string, 1)
	go func() {
		r := bufio.NewReader(out)
		overseer, _ := r.ReadString('\n')
		api, _ := r.ReadString('\n')
		started <- [2]string{overseer, api}
		io.Copy(io.Discard, r)
	}()
	go func() { cmd.Wait(); close(s.done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-s.done })
	select {
	case lines := <-started:
		id, ok1 := strings.CutPrefix(strings.TrimSpace(lines[0]), "overseer_id=")
		api, ok2 := strings.CutPrefix(strings.TrimSpace(lines[1]), "api=")
		if !ok1 || !ok2 || !strings.HasPrefix(api, "http://") {
			t.Fatalf("the server printed %q; stderr:\n%s", lines[0]+lines[1], s.Stderr())
		}
		s.OverseerID, _, _ = strings.Cut(id, " ")
		s.API = api
	case <-time.After(Patience):
		t.Fatalf("the server did not start; stderr:\n%s", s.Stderr())
	}
	return s
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// CPUTime is the CPU time (user and system) the server has used so far,
// from /proc/<pid>/stat.
func (s *Server) CPUTime() time.Duration {
	s.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Pid()))
	if err != nil {
		s.t.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// utime and stime are fields 14 and 15, in clock ticks.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		s.t.Fatalf("/proc/%d/stat: %q", s.Pid(), data)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// clockTicks is the kernel's clock ticks a second (USER_HZ), the unit of
// /proc/<pid>/stat's times: 100 on Linux.
const clockTicks = 100

// ResidentKiB is the server's resident memory in KiB (VmRSS), 0 once it
// has ended.
func (s *Server) ResidentKiB() int64 { return s.Memory().Resident }

// Memory is a process's resident memory, in KiB, from /proc/<pid>/status.
type Memory struct {
	// Resident is all of it (VmRSS): Anonymous and File.
	Resident int64
	// Anonymous is the memory the process allocated (RssAnon): Go's heap
	// and stacks, and the C libraries' (DuckDB's, SQLite's) allocations.
	Anonymous int64
	// File is the files' pages mapped in (RssFile): the executable's code
	// and the SQLite Engine DB's mapped pages, which are the operating
	// system's cache of the file.
	File int64
}

// Memory is the server's resident memory, zero once it has ended.
func (s *Server) Memory() Memory {
	s.t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Pid()))
	if err != nil {
		return Memory{}
	}
	var m Memory
	fields := map[string]*int64{"VmRSS:": &m.Resident, "RssAnon:": &m.Anonymous, "RssFile:": &m.File}
	for line := range strings.Lines(string(data)) {
		name, v, _ := strings.Cut(line, "\t")
		if field := fields[name]; field != nil {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				s.t.Fatalf("/proc/%d/status: %q", s.Pid(), line)
			}
			*field = kib
		}
	}
	return m
}

// Stderr is what the server wrote to stderr so far: its log.
func (s *Server) Stderr() string { return s.errs.String() }

// Stop sends SIGTERM, waits for the process to end, and returns its exit
// status.
func (s *Server) Stop() int {
	s.t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(Patience):
		s.t.Fatalf("the server did not stop; stderr:\n%s", s.Stderr())
	}
	return s.cmd.ProcessState.ExitCode()
}

// Kill ends the server as a crash would (SIGKILL) and waits for it.
func (s *Server) Kill() {
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

// Exited reports whether the process has ended.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Call sends a request to the API path (under /api/v1) with the bearer
// token (none when empty) and a JSON body (none when empty), and returns
// the status and the decoded JSON document (nil when the body is not one).
func (s *Server) Call(token, method, path, body string) (int, map[string]any) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.API+"/api/v1"+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

// Trigger asks the server to run the pipeline (POST
// /pipelines/{code}/runs) with an operator's token, and returns the run's
// id; anything but 202 fails the test.
func (s *Server) Trigger(token, pipeline string) int64 {
	s.t.Helper()
	code, doc := s.Call(token, http.MethodPost, "/pipelines/"+pipeline+"/runs", `{"reason": "e2e"}`)
	id, _ := doc["pipeline_run_id"].(float64)
	if code != http.StatusAccepted || id == 0 {
		s.t.Fatalf("triggering %s: %d %v", pipeline, code, doc)
	}
	return int64(id)
}

// Token creates an API token of the role with `etl-craft token create` and
// returns its value.
func (p *Project) Token(name, role string) string {
	p.T.Helper()
	r := p.OK("token", "create", "--name", name, "--role", role, "--format", "json")
	var doc struct {
		Value string `json:"value"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.Value == "" {
		p.T.Fatalf("token create: %v %q", err, r.Stdout)
	}
	return doc.Value
}

// SyncBuffer is a buffer a running process writes while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// String describes the server for failure messages.
func (s *Server) String() string { return fmt.Sprintf("etl-craft server pid %d (%s)", s.Pid(), s.API) }
