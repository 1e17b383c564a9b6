package rules_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/rules"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The tests run the handler as the run engine does: real task runs in a
// real Engine DB of each dialect, and a real warehouse (a DuckDB file, a
// PostgreSQL database) holding staging.orders, the rules' target.

// env is one test's project: a warehouse, an Engine DB with pipeline P and
// its rules task check, and the runs made so far.
type env struct {
	t      *testing.T
	opts   warehouse.Options
	db     *engine.DB
	b      *pipelinetest.Builder
	pipeID int64
	taskID int64
}

// each runs body on every pair of warehouse (DuckDB, PostgreSQL) and Engine
// DB dialect (SQLite, PostgreSQL).
func each(t *testing.T, body func(t *testing.T, e *env)) {
	t.Helper()
	for _, kind := range []warehouse.Kind{warehouse.DuckDB, warehouse.Postgres} {
		for _, ek := range enginetest.Kinds {
			t.Run(string(kind)+"/"+string(ek), func(t *testing.T) { body(t, newEnv(t, kind, ek)) })
		}
	}
}

// newEnv makes the project; orders has the columns id, amount and
// pipeline_run_id.
func newEnv(t *testing.T, kind warehouse.Kind, ek engine.Kind) *env {
	t.Helper()
	e := &env{t: t}
	if kind == warehouse.DuckDB {
		e.opts = warehouse.Options{Kind: warehouse.DuckDB, Path: filepath.Join(t.TempDir(), "warehouse.duckdb"), Schema: "staging"}
	} else {
		u, err := url.Parse(enginetest.NewPGDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(u.Port())
		pw, _ := u.User.Password()
		e.opts = warehouse.Options{
			Kind: warehouse.Postgres, Host: u.Hostname(), Port: port, Database: strings.TrimPrefix(u.Path, "/"),
			User: u.User.Username(), Params: map[string]string{"sslmode": "disable"}, Schema: "staging",
			AuthMode: warehouse.AuthPassword, Password: func() (string, error) { return pw, nil },
		}
	}
	e.exec("CREATE SCHEMA staging",
		"CREATE TABLE staging.orders (id INTEGER, amount INTEGER, pipeline_run_id BIGINT)")
	e.db = pipelinetest.DB(t, ek)
	e.b = pipelinetest.New(t, e.db)
	e.pipeID = e.b.Pipeline("P", "FULL")
	e.taskID = e.b.Task("P", "check", pipeline.HandlerBusinessRules, nil)
	return e
}

// exec runs statements in the warehouse, committed.
func (e *env) exec(stmts ...string) {
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
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			e.t.Fatalf("%s: %v", s, err)
		}
	}
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

// rule registers an active rule on staging.orders keyed by id.
func (e *env) rule(name string, seq int, typ, sql string) {
	e.t.Helper()
	e.b.Exec(`INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
  BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER) VALUES ($1, $2, $3, $4, $5, 'id', 'staging.orders', $6)`,
		name, e.pipeID, e.taskID, sql, typ, seq)
}

// negative is a rule broken by the rows whose amount is below zero.
const negative = "SELECT 1 WHERE t.amount < 0"

// newRun starts a run of P with a task run of check and returns both ids.
func (e *env) newRun() (runID, taskRunID int64) {
	e.t.Helper()
	ctx := context.Background()
	err := e.db.Tx(ctx, func(tx *engine.Tx) error {
		// A pipeline has one run in progress at a time.
		if _, err := tx.ExecContext(ctx, "UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'SUCCESS', END_DATE = START_DATE WHERE PIPELINE_ID = $1 AND STATUS = 'IN-PROGRESS'",
			e.pipeID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS) VALUES ($1, 'IN-PROGRESS') RETURNING PIPELINE_RUN_ID",
			e.pipeID).Scan(&runID); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, "INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS) VALUES ($1, $2, 'IN-PROGRESS') RETURNING TASK_RUN_ID",
			e.taskID, runID).Scan(&taskRunID)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return runID, taskRunID
}

// mode is how an operator asked for an attempt.
type mode int

const (
	plain  mode = iota
	forced      // run --force
	rerun       // run --rerun
)

