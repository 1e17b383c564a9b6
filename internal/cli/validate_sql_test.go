package cli_test

import (
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
)

func TestValidateChecksSQLTaskParameters(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.write("migrations/0001_p.sql", `INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('P', 'P', 'FULL');
WITH t (code) AS (VALUES ('good'), ('no_action'), ('typo'))
INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
SELECT t.code, 'ETL', p.PIPELINE_ID, 'SQL' FROM t LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'P';
WITH v (task, name, value) AS (VALUES
  ('good', 'SQL_ACTION', 'CREATE_TABLE'), ('good', 'TARGET_OBJECT', 'main.t'), ('good', 'SOURCE_SQL', 'SELECT 1 AS id'),
  ('no_action', 'TARGET_OBJECT', 'main.u'), ('no_action', 'SOURCE_SQL', 'SELECT 1 AS id'),
  ('typo', 'SQL_ACTION', 'CREATE_TABLE'), ('typo', 'TARGET_OBJECT', 'main.v'), ('typo', 'SOURCE_SQL', 'SELECT 1 AS id'),
  ('typo', 'TARGET_OBJCT', 'main.w'))
INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)
SELECT t.TASK_ID, v.name, v.value FROM v LEFT JOIN CFG_TASKS t ON t.TASK_CODE = v.task;
`)
	p.ok("setup")
	r := p.run(nil, "validate", "--pipeline_code", "P")
	if r.code != 1 {
		t.Fatalf("validate exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"[FAIL] P.no_action: ", "SQL_ACTION", "[WARN] P.typo: ", "TARGET_OBJECT",
		"checked 1 pipeline(s) and 3 task(s): 1 failed, 1 warning(s)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("validate output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "P.good") {
		t.Errorf("a valid task was reported:\n%s", r.stdout)
	}
}
