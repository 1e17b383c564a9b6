package run

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// behaviour is the task parameter that tells the test handler what to do.
const behaviour = "BEHAVIOUR"

// testHandler behaves as its task's BEHAVIOUR parameter says:
//
//	succeed  counts 10/9/7, ROWS_WRITTEN from ROWS (default 7)
//	fail     a handler error "the source file is missing"
//	retry    fails while the attempt number is at most FAILURES (default 1)
//	guard    a SQL guard error, never retried
//	sleep    waits until its context ends
//	block    waits until the test releases the task, then succeeds
//	stall    on attempt 1 waits until its context ends; later attempts succeed
//	panic    panics
//	fail_on  fails when the run's date is FAIL_DATE, else succeeds
type testHandler struct {
	mu       sync.Mutex
	started  chan string
	release  map[string]chan struct{}
	active   int
	peak     int
	attempts map[string]int
}

func newTestHandler() *testHandler {
	return &testHandler{started: make(chan string, 256), release: map[string]chan struct{}{}, attempts: map[string]int{}}
}

// gate returns the channel that releases a blocked task.
func (h *testHandler) gate(task string) chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.release[task]
	if !ok {
		c = make(chan struct{})
		h.release[task] = c
	}
	return c
}

func (h *testHandler) Run(ctx context.Context, t *handler.Task) (handler.Result, error) {
	h.mu.Lock()
	h.active++
	h.peak = max(h.peak, h.active)
	h.attempts[t.TaskCode]++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.active--
		h.mu.Unlock()
	}()
	t.Log.Info("hello from the test handler")
	h.started <- t.TaskCode
	rows := int64(7)
	if v, ok := t.Params["ROWS"]; ok {
		rows, _ = strconv.ParseInt(v, 10, 64)
	}
	ok := handler.Result{SourceCount: handler.Int(10), TargetCount: handler.Int(9), InsertCount: handler.Int(7),
		RowsWritten: handler.Int(rows)}
	switch t.Params[behaviour] {
	case "fail":
		return handler.Result{}, exit.Errorf(exit.Handler, "the source file is missing")
	case "retry":
		n := 1
		if v, ok := t.Params["FAILURES"]; ok {
			n, _ = strconv.Atoi(v)
		}
		if t.AttemptNumber <= n {
			return handler.Result{}, exit.Errorf(exit.Handler, "attempt %d fails on purpose", t.AttemptNumber)
		}
	case "guard":
		return handler.Result{}, exit.Errorf(exit.SQLGuard, "MERGE_KEY has NULL values")
	case "sleep":
		<-ctx.Done()
		return handler.Result{}, ctx.Err()
	case "stall":
		if t.AttemptNumber == 1 {
			<-ctx.Done()
			return handler.Result{}, ctx.Err()
		}
	case "block":
		select {
		case <-h.gate(t.TaskCode):
		case <-ctx.Done():
			return handler.Result{}, ctx.Err()
		}
	case "panic":
		panic("an unexpected value")
	case "fail_on":
		if t.RunDate.Format(time.DateOnly) == t.Params["FAIL_DATE"] {
			return handler.Result{}, exit.Errorf(exit.Handler, "no data for %s", t.Params["FAIL_DATE"])
		}
	}
	return ok, nil
}

func (h *testHandler) Check(*handler.Task) ([]string, []string) { return nil, nil }

// waitStarted waits until the task's handler has started.
func (h *testHandler) waitStarted(t *testing.T, task string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case c := <-h.started:
			if c == task {
				return
			}
		case <-deadline:
			t.Fatalf("task %s never started", task)
		}
	}
}

// fixture is an initialized Engine DB with a metadata builder, the test
// handler registered for PYTHON and EMAIL_ALERT tasks, and a supervisor.
type fixture struct {
	t    *testing.T
	db   *engine.DB
	b    *pipelinetest.Builder
	h    *testHandler
	opts Options
	logs *e2e.SyncBuffer
}