// attempt runs one attempt of check in the task run, as asked, with at most
// maxParallel rules at once.
func (e *env) attempt(runID, taskRunID int64, m mode, maxParallel int) (handler.Result, error) {
	t := &handler.Task{
		PipelineID: e.pipeID, PipelineRunID: runID, TaskRunID: taskRunID, AttemptNumber: 1,
		PipelineCode: "P", TaskCode: "check", RefreshType: "FULL", Force: m == forced, Rerun: m == rerun,
		RunDate: time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC), Log: slog.New(slog.DiscardHandler),
		Warehouse: func(ctx context.Context) (warehouse.Warehouse, func(), error) {
			w, err := warehouse.Open(ctx, e.opts)
			if err != nil {
				return nil, nil, err
			}
			return w, func() { w.Close() }, nil
		},
	}
	return rules.New(e.db, maxParallel).Run(context.Background(), t)
}

// must runs an attempt that must succeed and checks its counts.
func (e *env) must(runID, taskRunID int64, m mode, want string) handler.Result {
	e.t.Helper()
	r, err := e.attempt(runID, taskRunID, m, 4)
	if err != nil {
		e.t.Fatal(err)
	}
	if got := counts(r); got != want {
		e.t.Fatalf("counts %s, want %s", got, want)
	}
	return r
}

// counts shows a result's counts and reported values.
func counts(r handler.Result) string {
	s := fmt.Sprintf("insert=%d update=%d written=%d", *r.InsertCount, *r.UpdateCount, *r.RowsWritten)
	for _, rep := range r.Reported {
		s += " " + rep.Name + "=" + rep.Value
	}
	return s
}

// query returns the Engine DB rows of a query, their fields joined by
// spaces.
func (e *env) query(q string, args ...any) []string {
	e.t.Helper()
	rows, err := e.db.QueryContext(context.Background(), q, args...)
	if err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
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
			e.t.Fatal(err)
		}
		f := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			f[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(f, " "))
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// wantFlags fails the test unless the rules' active flags are want, as
// "rule key status" in that order.
func (e *env) wantFlags(want ...string) {
	e.t.Helper()
	got := e.query(`SELECT r.BUSINESS_RULE_NAME, s.BUSINESS_RULE_KEY, s.STATUS FROM AUD_BUSINESS_RULES_RESULTS s
JOIN CFG_BUSINESS_RULES r ON r.BUSINESS_RULE_ID = s.BUSINESS_RULE_ID
WHERE s.ACTIVE_FLAG = 'Y' AND s.END_DATE IS NULL ORDER BY 1, 2`)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		e.t.Fatalf("active flags\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wantCleared fails the test unless the cleared flags are want, as "rule
// key" in that order, each with its END_DATE.
func (e *env) wantCleared(want ...string) {
	e.t.Helper()
	got := e.query(`SELECT r.BUSINESS_RULE_NAME, s.BUSINESS_RULE_KEY FROM AUD_BUSINESS_RULES_RESULTS s
JOIN CFG_BUSINESS_RULES r ON r.BUSINESS_RULE_ID = s.BUSINESS_RULE_ID
WHERE s.ACTIVE_FLAG = 'N' AND s.END_DATE IS NOT NULL ORDER BY 1, 2`)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		e.t.Fatalf("cleared flags\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// runLog returns the rules' runs of a task run as "rule status", by rule
// name.
func (e *env) runLog(taskRunID int64) string {
	e.t.Helper()
	return strings.Join(e.query(`SELECT r.BUSINESS_RULE_NAME, l.STATUS FROM AUD_BUSINESS_RULES_RUN_LOG l
JOIN CFG_BUSINESS_RULES r ON r.BUSINESS_RULE_ID = l.BUSINESS_RULE_ID
WHERE l.TASK_RUN_ID = $1 AND (l.STATUS = 'IN-PROGRESS') = (l.END_DATE IS NULL) ORDER BY 1`, taskRunID), ", ")
}

// wantCode fails the test unless err carries the exit code and holds text.
func wantCode(t *testing.T, err error, code exit.Code, text string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want exit %d with %q", code, text)
	}
	if got := exit.CodeOf(err); got != code || !strings.Contains(err.Error(), text) {
		t.Fatalf("exit %d: %v\nwant exit %d with %q", got, err, code, text)
	}
}
