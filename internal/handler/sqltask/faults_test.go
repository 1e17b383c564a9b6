package sqltask_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// childVariable carries a childSpec to the test binary run as a child
// process, which runs one attempt and exits: a ":kill" fault ends it as a
// crash would, with no cleanup at all.
const childVariable = "SQLTASK_TEST_CHILD"

// childSpec is the attempt a child process runs.
type childSpec struct {
	Warehouse  string // a DuckDB file, or a PostgreSQL URL
	Engine     string // the SQLite Engine DB file
	Params     map[string]string
	PipelineID int64
	RunID      int64
	TaskRun    int64
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(childVariable); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

// runChild runs the attempt of a childSpec and returns the exit status.
func runChild(text string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(text), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Kind: engine.SQLite, Path: spec.Engine})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer db.Close()
	opts := warehouse.Options{Kind: warehouse.DuckDB, Path: spec.Warehouse, Schema: "staging"}
	if strings.HasPrefix(spec.Warehouse, "postgres") {
		if opts, err = pgOptions(spec.Warehouse); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	task := &handler.Task{
		PipelineID: spec.PipelineID, PipelineRunID: spec.RunID, TaskRunID: spec.TaskRun, Params: spec.Params,
		Warehouse: func(ctx context.Context) (warehouse.Warehouse, func(), error) {
			w, err := warehouse.Open(ctx, opts)
			if err != nil {
				return nil, nil, err
			}
			return w, func() { w.Close() }, nil
		},
	}
	if _, err := sqltask.New(db).Run(ctx, task); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// child runs one attempt of a task in a child process with ETL_CRAFT_FAULT
// set to point and returns its exit status.
func (e *env) child(point string, p map[string]string) int {
	e.t.Helper()
	e.taskRun++
	spec := childSpec{Warehouse: e.opts.Path, Engine: e.db.Options().Path, Params: p,
		PipelineID: e.pipelineID, RunID: e.runID, TaskRun: e.taskRun}
	if e.opts.Kind == warehouse.Postgres {
		spec.Warehouse = e.pgURL
	}
	text, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childVariable+"="+string(text), fault.Variable+"="+point)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	if err != nil {
		e.t.Fatalf("running the child: %v\n%s", err, out)
	}
	return 0
}

// W21: a fault before or after publishing a replacement, raised or as a
// crash, leaves the target's rows (their ROW_IDs too), its definition and,
// on DuckDB, its ROW_ID sequence as they were, and no scratch table; the
// next run publishes. The targets are made by SETUP_TABLE (with a ROW_ID
// sequence or identity) and, for CREATE_TABLE replacing its own earlier
// table, by CREATE_TABLE.
func TestW21ReplacementSurvivesFaults(t *testing.T) {
	eachWarehouse(t, func(t *testing.T, e *env) {
		for _, c := range []struct{ action, setup string }{
			{"CREATE_TABLE", "SETUP_TABLE"}, {"OVERWRITE_TABLE", "SETUP_TABLE"}, {"CREATE_TABLE", "CREATE_TABLE"},
		} {
			for _, point := range []string{sqltask.FaultBeforePublish, sqltask.FaultAfterPublish} {
				e.exec("DROP TABLE IF EXISTS staging.orders")
				e.source("(1, 'old', 1)", "(2, 'old', 2)")
				e.must(params("SQL_ACTION", c.setup, "SETUP_FOR", c.action, "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc))
				task := params("SQL_ACTION", c.action, "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc, "SCHEMA_EVOLUTION", "true")
				e.must(task)
				const all = "SELECT id, name, row_id, task_run_id FROM staging.orders ORDER BY id"
				rows, columns, sequences := e.rows(all), e.columns("staging", "orders"), e.rowIDSequences()
				e.exec("DROP TABLE staging.src", "CREATE TABLE staging.src (id INTEGER, name VARCHAR, amount DECIMAL(10, 2), extra VARCHAR)",
					"INSERT INTO staging.src VALUES (2, 'new', 2, 'x'), (3, 'new', 3, 'y'), (4, 'new', 4, 'z')")
				task["SOURCE_SQL"] = "SELECT id, name, amount, extra FROM staging.src"
				kept := func(how string) {
					t.Helper()
					e.wantRows(all, rows...)
					if got := e.columns("staging", "orders"); got != columns {
						t.Fatalf("%s over %s %s at %s: columns %s, were %s", c.action, c.setup, how, point, got, columns)
					}
					if got := e.rowIDSequences(); got != sequences {
						t.Fatalf("%s over %s %s at %s: ROW_ID sequences %s, were %s", c.action, c.setup, how, point, got, sequences)
					}
					if n := e.scratchTables(); n != "0" {
						t.Fatalf("%s over %s %s at %s left %s scratch tables", c.action, c.setup, how, point, n)
					}
				}

				t.Setenv(fault.Variable, point)
				_, err := e.run(task)
				wantCode(t, err, 19, "injected fault at "+point)
				kept("raised")
				t.Setenv(fault.Variable, "")

				if status := e.child(point+":kill", task); status != fault.KilledStatus {
					t.Fatalf("the child exited %d, want %d", status, fault.KilledStatus)
				}
				kept("killed")

				wantCounts(t, e.must(task), "source=3 target=3 insert=3 update=- delete=- written=3")
				e.wantRows("SELECT id, name, extra FROM staging.orders ORDER BY id", "2 new x", "3 new y", "4 new z")
				if c.action == "CREATE_TABLE" {
					e.wantRows("SELECT COUNT(DISTINCT row_id), MIN(row_id), MAX(row_id) FROM staging.orders", "3 1 3")
					if got := e.rowIDSequences(); got != "" {
						t.Fatalf("CREATE_TABLE over %s left the ROW_ID sequences %s", c.setup, got)
					}
				}
			}
		}
	})
}

// W20: a failure names its step and target, logs the statement, keeps every
// target row and leaves no scratch table (a cast error mid-SELECT).
func TestW20FailureNamesItsStep(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)", "(2, 'b', 2)")
		task := params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc)
		e.must(task)
		task["SOURCE_SQL"] = "SELECT id, CAST(CASE WHEN id = 2 THEN 'two' ELSE '1' END AS INTEGER) AS n FROM staging.src"
		e.logs.Reset()
		_, err := e.run(task)
		wantCode(t, err, 15, "stage the SELECT failed for staging.orders")
		if !handler.Retryable(err) {
			t.Fatal("a database failure is not retryable")
		}
		logs := e.logs.String()
		if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "CASE WHEN id = 2") || !strings.Contains(logs, "the statement failed") {
			t.Fatalf("the statement was not logged at DEBUG:\n%s", logs)
		}
		e.wantRows("SELECT id, name FROM staging.orders ORDER BY id", "1 a", "2 b")
		if n := e.scratchTables(); n != "0" {
			t.Fatalf("%s scratch tables left", n)
		}
	})
}

