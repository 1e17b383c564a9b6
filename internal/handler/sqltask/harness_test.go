package sqltask_test

import (
	"bytes"
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
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The tests run the handler as the run engine does, against a real DuckDB
// file and a real PostgreSQL database, with a SQLite Engine DB behind
// the handler. Every warehouse has the schema staging.

// env is one test's project: a warehouse, an Engine DB with pipeline P and
// a run of it, and a project folder for sql_files/.
type env struct {
	t          *testing.T
	opts       warehouse.Options
	db         *engine.DB
	b          *pipelinetest.Builder
	dir        string
	pipelineID int64
	runID      int64
	taskRun    int64
	refresh    string
	pgURL      string // the PostgreSQL warehouse's URL
	logs       bytes.Buffer
	log        *slog.Logger // every attempt's logger, at DEBUG into logs
}

// eachWarehouse runs body on a fresh DuckDB file and a fresh PostgreSQL
// database.
func eachWarehouse(t *testing.T, body func(t *testing.T, e *env)) {
	t.Helper()
	for _, kind := range []warehouse.Kind{warehouse.DuckDB, warehouse.Postgres} {
		t.Run(string(kind), func(t *testing.T) { body(t, newEnv(t, kind)) })
	}
}

func newEnv(t *testing.T, kind warehouse.Kind) *env {
	t.Helper()
	e := newEngineEnv(t, warehouse.Options{})
	if kind == warehouse.DuckDB {
		e.opts = warehouse.Options{Kind: warehouse.DuckDB, Path: filepath.Join(e.dir, "warehouse.duckdb"), Schema: "staging"}
	} else {
		e.pgURL = enginetest.NewPGDatabase(t)
		opts, err := pgOptions(e.pgURL)
		if err != nil {
			t.Fatal(err)
		}
		e.opts = opts
	}
	e.exec("CREATE SCHEMA staging")
	return e
}

// newEngineEnv returns an env writing to the warehouse opts opens, with a
// SQLite Engine DB holding pipeline P and a run of it.
func newEngineEnv(t *testing.T, opts warehouse.Options) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), refresh: "FULL", taskRun: 100, opts: opts}
	e.log = slog.New(slog.NewTextHandler(&e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.db = pipelinetest.DB(t, engine.SQLite)
	e.b = pipelinetest.New(t, e.db)
	e.pipelineID = e.b.Pipeline("P", "FULL")
	e.b.Exec("INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS) VALUES ($1, 'IN-PROGRESS')", e.pipelineID)
	e.db.QueryRowContext(context.Background(), "SELECT MAX(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG").Scan(&e.runID)
	return e
}

// pgOptions returns the warehouse options of a PostgreSQL test database URL.
func pgOptions(raw string) (warehouse.Options, error) {
	u, err := url.Parse(raw)
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

// open opens the warehouse; the test closes it.
func (e *env) open() warehouse.Warehouse {
	e.t.Helper()
	w, err := warehouse.Open(context.Background(), e.opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return w
}

// task returns an attempt of a task with the parameters, in a task run of
// its own unless the same one is asked for again.
func (e *env) task(params map[string]string) *handler.Task {
	e.taskRun++
	return e.attempt(e.taskRun, params)
}

// attempt returns an attempt of the given task run.
func (e *env) attempt(taskRun int64, params map[string]string) *handler.Task {
	return &handler.Task{
		PipelineID: e.pipelineID, PipelineRunID: e.runID, TaskRunID: taskRun, AttemptNumber: 1,
		PipelineCode: "P", TaskCode: "t", RefreshType: e.refresh,
		RunDate: time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC), Params: params, ProjectDir: e.dir,
		Log: e.log,
		Warehouse: func(ctx context.Context) (warehouse.Warehouse, func(), error) {
			w, err := warehouse.Open(ctx, e.opts)
			if err != nil {
				return nil, nil, err
			}
			return w, func() { w.Close() }, nil
		},
	}
}

// run runs one attempt of a task in a task run of its own.
func (e *env) run(params map[string]string) (handler.Result, error) {
	return sqltask.New(e.db).Run(context.Background(), e.task(params))
}

// must runs a task that must succeed.
func (e *env) must(params map[string]string) handler.Result {
	e.t.Helper()
	r, err := e.run(params)
	if err != nil {
		e.t.Fatalf("%s: %v", params["SQL_ACTION"], err)
	}
	return r
}

// inTx runs fn in a warehouse transaction, committed when fn returns.
func (e *env) inTx(fn func(ctx context.Context, tx warehouse.Tx)) {
	e.t.Helper()
	w := e.open()
	defer w.Close()
	ctx := context.Background()
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
	e.inTx(func(ctx context.Context, tx warehouse.Tx) {
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				e.t.Fatalf("%s: %v", s, err)
			}
		}
	})
}

