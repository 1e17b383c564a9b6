package cli_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
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
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		if r := p.Run(nil, "config", "plan"); r.Code != 12 || !strings.Contains(r.Stderr, "no CFG_PIPELINES table") {
			t.Errorf("plan before init-db: exit %d\n%s", r.Code, r.Stderr)
		}
		p.OK("init-db")
		for name, text := range configFiles {
			p.Write("config/"+name, text)
		}
		header := regexp.MustCompile(`^config ([0-9a-f]{12}) from \S+/config: 5 change\(s\)\n`)

		plan := p.OK("config", "plan")
		m := header.FindStringSubmatch(plan.Stdout)
		if m == nil || !strings.Contains(plan.Stdout, "  insert pipelines.csv P\n") ||
			!strings.Contains(plan.Stdout, "  insert task_parameters.csv P/load/SOURCE_SQL\n") ||
			!strings.HasSuffix(plan.Stdout, "plan only: nothing changed\n") {
			t.Fatalf("plan output:\n%s", plan.Stdout)
		}
		db := p.DB()
		var n int
		db.QueryRowContext(context.Background(), "SELECT count(*) FROM CFG_PIPELINES").Scan(&n)
		if n != 0 {
			t.Fatalf("plan left %d pipeline(s)", n)
		}

		apply := p.OK("config", "apply")
		if !strings.HasPrefix(apply.Stdout, "config "+m[1]) || !strings.HasSuffix(apply.Stdout, "applied 5 change(s)\n") {
			t.Errorf("apply output:\n%s", apply.Stdout)
		}
		db.QueryRowContext(context.Background(),
			"SELECT count(*) FROM AUD_METADATA_CHANGES WHERE MIGRATION = $1 AND OPERATION = 'INSERT'", "config@"+m[1]).Scan(&n)
		if n != 5 {
			t.Errorf("%d metadata change(s) carry config@%s, want 5", n, m[1])
		}
		if audit := p.OK("audit"); !strings.Contains(audit.Stdout, "config@"+m[1]) {
			t.Errorf("audit does not show the revision:\n%s", audit.Stdout)
		}

		// export then apply changes nothing; export refuses to overwrite.
		if r := p.Run(nil, "config", "export"); r.Code != 25 || !strings.Contains(r.Stderr, "exists already: pass --force to overwrite") {
			t.Errorf("export over the files: exit %d\n%s", r.Code, r.Stderr)
		}
		exp := p.OK("config", "export", "--force", "--config-dir", "out")
		if !strings.Contains(exp.Stdout, "exported to "+p.Dir+"/out: 5 row(s) in 6 file(s)") {
			t.Errorf("export output:\n%s", exp.Stdout)
		}
		if again := p.OK("config", "apply", "--config-dir", "out"); !strings.Contains(again.Stdout, ": 0 change(s)\n") {
			t.Errorf("apply of the export:\n%s", again.Stdout)
		}
		var doc struct {
			Schema  string `json:"schema"`
			Applied bool   `json:"applied"`
			Changes []any  `json:"changes"`
		}
		if err := jsonUnmarshal(p.OK("config", "plan", "--config-dir", "out", "--format", "json").Stdout, &doc); err != nil ||
			doc.Schema != "etl-craft/config-sync/1" || doc.Applied || len(doc.Changes) != 0 {
			t.Errorf("plan --format json: %+v %v", doc, err)
		}

		// A broken row: exit 25 naming file, line and column, nothing changed.
		p.Write("config/tasks.csv", "PIPELINE_CODE,TASK_CODE,TASK_TYPE,HANDLER,ACTIVE_FLAG\nP,load,ETL,SQL,yes\n")
		if r := p.Run(nil, "config", "apply"); r.Code != 25 || !strings.Contains(r.Stderr, `tasks.csv:2:5: ACTIVE_FLAG is "yes"`) {
			t.Errorf("broken row: exit %d\n%s", r.Code, r.Stderr)
		}
		// A failed validation: exit 1, nothing applied.
		p.Write("config/tasks.csv", configFiles["tasks.csv"])
		p.Write("config/task_parameters.csv", "PIPELINE_CODE,TASK_CODE,PARAMETER_NAME,PARAMETER_VALUE\n")
		r := p.Run(nil, "config", "apply")
		if r.Code != 1 || !strings.Contains(r.Stdout, "  retire task_parameters.csv P/load/SQL_ACTION  (not in the files)\n") ||
			!strings.Contains(r.Stdout, "[FAIL] P.load: ") || !strings.HasSuffix(r.Stdout, "validation failed: nothing applied\n") {
			t.Errorf("failed validation: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		db.QueryRowContext(context.Background(), "SELECT count(*) FROM CFG_TASK_PARAMETERS WHERE ACTIVE_FLAG = 'Y'").Scan(&n)
		if n != 3 {
			t.Errorf("%d active parameter(s) after a refused apply, want 3", n)
		}
	})
}
