package configfiles_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/configfiles"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// validation checks tasks with the real SQL handler, which connects to
// nothing to check parameters.
func validation(db *engine.DB) inspect.ValidateRequest {
	return inspect.ValidateRequest{Handlers: handler.Registry{pipeline.HandlerSQL: sqltask.New(db)}}
}

// sqlParams are the parameters of a valid SQL task writing main.<target>.
func sqlParams(target string) map[string]string {
	return map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main." + target, "SOURCE_SQL": "SELECT 1 AS id"}
}

// alice is the actor of every sync.
func alice(t *testing.T) context.Context {
	a, err := actor.New("alice", actor.Human)
	if err != nil {
		t.Fatal(err)
	}
	return actor.With(context.Background(), a)
}

// seed registers SALES (load, check -> load, and the retired task gone) and
// MART (old), which depends on SALES.
func seed(t *testing.T, db *engine.DB) *pipelinetest.Builder {
	b := pipelinetest.New(t, db)
	b.Pipeline("SALES", "FULL")
	b.Pipeline("MART", "FULL")
	b.Task("SALES", "load", pipeline.HandlerSQL, sqlParams("load"))
	b.Task("SALES", "check", pipeline.HandlerSQL, sqlParams("check"))
	b.Task("SALES", "gone", pipeline.HandlerSQL, sqlParams("gone"))
	b.Exec("UPDATE CFG_TASKS SET ACTIVE_FLAG = 'N' WHERE TASK_CODE = 'gone'")
	b.Task("MART", "old", pipeline.HandlerSQL, sqlParams("old"))
	b.Dep("SALES", "check", "SALES", "load", "SUCCESS")
	b.PipelineDep("MART", "SALES", "SUCCESS")
	return b
}

// edited are files that update SALES, insert NEWP with its task, retire
// SALES.check (and, by leaving them out, MART, its task and both
// dependencies) and reactivate SALES.gone. pipelines.csv starts with a BOM;
// quoted fields hold a comma and a line break.
var edited = map[string]string{
	"pipelines.csv": "\ufeffPIPELINE_CODE,PIPELINE_NAME,REFRESH_TYPE,ACTIVE_FLAG\n" +
		"SALES,Sales daily,INCREMENTAL,Y\n" +
		"NEWP,\"New, quoted\",FULL,\n",
	"tasks.csv": "PIPELINE_CODE,TASK_CODE,TASK_TYPE,HANDLER,ACTIVE_FLAG\n" +
		"SALES,load,ETL,SQL,Y\n" +
		"SALES,check,ETL,SQL,N\n" +
		"SALES,gone,ETL,SQL,Y\n" +
		"NEWP,first,ETL,SQL,Y\n",
	"task_parameters.csv": "PIPELINE_CODE,TASK_CODE,PARAMETER_NAME,PARAMETER_VALUE\n" +
		"SALES,load,SQL_ACTION,CREATE_TABLE\nSALES,load,TARGET_OBJECT,main.load\nSALES,load,SOURCE_SQL,SELECT 1 AS id\n" +
		"SALES,gone,SQL_ACTION,CREATE_TABLE\nSALES,gone,TARGET_OBJECT,main.gone\nSALES,gone,SOURCE_SQL,SELECT 1 AS id\n" +
		"NEWP,first,SQL_ACTION,CREATE_TABLE\nNEWP,first,TARGET_OBJECT,main.first\nNEWP,first,SOURCE_SQL,SELECT 1 AS id\n" +
		"NEWP,first,DOCUMENTATION,\"line one\nline two\"\n",
	"task_dependencies.csv":     "PIPELINE_CODE,TASK_CODE,DEPENDS_ON_PIPELINE_CODE,DEPENDS_ON_TASK_CODE,DEPENDENCY_TYPE\n",
	"pipeline_dependencies.csv": "PIPELINE_CODE,DEPENDS_ON_PIPELINE_CODE,DEPENDENCY_TYPE\n",
	"business_rules.csv":        "PIPELINE_CODE,TASK_CODE,BUSINESS_RULE_NAME,BUSINESS_RULE_TYPE,SEQUENCE_NUMBER,BUSINESS_RULE_KEY_COLUMN,TARGET_TABLE,BUSINESS_RULE_SQL\n",
}