func newFixture(t *testing.T, db *engine.DB) *fixture {
	f := &fixture{t: t, db: db, b: pipelinetest.New(t, db), h: newTestHandler(), logs: &e2e.SyncBuffer{}}
	f.opts = Options{
		DB:       db,
		Handlers: handler.Registry{pipeline.HandlerPython: f.h, pipeline.HandlerEmailAlert: f.h},
		LogDir:   t.TempDir(),
		Defaults: Defaults{TaskTimeout: time.Hour},
		Logger:   slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	return f
}

// supervisor returns a supervisor of the fixture's options.
func (f *fixture) supervisor() *Supervisor { return New(f.opts) }

// ctx returns a context carrying a human actor.
func (f *fixture) ctx() context.Context {
	return actor.With(context.Background(), actor.Actor{Name: "tester@host", Kind: actor.Human})
}

// task registers a PYTHON task with the behaviour and parameters given as
// name, value pairs.
func (f *fixture) task(pipe, code, behave string, params ...string) int64 {
	f.t.Helper()
	p := map[string]string{behaviour: behave}
	for i := 0; i+1 < len(params); i += 2 {
		p[params[i]] = params[i+1]
	}
	return f.b.Task(pipe, code, pipeline.HandlerPython, p)
}

// runPipeline runs the pipeline and fails the test on an error.
func (f *fixture) runPipeline(code string) Outcome {
	f.t.Helper()
	out, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: code})
	if err != nil {
		f.t.Fatalf("run %s: %v\nlog:\n%s", code, err, f.logs.String())
	}
	return out
}

// column reads the first column of every row as text.
func (f *fixture) column(query string, args ...any) []string {
	f.t.Helper()
	rows, err := f.db.QueryContext(context.Background(), query, args...)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// statuses returns the task-run status of each task code under the run.
func (f *fixture) statuses(runID int64) map[string]string {
	f.t.Helper()
	out := map[string]string{}
	for _, row := range f.column(`SELECT c.TASK_CODE || ' ' || t.STATUS FROM AUD_TASK_RUN_LOG t
		JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID WHERE t.PIPELINE_RUN_ID = $1`, runID) {
		code, status, _ := strings.Cut(row, " ")
		out[code] = status
	}
	return out
}

// attempts returns the statuses of a task's attempts under the run, in order.
func (f *fixture) attempts(runID int64, task string) []string {
	f.t.Helper()
	return f.column(`SELECT a.STATUS FROM AUD_TASK_ATTEMPTS a
		JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID
		WHERE t.PIPELINE_RUN_ID = $1 AND c.TASK_CODE = $2 ORDER BY a.ATTEMPT_NUMBER`, runID, task)
}

// scalar reads one value.
func (f *fixture) scalar(dest any, query string, args ...any) {
	f.t.Helper()
	if err := f.db.QueryRowContext(context.Background(), query, args...).Scan(dest); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
}

// count reads a count.
func (f *fixture) count(query string, args ...any) int {
	f.t.Helper()
	var n int
	f.scalar(&n, query, args...)
	return n
}

// exec runs a statement in an engine transaction.
func (f *fixture) exec(query string, args ...any) {
	f.t.Helper()
	if err := inTx(f.ctx(), f.db, func(tx *wtx) error {
		_, err := tx.ExecContext(context.Background(), query, args...)
		return err
	}); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
}

// expire moves every lease of the run and its attempts into the past, as if
// its holders had stopped renewing them long ago.
func (f *fixture) expire(runID int64, ago time.Duration) {
	f.t.Helper()
	past := f.db.TimeArg(time.Now().Add(-ago))
	f.exec(`UPDATE AUD_TASK_ATTEMPTS SET LEASE_EXPIRES_AT = $1 WHERE STATUS IN ('CLAIMED', 'RUNNING')
		AND TASK_RUN_ID IN (SELECT TASK_RUN_ID FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $2)`, past, runID)
	f.exec(`UPDATE AUD_PIPELINES_RUN_LOG SET LEASE_EXPIRES_AT = $1 WHERE PIPELINE_RUN_ID = $2 AND OWNER_ID IS NOT NULL`, past, runID)
}

// tx runs fn in an engine transaction and returns its error.
func (f *fixture) tx(fn func(tx *wtx) error) error {
	return inTx(f.ctx(), f.db, fn)
}

// wantCode fails unless err carries the code and, when given, contains text.
func wantCode(t *testing.T, err error, code exit.Code, text string) {
	t.Helper()
	if exit.CodeOf(err) != code {
		t.Fatalf("error %v has code %d, want %d", err, exit.CodeOf(err), code)
	}
	if text != "" && (err == nil || !bytes.Contains([]byte(exit.Flagged(err)), []byte(text))) {
		t.Fatalf("error %q does not contain %q", err, text)
	}
}

// nullString reads a nullable text column.
func (f *fixture) nullString(query string, args ...any) sql.NullString {
	f.t.Helper()
	var s sql.NullString
	f.scalar(&s, query, args...)
	return s
}

// runIDs returns the pipeline's run ids in order.
func (f *fixture) runIDs(pipe string) []string {
	f.t.Helper()
	return f.column(`SELECT CAST(PIPELINE_RUN_ID AS VARCHAR) FROM AUD_PIPELINES_RUN_LOG
		WHERE PIPELINE_ID = $1 ORDER BY PIPELINE_RUN_ID`, f.b.PipelineID(pipe))
}

// wantRuns fails the test unless the Engine DB holds n runs.
func (f *fixture) wantRuns(n int) {
	f.t.Helper()
	if got := f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"); got != n {
		f.t.Fatalf("%d runs, want %d", got, n)
	}
}

