package script

import (
	"bufio"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// StopGrace is how long a script's process group is given to end after
// SIGTERM before it is killed with SIGKILL.
const StopGrace = 3 * time.Second

// python is the etl_craft package the child imports, written once into
// packageDir.
//
//go:embed python/etl_craft/*.py
var python embed.FS

// child is the process running one attempt's script, in a process group of
// its own: reqs carries its requests, answers the engine's replies.
type child struct {
	cmd     *exec.Cmd
	reqs    *bufio.Reader
	reqFile *os.File
	answers *os.File
	exited  chan struct{}
	waitErr error
	logged  chan struct{} // closed once every output line is in the log
	out     *os.File
}

// startChild starts interpreter on the etl_craft runner in the scripts'
// folder, stdout and stderr both going, line by line and in the order they
// were written, to log.
func startChild(interpreter, scripts string, log *slog.Logger) (*child, error) {
	dir, err := packageDir()
	if err != nil {
		return nil, err
	}
	c := &child{exited: make(chan struct{}), logged: make(chan struct{})}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, exit.Wrap(exit.Handler, err, "could not make the script's pipes")
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, exit.Wrap(exit.Handler, err, "could not make the script's pipes")
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		for _, f := range []*os.File{reqR, reqW, ansR, ansW} {
			f.Close()
		}
		return nil, exit.Wrap(exit.Handler, err, "could not make the script's pipes")
	}
	cmd := exec.Command(interpreter, "-u", "-m", "etl_craft._main")
	cmd.Dir = scripts
	cmd.Env = append(os.Environ(), "PYTHONPATH="+pythonPath(dir), "ETL_CRAFT_PIPE_OUT=3", "ETL_CRAFT_PIPE_IN=4",
		"PYTHONDONTWRITEBYTECODE=1", "PYTHONIOENCODING=utf-8", "PYTHONUNBUFFERED=1")
	cmd.ExtraFiles = []*os.File{reqW, ansR}
	cmd.Stdout, cmd.Stderr = outW, outW
	// Its own process group, so that stopping the group stops what the
	// script started too; SIGKILL when this process dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	for _, f := range []*os.File{reqW, ansR, outW} {
		f.Close()
	}
	if err != nil {
		for _, f := range []*os.File{reqR, ansW, outR} {
			f.Close()
		}
		return nil, exit.Wrap(exit.Configuration, err, "could not start the Python interpreter %s (Orchestration.Python)", interpreter)
	}
	c.cmd, c.reqFile, c.answers, c.out = cmd, reqR, ansW, outR
	c.reqs = bufio.NewReaderSize(reqR, 1<<16)
	go func() {
		defer close(c.logged)
		r := bufio.NewReaderSize(outR, 64<<10)
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				log.Info(strings.TrimRight(line, "\r\n"), "source", "script")
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	return c, nil
}

// pythonPath puts the etl_craft package first on the child's PYTHONPATH.
func pythonPath(dir string) string {
	if p := os.Getenv("PYTHONPATH"); p != "" {
		return dir + string(os.PathListSeparator) + p
	}
	return dir
}

// pid is the child's pid, which is also its process group's id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// stop ends the child's process group: SIGTERM, then SIGKILL after grace
// when the script is still there, and SIGKILL again for whatever it left
// in the group once it ended.
func (c *child) stop(grace time.Duration) {
	syscall.Kill(-c.pid(), syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(grace):
	}
	syscall.Kill(-c.pid(), syscall.SIGKILL)
}

// end waits for the child to exit, kills what it left in its process group
// (logging that it did) and waits for its output to be logged. It returns
// how the process ended.
func (c *child) end(log *slog.Logger) error {
	<-c.exited
	if err := syscall.Kill(-c.pid(), syscall.SIGKILL); err == nil {
		log.Warn("the script left processes running in its process group; they were killed", "pgid", c.pid())
	}
	c.reqFile.Close()
	c.answers.Close()
	select {
	case <-c.logged:
	case <-time.After(StopGrace):
		// A process outside the group holds the output pipe.
		c.out.Close()
		<-c.logged
	}
	c.out.Close()
	return c.waitErr
}

// ended describes how a process that gave no result ended.
func ended(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed by " + signalName(ws.Signal())
		}
		return fmt.Sprintf("exited with status %d", ee.ExitCode())
	}
	if err != nil {
		return "ended: " + err.Error()
	}
	return "exited with status 0"
}

// signalName is a signal's name, such as SIGKILL.
func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGINT:
		return "SIGINT"
	}
	return s.String()
}