// editedChanges are the changes the edited files make, as op file row.
var editedChanges = []string{
	"update pipelines.csv SALES",
	"insert pipelines.csv NEWP",
	"retire pipelines.csv MART",
	"retire tasks.csv SALES/check",
	"reactivate tasks.csv SALES/gone",
	"insert tasks.csv NEWP/first",
	"retire tasks.csv MART/old",
	"insert task_parameters.csv NEWP/first/SQL_ACTION",
	"insert task_parameters.csv NEWP/first/TARGET_OBJECT",
	"insert task_parameters.csv NEWP/first/SOURCE_SQL",
	"insert task_parameters.csv NEWP/first/DOCUMENTATION",
	"retire task_parameters.csv MART/old/SQL_ACTION",
	"retire task_parameters.csv MART/old/TARGET_OBJECT",
	"retire task_parameters.csv MART/old/SOURCE_SQL",
	"retire task_parameters.csv SALES/check/SQL_ACTION",
	"retire task_parameters.csv SALES/check/TARGET_OBJECT",
	"retire task_parameters.csv SALES/check/SOURCE_SQL",
	"retire task_dependencies.csv SALES/check/SALES/load/SUCCESS",
	"retire pipeline_dependencies.csv MART/SALES/SUCCESS",
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func read(t *testing.T, dir string) *configfiles.Set {
	t.Helper()
	s, err := configfiles.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ops(res configfiles.Result) []string {
	var out []string
	for _, c := range res.Changes {
		out = append(out, c.Op+" "+c.File+" "+c.Row)
	}
	return out
}

// state is the metadata rows and captured changes, to compare before and
// after a sync that must change nothing.
func state(t *testing.T, db *engine.DB) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT PIPELINE_ID, PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, ACTIVE_FLAG FROM CFG_PIPELINES ORDER BY 1",
		"SELECT TASK_ID, TASK_CODE, ACTIVE_FLAG FROM CFG_TASKS ORDER BY 1",
		"SELECT TASK_PARAMETER_ID, PARAMETER_NAME, PARAMETER_VALUE, ACTIVE_FLAG FROM CFG_TASK_PARAMETERS ORDER BY 1",
		"SELECT TASK_DEPENDENCY_ID, ACTIVE_FLAG FROM CFG_TASK_DEPENDENCY ORDER BY 1",
		"SELECT PIPELINE_DEPENDENCY_ID, ACTIVE_FLAG FROM CFG_PIPELINE_DEPENDENCY ORDER BY 1",
		"SELECT count(*) FROM AUD_METADATA_CHANGES",
	} {
		rows, err := db.QueryContext(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				if bs, ok := v.([]byte); ok {
					v = string(bs)
				}
				fmt.Fprintf(&b, "%v|", v)
			}
			b.WriteString("\n")
		}
		rows.Close()
	}
	return b.String()
}

