package docsite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/docsite"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// The fixture's three pipelines: SALES loads and joins, REPORTS builds on
// SALES across pipelines and exports with a script, ARCHIVE is paused and
// its one task reads a SQL file that does not exist (not traced).
var (
	// revenueReportUpstream is every table upstream of mart.revenue_report.
	revenueReportUpstream = []string{"main.customers", "main.orders", "mart.customer_revenue", "raw.customers", "raw.orders"}
	start                 = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
)

// fixture registers the three pipelines in db with runs, task runs, an
// intervention, a consumption and a pause, and returns the project folder
// (its sql_files/ holds one file).
func fixture(t testing.TB, db *engine.DB) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sql_files"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sql_files", "customers.sql"),
		[]byte("-- the customers as loaded\nSELECT c.id, c.name, c.country\nFROM raw.customers AS c\nWHERE c.active"), 0o644); err != nil {
		t.Fatal(err)
	}
	b := pipelinetest.New(t, db)
	b.Pipeline("SALES", "FULL")
	b.Task("SALES", "load_orders", "SQL", map[string]string{
		"TARGET_OBJECT": "main.orders", "SOURCE_SQL": "SELECT o.id, o.customer_id, o.amount, o.ordered_at FROM raw.orders o",
		"DOCUMENTATION": "Orders as the shop exports them.",
	})
	b.Task("SALES", "load_customers", "SQL", map[string]string{"TARGET_OBJECT": "main.customers", "SOURCE_SQL_FILE": "customers.sql"})
	b.Task("SALES", "customer_revenue", "SQL", map[string]string{
		"TARGET_OBJECT": "MART.Customer_Revenue",
		"SOURCE_SQL": `WITH paid AS (
    SELECT customer_id, amount FROM main.orders WHERE amount > 0
)
SELECT c.id AS customer_id, c.name, SUM(p.amount) AS revenue
FROM paid p
JOIN "main"."customers" c ON c.id = p.customer_id
GROUP BY c.id, c.name`,
	})
	b.Task("SALES", "check_orders", "BUSINESS_RULES", nil)
	b.Dep("SALES", "customer_revenue", "SALES", "load_orders", "SUCCESS")
	b.Dep("SALES", "customer_revenue", "SALES", "load_customers", "SUCCESS")
	b.Dep("SALES", "check_orders", "SALES", "load_orders", "SUCCESS")
	b.Exec(`INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
	BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER) VALUES ('negative_amount', $1, $2, 'SELECT id FROM main.orders WHERE amount < 0', 'REJECT', 'id', 'main.orders', 1)`,
		b.PipelineID("SALES"), b.TaskID("SALES", "check_orders"))

	b.Pipeline("REPORTS", "FULL")
	b.PipelineDep("REPORTS", "SALES", "SUCCESS")
	b.Task("REPORTS", "revenue_report", "SQL", map[string]string{
		"TARGET_OBJECT": "mart.revenue_report",
		"SOURCE_SQL":    "SELECT r.customer_id, r.revenue, COUNT(*) AS orders\nFROM mart.customer_revenue r, main.orders o\nWHERE o.customer_id = r.customer_id\nGROUP BY 1, 2",
	})
	b.Task("REPORTS", "export_report", "PYTHON", map[string]string{"SOURCE_OBJECT": "mart.revenue_report", "TARGET_OBJECT": "export.revenue_file"})
	b.Dep("REPORTS", "revenue_report", "SALES", "customer_revenue", "SUCCESS")
	b.Dep("REPORTS", "export_report", "REPORTS", "revenue_report", "SUCCESS")

	b.Pipeline("ARCHIVE", "FULL")
	b.Task("ARCHIVE", "archive_orders", "SQL", map[string]string{"TARGET_OBJECT": "archive.orders", "SOURCE_SQL_FILE": "missing.sql"})

	for i, status := range []string{"SUCCESS", "FAILED", "SUCCESS", "SUCCESS"} {
		at := start.Add(time.Duration(i) * 24 * time.Hour)
		sales := addRun(t, b, db, "SALES", fmt.Sprintf("sales-%d", i), status, at, at.Add(90*time.Second))
		for _, task := range []string{"load_orders", "load_customers", "customer_revenue"} {
			b.Exec(`INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, START_DATE, END_DATE, STATUS, ROWS_WRITTEN)
VALUES ($1, $2, $3, $4, $5, 10)`, b.TaskID("SALES", task), sales, db.TimeArg(at), db.TimeArg(at.Add(30*time.Second)), status)
		}
		if status == "FAILED" {
			b.Exec(`INSERT INTO AUD_RUN_INTERVENTIONS (PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID, ACTION, FROM_STATUS, TO_STATUS, REASON, REQUESTED_BY)
VALUES ($1, $2, $3, 'MARK', 'FAILED', 'SUCCESS', 'loaded by hand after the outage', 'alice')`,
				b.PipelineID("SALES"), sales, b.TaskID("SALES", "customer_revenue"))
			continue
		}
		reports := addRun(t, b, db, "REPORTS", fmt.Sprintf("reports-%d", i), "SUCCESS", at.Add(2*time.Minute), at.Add(3*time.Minute))
		b.Exec(`INSERT INTO AUD_DEPENDENCY_CONSUMPTION (TASK_DEPENDENCY_ID, PIPELINE_ID, PIPELINE_RUN_ID, TASK_ID,
	DEPENDS_ON_PIPELINE_ID, CONSUMED_PIPELINE_RUN_ID) VALUES (
	(SELECT TASK_DEPENDENCY_ID FROM CFG_TASK_DEPENDENCY WHERE TASK_ID = $1 AND ACTIVE_FLAG = 'Y'), $2, $3, $1, $4, $5)`,
			b.TaskID("REPORTS", "revenue_report"), b.PipelineID("REPORTS"), reports, b.PipelineID("SALES"), sales)
	}
	b.Exec(`INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, PAUSED_BY, REASON, PAUSED_AT) VALUES ($1, 'bob', 'the archive bucket is being moved', $2)`,
		b.PipelineID("ARCHIVE"), db.TimeArg(start))
	return dir
}

// addRun inserts an ended run of the pipeline and returns its id.
func addRun(t testing.TB, b *pipelinetest.Builder, db *engine.DB, pipe, key, status string, from, to time.Time) int64 {
	t.Helper()
	b.Exec(`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE, END_DATE, STATUS, RUN_KEY, RUN_DATE)
VALUES ($1, $2, $3, $4, $5, $6)`, b.PipelineID(pipe), db.TimeArg(from), db.TimeArg(to), status, key, from.Format("2006-01-02"))
	var id int64
	if err := db.QueryRowContext(context.Background(), "SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG WHERE RUN_KEY = $1", key).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// site loads the fixture's catalog with the table-level lineage.
func site(t testing.TB, db *engine.DB, dir string) *docsite.Site {
	t.Helper()
	cat, err := docsite.Load(context.Background(), db, dir, start.Add(7*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return &docsite.Site{Catalog: cat, Lineage: docsite.TableLevel(cat, ""), Version: "test"}
}
