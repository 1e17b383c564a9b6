package lineage_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/lineage"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/warehousetest"
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
	{"except_alias_list", `WITH w (x, y) AS (SELECT a, b FROM staging.src) SELECT x, y FROM w EXCEPT SELECT id, amount FROM staging.orders`},
	{"recursive", `WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r`},
	{"table_function", `SELECT x FROM generate_series(1, 3) AS g (x)`},
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
		opts = warehousetest.PostgresOptions(t, enginetest.NewPGDatabase(t), "staging")
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

// TestTokensAreSubstituted reads a SELECT as a run sends it: a token with
// its switch is substituted before parsing; one without it is a problem
// the task is not traced for, named as the SQL handler names it.
func TestTokensAreSubstituted(t *testing.T) {
	db := pipelinetest.DB(t, engine.SQLite)
	b := pipelinetest.New(t, db)
	b.Pipeline("P", "INCREMENTAL")
	b.Task("P", "on", "SQL", map[string]string{"SQL_ACTION": "APPEND_TABLE", "TARGET_OBJECT": "staging.a",
		"SOURCE_SQL": "SELECT id FROM raw.orders WHERE $$pipeline_run_id_filter AND day = $$run_date", "PIPELINE_RUN_ID_FILTER": "true", "RUN_DATE_SUBSTITUTION": "true"})
	b.Task("P", "off", "SQL", map[string]string{"SQL_ACTION": "APPEND_TABLE", "TARGET_OBJECT": "staging.b",
		"SOURCE_SQL": "SELECT id FROM raw.orders WHERE $$pipeline_run_id_filter"})
	g, err := lineage.Build(context.Background(), db, nil, lineage.Options{Kind: warehouse.Postgres})
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, task := range g.Tasks {
		got.WriteString(render(task))
	}
	want := "off -> staging.b reads []\n" +
		"  not traced: SOURCE_SQL line 1 uses $$pipeline_run_id_filter, but PIPELINE_RUN_ID_FILTER is not true: set PIPELINE_RUN_ID_FILTER=true to substitute the incremental filter\n" +
		"on -> staging.a reads [raw.orders]\n  id <- raw.orders.id [copy]\n"
	if got.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", got.String(), want)
	}
}