func TestConfigApplyMergesByKey(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := seed(t, db)
		salesID, goneTask := b.PipelineID("SALES"), int64(0)
		db.QueryRowContext(context.Background(), "SELECT TASK_ID FROM CFG_TASKS WHERE TASK_CODE = 'gone'").Scan(&goneTask)
		var before int64
		db.QueryRowContext(context.Background(), "SELECT count(*) FROM AUD_METADATA_CHANGES").Scan(&before)

		set := read(t, writeFiles(t, edited))
		res, err := configfiles.Sync(alice(t), db, set, configfiles.SyncRequest{Apply: true, Validate: validation(db)})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Applied || res.Validation.Failed != 0 {
			t.Fatalf("applied %v, findings %+v", res.Applied, res.Validation.Findings)
		}
		if got := ops(res); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(editedChanges))) {
			t.Fatalf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(editedChanges, "\n"))
		}
		if d := res.Changes[0].Details; !slices.Contains(d, `PIPELINE_NAME: "SALES pipeline" -> "Sales daily"`) ||
			!slices.Contains(d, `REFRESH_TYPE: "FULL" -> "INCREMENTAL"`) {
			t.Errorf("update details %q", d)
		}

		if b.PipelineID("SALES") != salesID || b.TaskID("SALES", "gone") != goneTask {
			t.Error("an update or reactivation did not keep the row's id")
		}
		var name, refresh, doc string
		db.QueryRowContext(context.Background(), "SELECT PIPELINE_NAME, REFRESH_TYPE FROM CFG_PIPELINES WHERE PIPELINE_ID = $1", salesID).Scan(&name, &refresh)
		if name != "Sales daily" || refresh != "INCREMENTAL" {
			t.Errorf("SALES is %q %q", name, refresh)
		}
		db.QueryRowContext(context.Background(), `SELECT PARAMETER_VALUE FROM CFG_TASK_PARAMETERS WHERE PARAMETER_NAME = 'DOCUMENTATION'`).Scan(&doc)
		if doc != "line one\nline two" {
			t.Errorf("DOCUMENTATION = %q", doc)
		}
		db.QueryRowContext(context.Background(), "SELECT PIPELINE_NAME FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'NEWP'").Scan(&name)
		if name != "New, quoted" {
			t.Errorf("NEWP name %q", name)
		}
		for _, q := range []string{
			"SELECT ACTIVE_FLAG FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'MART'",
			"SELECT ACTIVE_FLAG FROM CFG_TASKS WHERE TASK_CODE IN ('check', 'old') GROUP BY ACTIVE_FLAG",
			"SELECT ACTIVE_FLAG FROM CFG_TASK_DEPENDENCY",
			"SELECT ACTIVE_FLAG FROM CFG_PIPELINE_DEPENDENCY",
		} {
			var flag string
			if err := db.QueryRowContext(context.Background(), q).Scan(&flag); err != nil || flag != "N" {
				t.Errorf("%s: %q %v", q, flag, err)
			}
		}

		// Every change is captured with the actor and the revision.
		rows, err := db.QueryContext(context.Background(),
			"SELECT ACTOR, ACTOR_KIND, MIGRATION FROM AUD_METADATA_CHANGES WHERE CHANGE_ID > $1", before)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var who, kind string
			var label *string
			rows.Scan(&who, &kind, &label)
			if who != "alice" || kind != "HUMAN" || label == nil || *label != "config@"+set.Revision[:12] {
				t.Errorf("change by %s %s with migration %v, want alice HUMAN config@%s", who, kind, label, set.Revision[:12])
			}
			n++
		}
		rows.Close()
		if n < len(editedChanges) {
			t.Errorf("%d metadata changes captured, want at least %d", n, len(editedChanges))
		}

		// The same files again change nothing.
		again, err := configfiles.Sync(alice(t), db, set, configfiles.SyncRequest{Validate: validation(db)})
		if err != nil || len(again.Changes) != 0 {
			t.Errorf("second plan: %v %q", err, ops(again))
		}
	})
}

