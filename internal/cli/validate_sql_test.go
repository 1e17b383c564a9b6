package cli_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
)

func TestValidateChecksSQLTaskParameters(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.Write("migrations/0001_p.sql", `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P', 'P', 'FULL');
WITH t (code) AS (VALUES ('good'), ('no_action'), ('typo'))
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT t.Code, 'ETL', p.PIPELINE_ID, 'SQL' FROM t LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'P';
WITH v (task, name, value) AS (VALUES
  ('good', 'SQL_ACTION', 'CREATE_TABLE'), ('good', 'TARGET_OBJECT', 'main.t'), ('good', 'SOURCE_SQL', 'SELECT 1 AS id'),
  ('no_action', 'TARGET_OBJECT', 'main.u'), ('no_action', 'SOURCE_SQL', 'SELECT 1 AS id'),
  ('typo', 'SQL_ACTION', 'CREATE_TABLE'), ('typo', 'TARGET_OBJECT', 'main.v'), ('typo', 'SOURCE_SQL', 'SELECT 1 AS id'),
  ('typo', 'TARGET_OBJCT', 'main.w'))
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, v.name, v.value FROM v LEFT JOIN CFG_TASKS t ON t.TASK_CODE = v.task;
`)
	p.OK("setup")
	r := p.Run(nil, "validate", "--pipeline_code", "P")
	if r.Code != 1 {
		t.Fatalf("validate exited %d:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"[FAIL] P.no_action: ", "SQL_ACTION", "[WARN] P.typo: ", "TARGET_OBJECT",
		"checked 1 pipeline(s) and 3 task(s): 1 failed, 1 warning(s)"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("validate output lacks %q:\n%s", want, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "P.good") {
		t.Errorf("a valid task was reported:\n%s", r.Stdout)
	}
}

// rulesAndAlert registers pipeline Q with a rules task, whose rules are
// good, on a missing table, on a missing key column and with SQL the
// warehouse cannot run, and an alert task without EMAIL_TO or
// EMAIL_SUBJECT.
const rulesAndAlert = `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('Q', 'Q', 'FULL');
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT 'check', 'ETL', PIPELINE_ID, 'BUSINESS_RULES' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'Q';
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) SELECT 'alert', 'ETL', PIPELINE_ID, 'EMAIL_ALERT' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'Q';
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE) SELECT TASK_ID, 'EMAIL_BODY', 'done' FROM CFG_TASKS WHERE TASK_CODE = 'alert';
WITH rules (name, rule_sql, key_column, target) AS (VALUES
  ('good', 'SELECT 1 WHERE t.amount < 0', 'id', 'main.orders'),
  ('no_table', 'SELECT 1', 'id', 'main.nowhere'),
  ('no_key', 'SELECT 1', 'order_id', 'main.orders'),
  ('bad_sql', 'SELECT 1 WHERE t.amont < 0', 'id', 'main.orders'))
INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
  BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)
SELECT rules.name, t.PIPELINE_ID, t.TASK_ID, rules.rule_sql, 'REJECT', rules.key_column, rules.target, 1
FROM rules LEFT JOIN CFG_TASKS t ON t.TASK_CODE = 'check';
`

// validate reports alert tasks without EMAIL_TO or EMAIL_SUBJECT, and
// checks business rules against the warehouse when it can connect: a
// missing target table or key column, SQL that does not run; when it
// cannot, that is one warning and the rest is still checked. A project
// without rules tasks never connects.
func TestValidateChecksRulesAgainstTheWarehouse(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.OK("setup")
	p.Write("migrations/0001_sql.sql", e2e.Pipeline("P", e2e.CreateTable("load", "main.t", "SELECT 1 AS id")))
	p.OK("migrate")
	if r := p.OK("validate"); r.Stdout != "checked 1 pipeline(s) and 1 task(s): 0 failed, 0 warning(s)\n" {
		t.Fatalf("%q", r.Stdout)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, "warehouse.duckdb")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("validate without rules tasks touched the warehouse: %v", err)
	}
	p.Write("migrations/0002_q.sql", rulesAndAlert)
	p.OK("migrate")
	// Before the first run there is no DuckDB file: validate says so once,
	// as information (every new project is so), and creates none.
	r := p.Run(nil, "validate", "--pipeline_code", "Q")
	if r.Code != 1 || !strings.Contains(r.Stdout, "[INFO] warehouse: the DuckDB warehouse ") || !strings.Contains(r.Stdout, "does not exist yet") ||
		!strings.Contains(r.Stdout, "checked 1 pipeline(s) and 2 task(s): 2 failed, 0 warning(s)") {
		t.Errorf("a warehouse file not made yet: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(filepath.Join(p.Dir, "warehouse.duckdb")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("validate created the warehouse file: %v", err)
	}
	p.WarehouseExec("CREATE TABLE main.orders (id INTEGER, amount INTEGER)")
	r = p.Run(nil, "validate", "--pipeline_code", "Q")
	want := []string{
		"[FAIL] Q.alert: EMAIL_TO or NOTIFY_CHANNELS is required: the recipients, or the channels of Notifications, separated by |",
		"[FAIL] Q.alert: EMAIL_SUBJECT is required",
		"[FAIL] Q.check: business rule bad_sql: BUSINESS_RULE_SQL does not run against main.orders: Binder Error:",
		"[FAIL] Q.check: business rule no_key: the TARGET_TABLE main.orders has no column order_id (BUSINESS_RULE_KEY_COLUMN)",
		"[FAIL] Q.check: business rule no_table: the TARGET_TABLE main.nowhere does not exist, and no task that runs before check creates it",
		"checked 1 pipeline(s) and 2 task(s): 5 failed, 0 warning(s)",
	}
	if r.Code != 1 {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("validate output lacks %q:\n%s", w, r.Stdout)
		}
	}
	if strings.Contains(r.Stdout, "rule good") {
		t.Errorf("the good rule was reported:\n%s", r.Stdout)
	}

	p.WithWarehouse("Warehouse:\n  Name: Postgres\n  dev:\n    jdbc_url: jdbc:postgresql://127.0.0.1:1/nowhere?sslmode=disable\n"+
		"    schema: public\n    auth_mode: password\n    user: nobody\n    secret: WAREHOUSE_SECRET\n", []string{"WAREHOUSE_SECRET=x"})
	r = p.Run(nil, "validate", "--pipeline_code", "Q")
	if r.Code != 1 || !strings.Contains(r.Stdout, "[WARN] warehouse: could not connect (") ||
		!strings.Contains(r.Stdout, "): business rules' target tables, key columns and SQL were not checked against it\n") ||
		!strings.Contains(r.Stdout, "checked 1 pipeline(s) and 2 task(s): 2 failed, 1 warning(s)") {
		t.Errorf("an unreachable warehouse: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