// cancelAt is a log handler that cancels the attempt's context when the
// attempt starts the statement of a step.
type cancelAt struct {
	step   string
	cancel context.CancelFunc
}

func (c cancelAt) Enabled(context.Context, slog.Level) bool { return true }
func (c cancelAt) WithAttrs([]slog.Attr) slog.Handler       { return c }
func (c cancelAt) WithGroup(string) slog.Handler            { return c }
func (c cancelAt) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "step" && a.Value.String() == c.step {
			c.cancel()
		}
		return true
	})
	return nil
}

// A cancelled attempt stops at its next statement, is not retried, and
// leaves the target as it was.
func TestCancelledAttemptStops(t *testing.T) {
	t.Parallel()
	eachWarehouse(t, func(t *testing.T, e *env) {
		e.source("(1, 'a', 1)")
		e.must(params("SQL_ACTION", "SETUP_TABLE", "SETUP_FOR", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		task := e.task(params("SQL_ACTION", "APPEND_TABLE", "TARGET_OBJECT", "staging.orders", "SOURCE_SQL", selectSrc))
		task.Log = slog.New(cancelAt{step: "append the SELECT's rows", cancel: cancel})
		_, err := sqltask.New(e.db).Run(ctx, task)
		if !errors.Is(err, context.Canceled) || handler.Retryable(err) {
			t.Fatalf("got %v", err)
		}
		e.wantRows("SELECT COUNT(*) FROM staging.orders", "0")
	})
}

// A statement running on PostgreSQL stops when the attempt is cancelled.
func TestCancelStopsARunningStatement(t *testing.T) {
	t.Parallel()
	e := newEnv(t, warehouse.Postgres)
	e.source("(1, 'a', 1)")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := sqltask.New(e.db).Run(ctx, e.task(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", "staging.slow",
			"SOURCE_SQL", "SELECT id FROM staging.src, pg_sleep(300)")))
		done <- err
	}()
	for e.value("SELECT COUNT(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%pg_sleep(300)%' AND pid <> pg_backend_pid()") == "0" {
		select {
		case err := <-done:
			t.Fatalf("the attempt ended before it was cancelled: %v", err)
		default:
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if got := e.columns("staging", "slow"); got != "" {
		t.Fatalf("the cancelled CREATE_TABLE made %s", got)
	}
}