func TestConfigPlanShowsAndRollsBack(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		seed(t, db)
		before := state(t, db)
		res, err := configfiles.Sync(alice(t), db, read(t, writeFiles(t, edited)), configfiles.SyncRequest{Validate: validation(db)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Applied || len(res.Changes) != len(editedChanges) {
			t.Fatalf("plan applied %v with changes %q", res.Applied, ops(res))
		}
		if after := state(t, db); after != before {
			t.Errorf("plan changed the Engine DB:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

func TestConfigExportThenApplyChangesNothing(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := seed(t, db)
		b.Exec(`UPDATE CFG_PIPELINES SET DESCRIPTION = $1, RUN_SCHEDULE = '0 5 * * 1-5', SCHEDULE_TIMEZONE = 'Europe/London',
			SCHEDULE_START_DATE = '2026-01-05', CATCHUP = 'Y', MAX_CATCHUP_RUNS = 3, SLA_IN_HOURS = 1.5,
			PIPELINE_PARAMETERS = '{"region": "eu", "n": 2}' WHERE PIPELINE_CODE = 'SALES'`, "line one\n\"quoted\", two")
		b.Condition("SALES", "check", "N", 1)
		b.Exec(`INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
			BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER) VALUES ('no_nulls', $1, $2, 'SELECT id
FROM t WHERE x IS NULL', 'REJECT', 'id', 's.t', 2)`, b.PipelineID("SALES"), b.TaskID("SALES", "check"))
		dir := filepath.Join(t.TempDir(), "config")
		out, err := configfiles.Export(context.Background(), db, dir, false)
		if err != nil {
			t.Fatal(err)
		}
		if out.Rows["pipelines.csv"] != 2 || out.Rows["tasks.csv"] != 4 || out.Rows["business_rules.csv"] != 1 {
			t.Errorf("rows %v", out.Rows)
		}
		if _, err := configfiles.Export(context.Background(), db, dir, false); exit.CodeOf(err) != exit.ConfigFiles ||
			!strings.Contains(err.Error(), "pipelines.csv exists") {
			t.Errorf("export over existing files: %v", err)
		}
		if _, err := configfiles.Export(context.Background(), db, dir, true); err != nil {
			t.Errorf("export --force: %v", err)
		}
		before := state(t, db)
		res, err := configfiles.Sync(alice(t), db, read(t, dir), configfiles.SyncRequest{Apply: true, Validate: validation(db)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Changes) != 0 || !res.Applied {
			t.Errorf("export then apply changed %q", ops(res))
		}
		if after := state(t, db); after != before {
			t.Errorf("apply of an export changed the Engine DB:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
}

func TestConfigBrokenRowChangesNothing(t *testing.T) {
	t.Parallel()
	broken := func(name, text string) map[string]string {
		files := map[string]string{}
		for k, v := range edited {
			files[k] = v
		}
		files[name] = text
		return files
	}
	for _, c := range []struct {
		name, file, text, want string
	}{
		{"flag", "tasks.csv", "PIPELINE_CODE,TASK_CODE,TASK_TYPE,HANDLER,ACTIVE_FLAG\nSALES,load,ETL,SQL,Y\nSALES,gone,ETL,SQL,maybe\n",
			`tasks.csv:3:5: ACTIVE_FLAG is "maybe"; it must be Y or N`},
		{"quote", "pipelines.csv", "PIPELINE_CODE,PIPELINE_NAME,REFRESH_TYPE\nSALES,\"open,FULL\n",
			"pipelines.csv:2:"},
		{"column", "tasks.csv", "PIPELINE_CODE,TASK_CODE,TASK_KIND\n", `tasks.csv:1:3: unknown column "TASK_KIND"`},
		{"parent", "tasks.csv", "PIPELINE_CODE,TASK_CODE,TASK_TYPE,HANDLER\nNOPE,x,ETL,SQL\n",
			"tasks.csv:2:1: pipeline NOPE is not in pipelines.csv"},
		{"duplicate", "tasks.csv", "PIPELINE_CODE,TASK_CODE,TASK_TYPE,HANDLER\nSALES,load,ETL,SQL\nSALES,load,ETL,PYTHON\n",
			"tasks.csv:3:1: key SALES/load is already on line 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := configfiles.Read(writeFiles(t, broken(c.file, c.text)))
			if exit.CodeOf(err) != exit.ConfigFiles || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v (exit %d), want exit 25 with %q", err, exit.CodeOf(err), c.want)
			}
		})
	}
	t.Run("refused", func(t *testing.T) {
		// A row the Engine DB refuses rolls back the rows applied before it.
		pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
			seed(t, db)
			before := state(t, db)
			files := broken("tasks.csv", strings.Replace(edited["tasks.csv"], "NEWP,first,ETL,SQL", "NEWP,first,LOAD,SQL", 1))
			_, err := configfiles.Sync(alice(t), db, read(t, writeFiles(t, files)), configfiles.SyncRequest{Apply: true, Validate: validation(db)})
			if exit.CodeOf(err) != exit.ConfigFiles || !strings.Contains(err.Error(), "tasks.csv:5:") {
				t.Errorf("got %v, want exit 25 naming tasks.csv:5", err)
			}
			if after := state(t, db); after != before {
				t.Errorf("a refused row left changes:\n%s", after)
			}
		})
	})
}

func TestConfigValidationFailureRollsBack(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		seed(t, db)
		before := state(t, db)
		files := map[string]string{}
		for k, v := range edited {
			files[k] = v
		}
		files["task_parameters.csv"] = strings.Replace(edited["task_parameters.csv"], "NEWP,first,SQL_ACTION,CREATE_TABLE\n", "", 1)
		res, err := configfiles.Sync(alice(t), db, read(t, writeFiles(t, files)), configfiles.SyncRequest{Apply: true, Validate: validation(db)})
		if err != nil {
			t.Fatal(err)
		}
		if res.Applied || res.Validation.Failed != 1 || res.Validation.Findings[0].Where != "NEWP.first" {
			t.Errorf("applied %v, findings %+v", res.Applied, res.Validation.Findings)
		}
		if after := state(t, db); after != before {
			t.Errorf("a failed validation left changes:\n%s", after)
		}
	})
}

func TestConfigNeedsTheCFGTables(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		_, err := configfiles.Export(context.Background(), db, t.TempDir(), false)
		if exit.CodeOf(err) != exit.EngineDB || !strings.Contains(err.Error(), "no CFG_PIPELINES table") {
			t.Errorf("got %v, want exit 12", err)
		}
	})
}
