package lineage_test

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/lineage"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// goldenCases are SELECTs of one task each, written to trace the same on
// both warehouses. Each writes staging.out_<name>.
var goldenCases = []struct{ name, sql string }{
	{"copies", `SELECT a, b AS bee, s.c FROM staging.src s`},
	{"expressions", `SELECT a + b AS total, upper(c) AS c_up, CASE WHEN a > 0 THEN b ELSE 0 END AS pos FROM staging.src`},
	{"cte_chain", `WITH one AS (SELECT a, b * 2 AS b2 FROM staging.src), two AS (SELECT a AS id, b2 FROM one) SELECT id, b2 FROM two`},
	{"join_aliases", `SELECT o.id AS order_id, c.name AS customer, o.amount * c.rate AS converted
		FROM staging.orders o JOIN staging.customers AS c ON c.id = o.customer_id LEFT JOIN staging.src x ON x.a = o.id`},
	{"union", `SELECT a, b FROM staging.src UNION ALL SELECT id, amount FROM staging.orders`},
	{"window", `SELECT a, row_number() OVER (PARTITION BY b ORDER BY c) AS rn, sum(b) OVER (PARTITION BY a) AS running FROM staging.src`},
	{"subquery_from", `SELECT q.total, q.a FROM (SELECT a, sum(b) AS total FROM staging.src GROUP BY a) q`},
	{"constants_count", `SELECT 1 AS one, 'x' AS label, count(*) AS n, now() AS at FROM staging.src`},
	{"scalar_subquery", `SELECT o.id, (SELECT max(c.name) FROM staging.customers c WHERE c.id = o.customer_id) AS customer FROM staging.orders o`},
	{"filter_only", `SELECT o.id FROM staging.orders o WHERE EXISTS (SELECT 1 FROM staging.customers c WHERE c.id = o.customer_id)`},
	{"quoted_case", `SELECT "Mixed" AS Upper_Name FROM STAGING.Src`},
	{"three_part", `SELECT a FROM other_db.staging.src`},
	{"star_derived", `SELECT * FROM (SELECT a, b + 1 AS b1 FROM staging.src) d`},
	{"star_table", `SELECT * FROM staging.src`},
	{"star_qualified", `SELECT o.*, c.name FROM staging.orders o JOIN staging.customers c ON c.id = o.customer_id`},
	{"ambiguous", `SELECT name FROM staging.orders o JOIN staging.customers c ON c.id = o.customer_id`},
	{"values", `SELECT v.id, v.name, s.b FROM (VALUES (1, 'a'), (2, 'b')) AS v (id, name) JOIN staging.src s ON s.a = v.id`},
	{"unparsable", `SELECT a FROM FROM staging.src`},
}

// TestGolden traces every golden case on each warehouse's parser, without
// the warehouse (SELECT * over a table is then not traced) and with it,
// and compares the result with testdata/<kind>.golden.
func TestGolden(t *testing.T) {
	for _, kind := range []warehouse.Kind{warehouse.DuckDB, warehouse.Postgres} {
		t.Run(string(kind), func(t *testing.T) {
			db := pipelinetest.DB(t, engine.SQLite)
			b := pipelinetest.New(t, db)
			b.Pipeline("P", "FULL")
			for _, c := range goldenCases {
				b.Task("P", c.name, "SQL", map[string]string{"SQL_ACTION": "OVERWRITE_TABLE",
					"TARGET_OBJECT": "staging.out_" + c.name, "SOURCE_SQL": c.sql})
			}
			w := openWarehouse(t, kind)
			var out strings.Builder
			for _, wh := range []warehouse.Warehouse{nil, w} {
				g, err := lineage.Build(context.Background(), db, wh, lineage.Options{Kind: kind, Refresh: true})
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&out, "## with the warehouse's catalog: %v\n", wh != nil)
				for _, task := range g.Tasks {
					out.WriteString(render(task))
				}
			}
			golden(t, filepath.Join("testdata", string(kind)+".golden"), out.String())
		})
	}
}

// render writes a task's lineage one column a line.
func render(t *lineage.Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s -> %s reads [%s]\n", t.TaskCode, t.Target, strings.Join(t.Reads, ", "))
	if t.Error != "" {
		fmt.Fprintf(&b, "  not traced: %s\n", t.Error)
	}
	for _, c := range t.Columns {
		var src []string
		for _, s := range c.Sources {
			src = append(src, s.Table+"."+s.Column)
		}
		if len(src) == 0 {
			src = []string{"(no source)"}
		}
		fmt.Fprintf(&b, "  %s <- %s [%s]\n", c.Name, strings.Join(src, ", "), c.Transformation)
	}
	return b.String()
}

