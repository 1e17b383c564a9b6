package script_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/script"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// block returns the first fenced block of the language after a heading.
func block(t *testing.T, doc, heading, lang string) string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, heading)
	if !ok {
		t.Fatalf("no %q", heading)
	}
	_, rest, _ = strings.Cut(rest, "```"+lang+"\n")
	text, _, _ := strings.Cut(rest, "```")
	return text
}

// The complete example of docs/scripts.md applies as a project migration
// and runs as the page says: every order the first time, only the new ones
// the next, the last id as the offset.
func TestTheDocumentedExampleRuns(t *testing.T) {
	b, err := os.ReadFile("../../../docs/scripts.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	e := newEnv(t, warehouse.DuckDB, engine.SQLite)
	e.script("orders.py", block(t, doc, "## A complete example", "python"))
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(e.dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("0002_orders.sql", block(t, doc, "The task, registered by a project migration", "sql"))
	if _, err := (&migrate.Runner{DB: e.db, ProjectDir: e.dir}).Migrate(acting()); err != nil {
		t.Fatal(err)
	}
	wh := pool.New(e.db, e.opts)
	t.Cleanup(func() { wh.Close() })
	sup := run.New(run.Options{
		DB: e.db, Warehouse: wh, LogDir: e.logDir, ProjectDir: e.dir, Defaults: run.Defaults{TaskTimeout: time.Hour},
		Handlers: handler.Registry{pipeline.HandlerPython: script.New(e.db, script.Options{Python: python, Schema: "staging",
			Config: map[string]any{"project_dir": e.dir}})},
		Logger: slog.New(slog.NewTextHandler(syncWriter{e}, nil)),
	})
	orders := "id,customer,amount\n1,ada,20.5\n2,bob,7\n"
	for i, c := range []struct{ add, offset, rows string }{
		{"", "NUMBER 2", "1 ada 1,2 bob 1"},
		{"3,cy,12\n", "NUMBER 3", "1 ada 1,2 bob 1,3 cy 2"},
	} {
		orders += c.add
		write("orders.csv", orders)
		out, err := sup.RunPipeline(acting(), run.Request{PipelineCode: "ORDERS"})
		if err != nil || out.Status != run.RunSuccess {
			t.Fatalf("run %d: %v %v\n%s\n%s", i+1, out, err, e.latest("load_orders").log, e.supLog())
		}
		want(t, "offset", e.offset(e.b.TaskID("ORDERS", "load_orders")), c.offset)
		want(t, "orders", strings.Join(e.wh("SELECT id, customer, pipeline_run_id FROM staging.orders ORDER BY id"), ","), c.rows)
	}
}