func fmtList(s []string) string { return fmt.Sprint(s) }

// testClock is a gate clock whose sleeps take no time: each moves its time
// on by the sleep's length, after calling onSleep (with the sleep's number,
// from 1), whose error stops the sleep as an interruption would.
type testClock struct {
	mu      sync.Mutex
	now     time.Time
	sleeps  int
	onSleep func(n int) error
}

func newTestClock(now time.Time, onSleep func(n int) error) *testClock {
	return &testClock{now: now, onSleep: onSleep}
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps++
	n := c.sleeps
	c.mu.Unlock()
	if c.onSleep != nil {
		if err := c.onSleep(n); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

// supervisorWith returns a supervisor of the fixture's options changed by
// change.
func (f *fixture) supervisorWith(change func(o *Options)) *Supervisor {
	o := f.opts
	change(&o)
	return New(o)
}

// interventions returns the run's interventions in order, each as
// "ACTION task from>to reason by kind" ("-" for what is NULL).
func (f *fixture) interventions(runID int64) []string {
	f.t.Helper()
	return f.column(`SELECT i.ACTION || ' ' || COALESCE(c.TASK_CODE, '-') || ' ' || COALESCE(i.FROM_STATUS, '-') || '>' ||
			COALESCE(i.TO_STATUS, '-') || ' ' || i.REASON || ' by ' || i.REQUESTED_BY || ' ' || COALESCE(i.REQUESTED_BY_KIND, '-')
		FROM AUD_RUN_INTERVENTIONS i LEFT JOIN CFG_TASKS c ON c.TASK_ID = i.TASK_ID
		WHERE i.PIPELINE_RUN_ID = $1 ORDER BY i.INTERVENTION_ID`, runID)
}

// decisions returns the run's gate decisions in order, each as
// "RESULT selected-run/revision attempt?" ("-" for what is NULL).
func (f *fixture) decisions(runID int64) []string {
	f.t.Helper()
	return f.column(`SELECT RESULT || ' ' || COALESCE(CAST(SELECTED_PIPELINE_RUN_ID AS VARCHAR), '-') || '/' ||
			COALESCE(CAST(SELECTED_REVISION AS VARCHAR), '-') || ' ' || CASE WHEN ATTEMPT_ID IS NULL THEN 'run' ELSE 'attempt' END
		FROM AUD_GATE_DECISIONS WHERE PIPELINE_RUN_ID = $1 ORDER BY DECISION_ID`, runID)
}

// consumed returns what the pipeline's runs consumed, in order, each as
// "upstream-run/revision".
func (f *fixture) consumed(pipe string) []string {
	f.t.Helper()
	return f.column(`SELECT CAST(CONSUMED_PIPELINE_RUN_ID AS VARCHAR) || '/' || CAST(CONSUMED_REVISION AS VARCHAR)
		FROM AUD_DEPENDENCY_CONSUMPTION WHERE PIPELINE_ID = $1 ORDER BY CONSUMPTION_ID`, f.b.PipelineID(pipe))
}

// setBehaviour changes a task's BEHAVIOUR parameter.
func (f *fixture) setBehaviour(pipe, task, behave string) {
	f.t.Helper()
	f.b.Exec("UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = $1 WHERE TASK_ID = $2 AND PARAMETER_NAME = $3",
		behave, f.b.TaskID(pipe, task), behaviour)
}

// runStatus returns a run's status.
func (f *fixture) runStatus(runID int64) string {
	f.t.Helper()
	var s string
	f.scalar(&s, "SELECT STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", runID)
	return s
}