// golden compares got with the file, or rewrites it under -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// openWarehouse opens a fresh warehouse of the kind with the schema staging
// and the tables the golden cases read.
func openWarehouse(t *testing.T, kind warehouse.Kind) warehouse.Warehouse {
	t.Helper()
	var opts warehouse.Options
	if kind == warehouse.DuckDB {
		opts = warehouse.Options{Kind: warehouse.DuckDB, Path: filepath.Join(t.TempDir(), "warehouse.duckdb"), Schema: "staging"}
	} else {
		opts = pgOptions(t, enginetest.NewPGDatabase(t))
	}
	ctx := context.Background()
	w, err := warehouse.Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	tx, err := w.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`CREATE SCHEMA staging`,
		`CREATE TABLE staging.src ("Mixed" INTEGER, a INTEGER, b INTEGER, c VARCHAR)`,
		`CREATE TABLE staging.orders (id INTEGER, customer_id INTEGER, amount INTEGER)`,
		`CREATE TABLE staging.customers (id INTEGER, name VARCHAR, rate INTEGER)`,
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return w
}

// pgOptions returns the warehouse options of a PostgreSQL test database URL.
func pgOptions(t *testing.T, raw string) warehouse.Options {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	return warehouse.Options{
		Kind: warehouse.Postgres, Host: u.Hostname(), Port: port, Database: strings.TrimPrefix(u.Path, "/"),
		User: u.User.Username(), Params: map[string]string{"sslmode": "disable"}, Schema: "staging",
		AuthMode: warehouse.AuthPassword, Password: func() (string, error) { return pw, nil },
	}
}

// TestCache parses each task once: a second Build reads AUD_COLUMN_LINEAGE
// (on both Engine DB dialects), a changed SELECT is parsed again, and
// Refresh parses everything.
func TestCache(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		b := pipelinetest.New(t, db)
		b.Pipeline("P", "FULL")
		b.Task("P", "load", "SQL", map[string]string{"SQL_ACTION": "OVERWRITE_TABLE",
			"TARGET_OBJECT": "staging.orders", "SOURCE_SQL": "SELECT id, amount FROM raw.orders"})
		id := b.Task("P", "sum", "SQL", map[string]string{"SQL_ACTION": "OVERWRITE_TABLE",
			"TARGET_OBJECT": "mart.totals", "SOURCE_SQL": "SELECT count(*) AS n, sum(amount) AS total FROM staging.orders"})
		b.Task("P", "export", "PYTHON", map[string]string{"SCRIPT_NAME": "x.py", "SOURCE_OBJECT": "mart.totals"})
		build := func(refresh bool) *lineage.Graph {
			t.Helper()
			g, err := lineage.Build(ctx, db, nil, lineage.Options{Kind: warehouse.DuckDB, Refresh: refresh})
			if err != nil {
				t.Fatal(err)
			}
			return g
		}
		first := build(false)
		second := build(false)
		if first.Parsed != 2 || first.Cached != 0 || second.Parsed != 0 || second.Cached != 2 {
			t.Fatalf("parsed/cached: first %d/%d, second %d/%d; want 2/0 then 0/2",
				first.Parsed, first.Cached, second.Parsed, second.Cached)
		}
		var a, b2 strings.Builder
		for i := range first.Tasks {
			a.WriteString(render(first.Tasks[i]))
			b2.WriteString(render(second.Tasks[i]))
		}
		if a.String() != b2.String() {
			t.Errorf("the cached lineage differs:\n%s---\n%s", b2.String(), a.String())
		}
		b.Exec("UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = $1 WHERE TASK_ID = $2 AND PARAMETER_NAME = 'SOURCE_SQL'",
			"SELECT sum(amount) AS total FROM staging.orders", id)
		third := build(false)
		if third.Parsed != 1 || third.Cached != 1 {
			t.Fatalf("after a change: parsed/cached %d/%d, want 1/1", third.Parsed, third.Cached)
		}
		if cols := third.Columns("mart.totals"); strings.Join(cols, ",") != "total" {
			t.Errorf("mart.totals columns after the change: %v", cols)
		}
		if g := build(true); g.Parsed != 2 {
			t.Errorf("refresh parsed %d, want 2", g.Parsed)
		}
		var rows int
		db.QueryRowContext(ctx, "SELECT count(*) FROM AUD_COLUMN_LINEAGE").Scan(&rows)
		// load: id, amount and its read; sum: total and its read.
		if rows != 5 {
			t.Errorf("AUD_COLUMN_LINEAGE has %d rows, want 5", rows)
		}
		up := third.UpstreamTables("mart.totals", 0)
		down := third.DownstreamTables("raw.orders", 0)
		if fmt.Sprint(up) != "[{1 staging.orders P.sum} {2 raw.orders P.load}]" ||
			fmt.Sprint(down) != "[{1 staging.orders P.load} {2 mart.totals P.sum}]" {
			t.Errorf("upstream of mart.totals %v, downstream of raw.orders %v", up, down)
		}
		if steps := third.Upstream("mart.totals", "total", 1); len(steps) != 1 || steps[0].SourceColumn != "amount" {
			t.Errorf("upstream of mart.totals.total at depth 1: %v", steps)
		}
		if steps := third.Downstream("raw.orders", "amount", 0); len(steps) != 2 || steps[1].Level != 2 {
			t.Errorf("downstream of raw.orders.amount: %v", steps)
		}
	})
}
