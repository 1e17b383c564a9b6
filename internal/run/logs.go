package run

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/handler"
)

// TailBytes is how much of the end of an attempt's log is kept in TASK_LOG.
const TailBytes = 8 << 10

// attemptLog is the log file of one attempt,
// <Log_dir>/<PIPELINE>/run-<id>/<TASK>.attempt-<n>.log. Every record the
// engine and the handler write for the attempt goes there, tagged with the
// attempt's identities.
type attemptLog struct {
	path string
	file *os.File
	log  *slog.Logger
}

// logPath returns the log file of attempt n of a task under a run.
func logPath(dir, pipelineCode string, runID int64, taskCode string, n int) string {
	return filepath.Join(dir, pipelineCode, "run-"+strconv.FormatInt(runID, 10), fmt.Sprintf("%s.attempt-%d.log", taskCode, n))
}

// openAttemptLog creates the log's folder and opens the log for appending.
// The fault point supervisor.after_mkdir follows the folder.
func openAttemptLog(path string, t *handler.Task, level slog.Leveler) (*attemptLog, error) {
	folder := filepath.Dir(path)
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "could not create the log folder %s (Orchestration.Log_dir)", folder)
	}
	if err := fault.Point("supervisor.after_mkdir"); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "could not open the attempt log %s", path)
	}
	l := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level})).With(
		"pipeline", t.PipelineCode, "task", t.TaskCode, "pipeline_run_id", t.PipelineRunID,
		"task_run_id", t.TaskRunID, "attempt", t.AttemptNumber)
	return &attemptLog{path: path, file: f, log: l}, nil
}

// close closes the file.
func (l *attemptLog) close() { l.file.Close() }

// tail returns the last TailBytes of the log, from a line start, with
// invalid UTF-8 replaced.
func (l *attemptLog) tail() string {
	f := l.file
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	from := max(info.Size()-TailBytes, 0)
	b := make([]byte, info.Size()-from)
	if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
		return ""
	}
	s := string(b)
	if from > 0 {
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			s = s[i+1:]
		}
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// taskLog builds TASK_LOG: the values the handler reported, then the counts
// it returned, one `NAME = value` line each, a blank line, and the log tail.
func taskLog(r handler.Result, tail string) string {
	var b strings.Builder
	for _, v := range r.Reported {
		fmt.Fprintf(&b, "%s = %s\n", v.Name, v.Value)
	}
	counts := []struct {
		name  string
		value handler.Count
	}{
		{"SOURCE_COUNT", r.SourceCount}, {"TARGET_COUNT", r.TargetCount}, {"INSERT_COUNT", r.InsertCount},
		{"UPDATE_COUNT", r.UpdateCount}, {"DELETE_COUNT", r.DeleteCount}, {"ROWS_WRITTEN", r.RowsWritten},
	}
	for _, c := range counts {
		if c.value != nil {
			fmt.Fprintf(&b, "%s = %d\n", c.name, *c.value)
		}
	}
	if b.Len() > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(tail)
	return b.String()
}
