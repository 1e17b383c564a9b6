package script_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/script"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// The tests run real scripts with Debian's python3 (where python3-sqlalchemy
// installs; scripts/test.sh installs both) through a real supervisor: an
// Engine DB of each dialect and a warehouse (a DuckDB file, a PostgreSQL
// database) holding the schema staging.

// python is the interpreter the tests run.
const python = "/usr/bin/python3"

// env is one test's project.
type env struct {
	t      testing.TB
	dir    string // the project folder
	opts   warehouse.Options
	db     *engine.DB
	b      *pipelinetest.Builder
	sup    *run.Supervisor
	logs   *bytes.Buffer
	logDir string
	mu     sync.Mutex
}

// each runs body on every pair of warehouse and Engine DB dialect.
func each(t *testing.T, body func(t *testing.T, e *env)) {
	t.Helper()
	for _, kind := range []warehouse.Kind{warehouse.DuckDB, warehouse.Postgres} {
		for _, ek := range enginetest.Kinds {
			t.Run(string(kind)+"/"+string(ek), func(t *testing.T) {
				t.Parallel()
				body(t, newEnv(t, kind, ek))
			})
		}
	}
}

// newEnv makes the project: pipeline P registered, no task yet.
func newEnv(t testing.TB, kind warehouse.Kind, ek engine.Kind) *env {
	t.Helper()
	db := pipelinetest.DB(t, ek)
	where := filepath.Join(t.TempDir(), "warehouse.duckdb")
	if kind == warehouse.Postgres {
		where = enginetest.NewPGDatabase(t)
	}
	return newEnvOn(t, db, where)
}