// rows runs a query in the warehouse and returns its rows as text, NULL
// for NULL, the fields of a row joined by spaces.
func (e *env) rows(query string) []string {
	e.t.Helper()
	var out []string
	e.inTx(func(ctx context.Context, tx warehouse.Tx) {
		rows, err := tx.Query(ctx, query)
		if err != nil {
			e.t.Fatalf("%s: %v", query, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				e.t.Fatal(err)
			}
			out = append(out, rowText(vals))
		}
		if err := rows.Err(); err != nil {
			e.t.Fatal(err)
		}
	})
	return out
}

// rowText joins a row's values with spaces, NULL for NULL.
func rowText(vals []any) string {
	fields := make([]string, len(vals))
	for i, v := range vals {
		switch x := v.(type) {
		case nil:
			fields[i] = "NULL"
		case []byte:
			fields[i] = string(x)
		default:
			fields[i] = fmt.Sprint(x)
		}
	}
	return strings.Join(fields, " ")
}

// value runs a query returning one value, as text.
func (e *env) value(query string) string {
	e.t.Helper()
	rows := e.rows(query)
	if len(rows) != 1 {
		e.t.Fatalf("%s returned %d rows", query, len(rows))
	}
	return rows[0]
}

// columns returns a table's column names, upper-cased.
func (e *env) columns(schema, table string) string {
	e.t.Helper()
	w := e.open()
	defer w.Close()
	cols, err := w.Columns(context.Background(), schema, table)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = strings.ToUpper(c.Name)
	}
	return strings.Join(out, ",")
}

// scratchTables returns how many etl_stage_ tables the warehouse holds.
func (e *env) scratchTables() string {
	return e.value("SELECT COUNT(*) FROM information_schema.tables WHERE table_name LIKE 'etl_stage%'")
}

// rowIDSequences lists the ROW_ID sequences of a DuckDB warehouse (PostgreSQL
// identities go with their tables), comma-separated.
func (e *env) rowIDSequences() string {
	if e.opts.Kind != warehouse.DuckDB {
		return ""
	}
	return e.value("SELECT COALESCE(string_agg(sequence_name, ',' ORDER BY sequence_name), '') FROM duckdb_sequences() WHERE sequence_name LIKE '%row_id_seq'")
}

// counts shows a result's counts; - is NULL.
func counts(r handler.Result) string {
	show := func(c handler.Count) string {
		if c == nil {
			return "-"
		}
		return strconv.FormatInt(*c, 10)
	}
	return fmt.Sprintf("source=%s target=%s insert=%s update=%s delete=%s written=%s",
		show(r.SourceCount), show(r.TargetCount), show(r.InsertCount), show(r.UpdateCount), show(r.DeleteCount), show(r.RowsWritten))
}

// wantCounts fails the test unless the result has the counts.
func wantCounts(t *testing.T, r handler.Result, want string) {
	t.Helper()
	if got := counts(r); got != want {
		t.Fatalf("counts %s, want %s", got, want)
	}
}

// wantRows fails the test unless the query returns the rows.
func (e *env) wantRows(query string, want ...string) {
	e.t.Helper()
	got := e.rows(query)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		e.t.Fatalf("%s returned\n%s\nwant\n%s", query, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wantGuard fails the test unless err is a SQL guard error holding text.
func wantGuard(t *testing.T, err error, text string) {
	t.Helper()
	wantCode(t, err, 21, text)
}

// wantCode fails the test unless err carries the exit code and holds text.
func wantCode(t *testing.T, err error, code int, text string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want exit %d with %q", code, text)
	}
	if got := int(exit.CodeOf(err)); got != code || !strings.Contains(err.Error(), text) {
		t.Fatalf("exit %d: %v\nwant exit %d with %q", got, err, code, text)
	}
}

// params builds a parameter map from name, value pairs.
func params(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
