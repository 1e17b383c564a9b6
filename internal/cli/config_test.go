package cli_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// configFiles are the six files of one pipeline P with one valid SQL task.
var configFiles = map[string]string{
	"pipelines.csv":             "PIPELINE_CODE,PIPELINE_NAME,REFRESH_TYPE\nP,Pipeline P,FULL\n",
	"tasks.csv":                 "PIPELINE_CODE,TASK_CODE,TASK_TYPE,HANDLER\nP,load,ETL,SQL\n",
	"task_parameters.csv":       "PIPELINE_CODE,TASK_CODE,PARAMETER_NAME,PARAMETER_VALUE\nP,load,SQL_ACTION,CREATE_TABLE\nP,load,TARGET_OBJECT,main.t\nP,load,SOURCE_SQL,\"SELECT 1\n  AS id\"\n",
	"task_dependencies.csv":     "PIPELINE_CODE,TASK_CODE,DEPENDS_ON_PIPELINE_CODE,DEPENDS_ON_TASK_CODE,DEPENDENCY_TYPE\n",
	"pipeline_dependencies.csv": "PIPELINE_CODE,DEPENDS_ON_PIPELINE_CODE,DEPENDENCY_TYPE\n",
	"business_rules.csv":        "PIPELINE_CODE,TASK_CODE,BUSINESS_RULE_NAME,BUSINESS_RULE_TYPE,SEQUENCE_NUMBER,BUSINESS_RULE_KEY_COLUMN,TARGET_TABLE,BUSINESS_RULE_SQL\n",
}

func TestConfigCommandPlansAppliesAndExports(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		if r := p.run(nil, "config", "plan"); r.code != 12 || !strings.Contains(r.stderr, "no CFG_PIPELINES table") {
			t.Errorf("plan before init-db: exit %d\n%s", r.code, r.stderr)
		}
		p.ok("init-db")
		for name, text := range configFiles {
			p.write("config/"+name, text)
		}
		header := regexp.MustCompile(`^config ([0-9a-f]{12}) from \S+/config: 5 change\(s\)\n`)

		plan := p.ok("config", "plan")
		m := header.FindStringSubmatch(plan.stdout)
		if m == nil || !strings.Contains(plan.stdout, "  insert pipelines.csv P\n") ||
			!strings.Contains(plan.stdout, "  insert task_parameters.csv P/load/SOURCE_SQL\n") ||
			!strings.HasSuffix(plan.stdout, "plan only: nothing changed\n") {
			t.Fatalf("plan output:\n%s", plan.stdout)
		}
		db := p.db()
		var n int
		db.QueryRowContext(context.Background(), "SELECT count(*) FROM CFG_PIPELINES").Scan(&n)
		if n != 0 {
			t.Fatalf("plan left %d pipeline(s)", n)
		}

		apply := p.ok("config", "apply")
		if !strings.HasPrefix(apply.stdout, "config "+m[1]) || !strings.HasSuffix(apply.stdout, "applied 5 change(s)\n") {
			t.Errorf("apply output:\n%s", apply.stdout)
		}
		db.QueryRowContext(context.Background(),
			"SELECT count(*) FROM AUD_METADATA_CHANGES WHERE MIGRATION = $1 AND OPERATION = 'INSERT'", "config@"+m[1]).Scan(&n)
		if n != 5 {
			t.Errorf("%d metadata change(s) carry config@%s, want 5", n, m[1])
		}
		if audit := p.ok("audit"); !strings.Contains(audit.stdout, "config@"+m[1]) {
			t.Errorf("audit does not show the revision:\n%s", audit.stdout)
		}

		// export then apply changes nothing; export refuses to overwrite.
		if r := p.run(nil, "config", "export"); r.code != 25 || !strings.Contains(r.stderr, "exists already: pass --force to overwrite") {
			t.Errorf("export over the files: exit %d\n%s", r.code, r.stderr)
		}
		exp := p.ok("config", "export", "--force", "--config-dir", "out")
		if !strings.Contains(exp.stdout, "exported to "+p.dir+"/out: 5 row(s) in 6 file(s)") {
			t.Errorf("export output:\n%s", exp.stdout)
		}
		if again := p.ok("config", "apply", "--config-dir", "out"); !strings.Contains(again.stdout, ": 0 change(s)\n") {
			t.Errorf("apply of the export:\n%s", again.stdout)
		}
		var doc struct {
			Schema  string `json:"schema"`
			Applied bool   `json:"applied"`
			Changes []any  `json:"changes"`
		}
		if err := jsonUnmarshal(p.ok("config", "plan", "--config-dir", "out", "--format", "json").stdout, &doc); err != nil ||
			doc.Schema != "etl-craft/config-sync/1" || doc.Applied || len(doc.Changes) != 0 {
			t.Errorf("plan --format json: %+v %v", doc, err)
		}

		// A broken row: exit 25 naming file, line and column, nothing changed.
		p.write("config/tasks.csv", "PIPELINE_CODE,TASK_CODE,TASK_TYPE,HANDLER,ACTIVE_FLAG\nP,load,ETL,SQL,yes\n")
		if r := p.run(nil, "config", "apply"); r.code != 25 || !strings.Contains(r.stderr, `tasks.csv:2:5: ACTIVE_FLAG is "yes"`) {
			t.Errorf("broken row: exit %d\n%s", r.code, r.stderr)
		}
		// A failed validation: exit 1, nothing applied.
		p.write("config/tasks.csv", configFiles["tasks.csv"])
		p.write("config/task_parameters.csv", "PIPELINE_CODE,TASK_CODE,PARAMETER_NAME,PARAMETER_VALUE\n")
		r := p.run(nil, "config", "apply")
		if r.code != 1 || !strings.Contains(r.stdout, "  retire task_parameters.csv P/load/SQL_ACTION  (not in the files)\n") ||
			!strings.Contains(r.stdout, "[FAIL] P.load: ") || !strings.HasSuffix(r.stdout, "validation failed: nothing applied\n") {
			t.Errorf("failed validation: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		db.QueryRowContext(context.Background(), "SELECT count(*) FROM CFG_TASK_PARAMETERS WHERE ACTIVE_FLAG = 'Y'").Scan(&n)
		if n != 3 {
			t.Errorf("%d active parameter(s) after a refused apply, want 3", n)
		}
	})
}
