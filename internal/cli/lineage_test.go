package cli_test

import (
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

// lineageMigration registers three pipelines: RAW loads staging tables,
// MART joins them, REPORT sums the mart and a script exports the report.
const lineageMigration = `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('RAW', 'Raw', 'FULL');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('MART', 'Mart', 'FULL');
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('REPORT', 'Report', 'FULL');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT 'load_orders', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'RAW';
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT 'load_customers', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'RAW';
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT 'order_facts', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'MART';
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT 'daily', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'REPORT';
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT 'export', 'ETL', PIPELINE_ID, 'PYTHON' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'REPORT';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'SQL_ACTION', 'OVERWRITE_TABLE' FROM CFG_TASKS WHERE HANDLER = 'SQL';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'TARGET_OBJECT', 'staging.orders' FROM CFG_TASKS WHERE TASK_CODE = 'load_orders';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'SOURCE_SQL', 'SELECT id, customer_id, amount * 100 AS amount_cents FROM raw.orders' FROM CFG_TASKS WHERE TASK_CODE = 'load_orders';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'TARGET_OBJECT', 'staging.customers' FROM CFG_TASKS WHERE TASK_CODE = 'load_customers';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'SOURCE_SQL', 'SELECT id, upper(name) AS name FROM raw.customers' FROM CFG_TASKS WHERE TASK_CODE = 'load_customers';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'TARGET_OBJECT', 'Warehouse.Mart.Order_Facts' FROM CFG_TASKS WHERE TASK_CODE = 'order_facts';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'SOURCE_SQL', 'SELECT o.id AS order_id, c.name AS customer, o.amount_cents FROM staging.orders o JOIN staging.customers c ON c.id = o.customer_id' FROM CFG_TASKS WHERE TASK_CODE = 'order_facts';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'TARGET_OBJECT', 'report.daily' FROM CFG_TASKS WHERE TASK_CODE = 'daily';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'SOURCE_SQL', 'WITH f AS (SELECT customer, amount_cents FROM mart.order_facts) SELECT customer, sum(amount_cents) AS revenue, count(*) AS orders FROM f GROUP BY customer' FROM CFG_TASKS WHERE TASK_CODE = 'daily';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'SCRIPT_NAME', 'export.py' FROM CFG_TASKS WHERE TASK_CODE = 'export';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'SOURCE_OBJECT', 'report.daily' FROM CFG_TASKS WHERE TASK_CODE = 'export';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'TARGET_OBJECT', 'outbox.daily_csv' FROM CFG_TASKS WHERE TASK_CODE = 'export';
`

// TestLineageCommand drives lineage through the binary on a three-pipeline
// project: the summary, --table, --column with --upstream --depth 2 and
// --downstream, an unknown column, the cache (counted in the JSON
// document) and its refresh after a migration changes a task's SQL, and
// --strict on a task that does not parse.
func TestLineageCommand(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.Write("migrations/0001_pipelines.sql", lineageMigration)
		p.OK("setup")

		counts := func() (parsed, cached int) {
			t.Helper()
			var doc struct {
				Schema         string
				Parsed, Cached int
			}
			if err := jsonUnmarshal(p.OK("lineage", "--format", "json").Stdout, &doc); err != nil || doc.Schema != "etl-craft/lineage/1" {
				t.Fatalf("lineage --format json: %v %+v", err, doc)
			}
			return doc.Parsed, doc.Cached
		}
		if parsed, cached := counts(); parsed != 4 || cached != 0 {
			t.Fatalf("first call parsed %d and read %d from the cache, want 4 and 0", parsed, cached)
		}
		want := "TASK\tTARGET\tCOLUMNS\tSOURCE_TABLES\n" +
			"MART.order_facts\tmart.order_facts\t3\tstaging.customers, staging.orders\n" +
			"RAW.load_customers\tstaging.customers\t2\traw.customers\n" +
			"RAW.load_orders\tstaging.orders\t3\traw.orders\n" +
			"REPORT.daily\treport.daily\t3\tmart.order_facts\n" +
			"REPORT.export\toutbox.daily_csv\t0\treport.daily\n"
		if got := p.OK("lineage").Stdout; got != want {
			t.Errorf("lineage:\n%s\nwant:\n%s", got, want)
		}
		if parsed, cached := counts(); parsed != 0 || cached != 4 {
			t.Fatalf("a cached call parsed %d and read %d from the cache, want 0 and 4", parsed, cached)
		}

		want = "report.daily\n  upstream:\n" +
			"    mart.order_facts  (REPORT.daily)\n" +
			"      staging.customers  (MART.order_facts)\n" +
			"        raw.customers  (RAW.load_customers)\n" +
			"      staging.orders  (MART.order_facts)\n" +
			"        raw.orders  (RAW.load_orders)\n" +
			"  downstream:\n" +
			"    outbox.daily_csv  (REPORT.export)\n"
		if got := p.OK("lineage", "--table", "Warehouse.Report.Daily").Stdout; got != want {
			t.Errorf("lineage --table:\n%s\nwant:\n%s", got, want)
		}
		want = "report.daily.revenue\n" +
			"  <- mart.order_facts.amount_cents  [sum(amount_cents)]  (REPORT.daily)\n" +
			"    <- staging.orders.amount_cents  [copy]  (MART.order_facts)\n"
		if got := p.OK("lineage", "--table", "report.daily", "--column", "revenue", "--upstream", "--depth", "2").Stdout; got != want {
			t.Errorf("lineage --column --upstream --depth 2:\n%s\nwant:\n%s", got, want)
		}
		want = "raw.orders.amount\n" +
			"  -> staging.orders.amount_cents  [(amount * 100)]  (RAW.load_orders)\n" +
			"    -> mart.order_facts.amount_cents  [copy]  (MART.order_facts)\n" +
			"      -> report.daily.revenue  [sum(amount_cents)]  (REPORT.daily)\n"
		if got := p.OK("lineage", "--table", "raw.orders", "--column", "amount", "--downstream").Stdout; got != want {
			t.Errorf("lineage --column --downstream:\n%s\nwant:\n%s", got, want)
		}
		want = "report.daily.orders\n  <- (no source)  [count_star()]  (REPORT.daily)\n"
		if got := p.OK("lineage", "--table", "report.daily", "--column", "orders").Stdout; got != want {
			t.Errorf("lineage --column orders:\n%s\nwant:\n%s", got, want)
		}
		r := p.Run(nil, "lineage", "--table", "report.daily", "--column", "nope")
		if r.Code != 2 || !strings.Contains(r.Stderr, "no lineage mentions report.daily.nope; its traced columns: customer, orders, revenue") {
			t.Errorf("an unknown column exited %d: %s", r.Code, r.Stderr)
		}
		for _, args := range [][]string{{"--column", "x"}, {"--table", "a.b", "--upstream", "--downstream"}, {"--depth", "0"}} {
			if r := p.Run(nil, append([]string{"lineage"}, args...)...); r.Code != 2 {
				t.Errorf("lineage %v exited %d, want 2: %s", args, r.Code, r.Stderr)
			}
		}

		p.Write("migrations/0002_daily.sql", `UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = 'SELECT customer, sum(amount_cents) AS revenue FROM mart.order_facts GROUP BY customer'
WHERE PARAMETER_NAME = 'SOURCE_SQL' AND TASK_ID = (SELECT TASK_ID FROM CFG_TASKS WHERE TASK_CODE = 'daily');
`)
		p.OK("migrate")
		if parsed, cached := counts(); parsed != 1 || cached != 3 {
			t.Fatalf("after the migration parsed %d and read %d from the cache, want 1 and 3", parsed, cached)
		}
		r = p.Run(nil, "lineage", "--table", "report.daily", "--column", "orders")
		if r.Code != 2 || !strings.Contains(r.Stderr, "its traced columns: customer, revenue") {
			t.Errorf("the column the migration removed exited %d: %s", r.Code, r.Stderr)
		}
		if parsed, _ := func() (int, int) { p.OK("lineage", "--refresh"); return counts() }(); parsed != 0 {
			t.Errorf("a call after --refresh parsed %d", parsed)
		}

		p.Write("migrations/0003_broken.sql", `INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT 'broken', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'REPORT';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'SQL_ACTION', 'OVERWRITE_TABLE' FROM CFG_TASKS WHERE TASK_CODE = 'broken';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'TARGET_OBJECT', 'report.broken' FROM CFG_TASKS WHERE TASK_CODE = 'broken';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'SOURCE_SQL', 'SELECT customer FROM FROM mart.order_facts' FROM CFG_TASKS WHERE TASK_CODE = 'broken';
`)
		p.OK("migrate")
		r = p.OK("lineage")
		if !strings.HasSuffix(r.Stdout, "\nnot traced: REPORT.broken: DuckDB's parser refuses the SELECT: syntax error at or near \"FROM\"\n") {
			t.Errorf("lineage with an untraced task:\n%s", r.Stdout)
		}
		r = p.Run(nil, "lineage", "--strict", "--table", "report.daily", "--downstream")
		if r.Code != 1 || r.Stdout != "report.daily\n  downstream:\n    outbox.daily_csv  (REPORT.export)\n(1 SQL task(s) could not be traced; run lineage without --table)\n" {
			t.Errorf("lineage --strict exited %d:\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

// TestDocsVersionCommand records version 1, nothing when no text changed,
// version 2 after a migration changes one, and nothing under --check.
func TestDocsVersionCommand(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("setup")
		if got := p.OK("docs-version").Stdout; got != "(no task has a DOCUMENTATION parameter)\n" {
			t.Errorf("docs-version without documentation: %q", got)
		}
		p.Write("migrations/0001_pipelines.sql", lineageMigration+
			`INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'DOCUMENTATION', 'Orders as loaded.' FROM CFG_TASKS WHERE TASK_CODE = 'load_orders';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'DOCUMENTATION', 'Revenue per customer.' FROM CFG_TASKS WHERE TASK_CODE = 'daily';
`)
		p.OK("migrate")
		header := "PIPELINE_CODE\tTASK_CODE\tVERSION\tCHANGED\n"
		rows := func() int { return e2e.Count(t, p.DB(), "SELECT count(*) FROM AUD_TASK_DOCUMENTATION") }
		if got := p.OK("docs-version", "--check").Stdout; got != header+"RAW\tload_orders\t1\tyes\nREPORT\tdaily\t1\tyes\n" || rows() != 0 {
			t.Errorf("docs-version --check:\n%s(%d rows)", got, rows())
		}
		if got := p.OK("docs-version").Stdout; got != header+"RAW\tload_orders\t1\tyes\nREPORT\tdaily\t1\tyes\n" || rows() != 2 {
			t.Errorf("docs-version:\n%s(%d rows)", got, rows())
		}
		if got := p.OK("docs-version").Stdout; got != header+"RAW\tload_orders\t1\tno\nREPORT\tdaily\t1\tno\n" || rows() != 2 {
			t.Errorf("docs-version again:\n%s(%d rows)", got, rows())
		}
		p.Write("migrations/0002_docs.sql", `UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = 'Revenue per customer, in cents.'
WHERE PARAMETER_NAME = 'DOCUMENTATION' AND TASK_ID = (SELECT TASK_ID FROM CFG_TASKS WHERE TASK_CODE = 'daily');
`)
		p.OK("migrate")
		if got := p.OK("docs-version", "--check", "--pipeline_code", "REPORT").Stdout; got != header+"REPORT\tdaily\t2\tyes\n" || rows() != 2 {
			t.Errorf("docs-version --check after a change:\n%s(%d rows)", got, rows())
		}
		var doc struct {
			Schema   string
			Recorded bool
			Tasks    []struct {
				Version int
				Changed bool
			}
		}
		if err := jsonUnmarshal(p.OK("docs-version", "--pipeline_code", "REPORT", "--task_code", "daily", "--format", "json").Stdout, &doc); err != nil ||
			doc.Schema != "etl-craft/docs-versions/1" || !doc.Recorded || len(doc.Tasks) != 1 || doc.Tasks[0].Version != 2 || !doc.Tasks[0].Changed || rows() != 3 {
			t.Errorf("docs-version --format json: %v %+v (%d rows)", err, doc, rows())
		}
		if r := p.Run(nil, "docs-version", "--task_code", "daily"); r.Code != 2 {
			t.Errorf("--task_code without --pipeline_code exited %d", r.Code)
		}
		if r := p.Run(nil, "docs-version", "--pipeline_code", "REPORT", "--task_code", "dialy"); r.Code != 4 || !strings.Contains(r.Stderr, `no active task with the code "dialy"`) {
			t.Errorf("an unknown task exited %d: %s", r.Code, r.Stderr)
		}
	})
}
