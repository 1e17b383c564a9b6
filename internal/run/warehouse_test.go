package run

import (
	"context"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool/pooltest"
)

// eachWarehouse runs body on a fresh DuckDB file and a fresh PostgreSQL
// database, with the warehouse options and the schema tasks write to.
func eachWarehouse(t *testing.T, body func(t *testing.T, opts warehouse.Options, schema string)) {
	t.Run("duckdb", func(t *testing.T) {
		body(t, warehouse.Options{Kind: warehouse.DuckDB, Path: filepath.Join(t.TempDir(), "warehouse.duckdb"), Schema: "main"}, "main")
	})
	t.Run("postgres", func(t *testing.T) {
		body(t, pgWarehouseOptions(t, enginetest.NewPGDatabase(t)), "public")
	})
}

// pgWarehouseOptions returns the options of a PostgreSQL warehouse on the
// database of the URL, writing to its public schema.
func pgWarehouseOptions(t testing.TB, rawURL string) warehouse.Options {
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	return warehouse.Options{Kind: warehouse.Postgres, Host: u.Hostname(), Port: port, Database: strings.TrimPrefix(u.Path, "/"),
		User: u.User.Username(), Params: map[string]string{"sslmode": "disable"}, Schema: "public",
		AuthMode: warehouse.AuthPassword, Password: func() (string, error) { return pw, nil }}
}

// sqlFixture is a fixture whose supervisor runs SQL tasks on the warehouse.
func sqlFixture(t *testing.T, db *engine.DB, opts warehouse.Options) (*fixture, *pool.Pool) {
	f := newFixture(t, db)
	shared := pool.New(db, opts)
	t.Cleanup(func() { shared.Close() })
	f.opts.Handlers[pipeline.HandlerSQL] = sqltask.New(db)
	f.opts.Warehouse = shared
	return f, shared
}

func TestSQLTasksOnEachWarehouse(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		eachWarehouse(t, func(t *testing.T, wopts warehouse.Options, schema string) {
			f, shared := sqlFixture(t, db, wopts)
			pipe := "SALES_" + strings.ToUpper(string(wopts.Kind))
			f.b.Pipeline(pipe, "FULL")
			f.b.Task(pipe, "setup_orders", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "SETUP_TABLE", "SETUP_FOR": "APPEND_TABLE",
				"TARGET_OBJECT": schema + ".orders", "SOURCE_SQL": "SELECT 1 AS id"})
			f.b.Task(pipe, "append_orders", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "APPEND_TABLE",
				"TARGET_OBJECT": schema + ".orders", "SOURCE_SQL": "SELECT 2 AS id UNION ALL SELECT 3"})
			f.b.Task(pipe, "totals", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE",
				"TARGET_OBJECT": schema + ".totals", "SOURCE_SQL": "SELECT count(*) AS n FROM " + schema + ".orders"})
			f.b.Task(pipe, "broken", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE",
				"TARGET_OBJECT": schema + ".broken", "SOURCE_SQL": "SELECT * FROM " + schema + ".no_such_table"})
			f.b.Dep(pipe, "append_orders", pipe, "setup_orders", pipeline.Success)
			f.b.Dep(pipe, "totals", pipe, "append_orders", pipeline.HasData)
			out := f.runPipeline(pipe)
			got := f.statuses(out.RunID)
			if out.Status != RunFailed || got["setup_orders"] != TaskSuccess || got["append_orders"] != TaskSuccess ||
				got["totals"] != TaskSuccess || got["broken"] != TaskFailed {
				t.Fatalf("%q %v\n%s", out.String(), got, f.logs.String())
			}
			if n := pooltest.Value(t, shared, "SELECT n FROM "+schema+".totals"); n != "2" {
				t.Fatalf("totals %s", n)
			}
			var written int
			f.scalar(&written, `SELECT t.ROWS_WRITTEN FROM AUD_TASK_RUN_LOG t JOIN CFG_TASKS c ON c.TASK_ID = t.TASK_ID
				WHERE c.TASK_CODE = 'append_orders'`)
			if written != 2 {
				t.Fatalf("ROWS_WRITTEN %d", written)
			}
			f.b.Exec("UPDATE CFG_TASKS SET ACTIVE_FLAG = 'N' WHERE TASK_CODE = 'broken'")
			if out := f.runPipeline(pipe); out.Status != RunSuccess {
				t.Fatalf("%q", out.String())
			}
			if n := pooltest.Value(t, shared, "SELECT n FROM "+schema+".totals"); n != "4" {
				t.Fatalf("totals after the second run %s", n)
			}
		})
	})
}

func TestDuckDBWritersQueueOnTheWarehouseLock(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		opts := warehouse.Options{Kind: warehouse.DuckDB, Path: filepath.Join(t.TempDir(), "w.duckdb"), Schema: "main"}
		first, second := pool.New(db, opts), pool.New(db, opts)
		defer first.Close()
		defer second.Close()
		if err := first.Check(context.Background(), ""); err != nil {
			t.Fatalf("without cloning a DuckDB file is not tested: %v", err)
		}
		_, release, err := first.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_, again, err := first.Acquire(context.Background())
		if err != nil {
			t.Fatalf("attempts of one process share the file: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if _, _, err := second.Acquire(ctx); err == nil {
			t.Fatal("a second writer got the DuckDB file while the first held it")
		}
		release()
		again()
		_, done, err := second.Acquire(context.Background())
		if err != nil {
			t.Fatalf("the second writer after the first let go: %v", err)
		}
		done()
	})
}

func TestTheConnectionTestChecksTheCloneSchema(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.SQLite)
	opts := pgWarehouseOptions(t, enginetest.NewPGDatabase(t))
	shared := pool.New(db, opts)
	shared.CheckTarget = func(ctx context.Context, w warehouse.Warehouse, schema string) error {
		return clone.CheckTarget(ctx, db, opts.Kind, w, schema)
	}
	defer shared.Close()
	ctx := context.Background()
	if err := shared.Check(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if err := shared.Check(ctx, "public"); err != nil {
		t.Fatal(err)
	}
	err := shared.Check(ctx, "etl_mirrors")
	if err == nil || !strings.Contains(err.Error(), ".etl_mirrors does not exist: cloning copies the Engine DB into it") {
		t.Fatalf("missing clone schema: %v", err)
	}
}