// newEnvOn makes the project on the Engine DB db and the warehouse where
// (a DuckDB file, or a postgres:// URL), creating schema staging in it:
// pipeline P registered, no task yet.
func newEnvOn(t testing.TB, db *engine.DB, where string) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), logs: &bytes.Buffer{}, db: db}
	var err error
	if e.opts, err = warehouseOptions(where); err != nil {
		t.Fatal(err)
	}
	e.exec("CREATE SCHEMA staging")
	if err := os.Mkdir(filepath.Join(e.dir, "ingestion_scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.b = pipelinetest.New(t, e.db)
	e.b.Pipeline("P", "INCREMENTAL")
	e.logDir = filepath.Join(e.dir, "logs")
	e.sup = e.supervisor()
	return e
}

// warehouseOptions are those of a DuckDB file or a PostgreSQL URL, with
// the schema staging.
func warehouseOptions(where string) (warehouse.Options, error) {
	if !strings.HasPrefix(where, "postgres") {
		return warehouse.Options{Kind: warehouse.DuckDB, Path: where, Schema: "staging"}, nil
	}
	u, err := url.Parse(where)
	if err != nil {
		return warehouse.Options{}, err
	}
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	return warehouse.Options{
		Kind: warehouse.Postgres, Host: u.Hostname(), Port: port, Database: strings.TrimPrefix(u.Path, "/"),
		User: u.User.Username(), Params: map[string]string{"sslmode": "disable"}, Schema: "staging",
		AuthMode: warehouse.AuthPassword, Password: func() (string, error) { return pw, nil },
	}, nil
}

// supervisor returns a supervisor running PYTHON tasks with the handler.
func (e *env) supervisor() *run.Supervisor {
	wh := pool.New(e.db, e.opts)
	e.t.Cleanup(func() { wh.Close() })
	return run.New(run.Options{
		DB: e.db, Warehouse: wh, LogDir: e.logDir, ProjectDir: e.dir, Defaults: run.Defaults{TaskTimeout: time.Hour},
		Handlers: handler.Registry{pipeline.HandlerPython: script.New(e.db, script.Options{Python: python, Schema: "staging"})},
		Logger:   slog.New(slog.NewTextHandler(syncWriter{e}, nil)),
	})
}

// syncWriter writes to the env's log buffer under its lock.
type syncWriter struct{ e *env }

func (w syncWriter) Write(p []byte) (int, error) {
	w.e.mu.Lock()
	defer w.e.mu.Unlock()
	return w.e.logs.Write(p)
}

// script writes a script into ingestion_scripts/.
func (e *env) script(name, text string) {
	e.t.Helper()
	path := filepath.Join(e.dir, "ingestion_scripts", name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// task registers PYTHON task code of P running the script with params.
func (e *env) task(code, scriptName string, params map[string]string) int64 {
	e.t.Helper()
	p := map[string]string{"SCRIPT_NAME": scriptName}
	for k, v := range params {
		p[k] = v
	}
	return e.b.Task("P", code, pipeline.HandlerPython, p)
}

func acting() context.Context {
	return actor.With(context.Background(), actor.Actor{Name: "tester@host", Kind: actor.Human})
}

// run runs pipeline P (a fresh run unless one is in progress).
func (e *env) run() run.Outcome {
	e.t.Helper()
	return e.runCtx(acting())
}

func (e *env) runCtx(ctx context.Context) run.Outcome {
	e.t.Helper()
	out, err := e.sup.RunPipeline(ctx, run.Request{PipelineCode: "P", Force: true})
	if err != nil {
		e.t.Fatalf("run: %v\n%s", err, e.supLog())
	}
	return out
}

// supLog is the supervisor's log so far.
func (e *env) supLog() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logs.String()
}

// inWarehouse runs fn in a warehouse transaction, committed when fn
// returns.
func (e *env) inWarehouse(fn func(ctx context.Context, tx warehouse.Tx)) {
	e.t.Helper()
	ctx := context.Background()
	w, err := warehouse.Open(ctx, e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	defer w.Close()
	tx, err := w.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback()
	fn(ctx, tx)
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

// exec runs statements in the warehouse, committed.
func (e *env) exec(stmts ...string) {
	e.t.Helper()
	e.inWarehouse(func(ctx context.Context, tx warehouse.Tx) {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				e.t.Fatalf("%s: %v", s, err)
			}
		}
	})
}

// wh returns the warehouse rows of a query, fields joined by spaces.
func (e *env) wh(q string) (out []string) {
	e.t.Helper()
	e.inWarehouse(func(ctx context.Context, tx warehouse.Tx) {
		rows, err := tx.Query(ctx, q)
		if err != nil {
			e.t.Fatalf("%s: %v", q, err)
		}
		out = scan(e.t, rows)
	})
	return out
}

// engine returns the Engine DB rows of a query, fields joined by spaces.
func (e *env) engine(q string, args ...any) []string {
	e.t.Helper()
	rows, err := e.db.QueryContext(context.Background(), q, args...)
	if err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
	return scan(e.t, rows)
}

type sqlRows interface {
	Columns() ([]string, error)
	Next() bool
	Scan(...any) error
	Err() error
	Close() error
}

func scan(t testing.TB, rows sqlRows) []string {
	t.Helper()
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		f := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			if v == nil {
				v = "NULL"
			}
			f[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(f, " "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// attempt is the latest attempt of task code: status, error, and its log file.
type attempt struct {
	status, message, taskLog, log string
	pid                           int
}

func (e *env) latest(code string) attempt {
	e.t.Helper()
	var a attempt
	var msg, tl, path *string
	var pid *int64
	err := e.db.QueryRowContext(context.Background(), `SELECT a.STATUS, a.ERROR_MESSAGE, a.TASK_LOG, a.LOG_PATH, a.PID
		FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG r ON r.TASK_RUN_ID = a.TASK_RUN_ID
		JOIN CFG_TASKS t ON t.TASK_ID = r.TASK_ID WHERE t.TASK_CODE = $1 ORDER BY a.ATTEMPT_ID DESC LIMIT 1`, code).
		Scan(&a.status, &msg, &tl, &path, &pid)
	if err != nil {
		e.t.Fatal(err)
	}
	if msg != nil {
		a.message = *msg
	}
	if tl != nil {
		a.taskLog = *tl
	}
	if pid != nil {
		a.pid = int(*pid)
	}
	if path != nil {
		b, _ := os.ReadFile(*path)
		a.log = string(b)
	}
	return a
}

// offset is the task's stored offset as "TYPE value", "" when none, as
// script.StoredOffset reads it; it fails the test unless the
// AUD_TASK_OFFSET_TRACKER row says the same.
func (e *env) offset(taskID int64) string {
	e.t.Helper()
	got, err := script.StoredOffset(context.Background(), e.db, taskID)
	if err != nil {
		e.t.Fatal(err)
	}
	row := e.engine("SELECT OFFSET_TYPE, OFFSET_VALUE FROM AUD_TASK_OFFSET_TRACKER WHERE TASK_ID = $1", taskID)
	want(e.t, "StoredOffset against AUD_TASK_OFFSET_TRACKER", got, strings.Join(row, ","))
	return got
}

// want fails the test unless got equals want.
func want[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}
