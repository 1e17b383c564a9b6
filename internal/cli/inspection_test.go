package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// rowCounts returns the number of rows of every table of the Engine DB.
func rowCounts(t *testing.T, db *engine.DB) map[string]int {
	t.Helper()
	tables, err := db.Tables(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, table := range tables {
		out[table] = e2e.Count(t, db, `SELECT count(*) FROM "`+table+`"`)
	}
	return out
}

// schemaOf parses a JSON document and returns its schema id.
func schemaOf(t *testing.T, r e2e.Result) string {
	t.Helper()
	var doc struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil {
		t.Fatalf("not one JSON document: %v\n%s", err, r.Stdout)
	}
	return doc.Schema
}

// inspectedProject is a project whose Engine DB holds the SALES example: a
// pipeline whose load task waits for UP.publish and whose alert runs on
// load's failure, one failed run of SALES, and a pause of SALES.
type inspectedProject struct {
	*e2e.Project
	db      *engine.DB
	b       *pipelinetest.Builder
	runID   int64
	upRunID int64
	started time.Time
}

func newInspectedProject(t *testing.T, kind engine.Kind) *inspectedProject {
	p := newProject(t, kind, "")
	p.OK("init-db")
	ip := &inspectedProject{Project: p, db: p.DB(), started: time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)}
	b := pipelinetest.New(t, ip.db)
	ip.b = b
	b.Pipeline("UP", pipeline.Full)
	b.Task("UP", "publish", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE"})
	b.Pipeline("SALES", pipeline.Incremental)
	b.Task("SALES", "extract", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.raw"})
	b.Task("SALES", "load", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "APPEND_TABLE"})
	b.Task("SALES", "alert", pipeline.HandlerEmailAlert, nil)
	b.Dep("SALES", "load", "SALES", "extract", pipeline.Success)
	b.Dep("SALES", "load", "UP", "publish", pipeline.Success)
	b.Dep("SALES", "alert", "SALES", "load", pipeline.Failure)
	b.Condition("SALES", "alert", pipeline.Any, 0)
	b.PipelineDep("SALES", "UP", pipeline.Success)
	b.Exec("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 6 * * *', SLA_IN_HOURS = 1.5 WHERE PIPELINE_CODE = 'SALES'")

	rec := inspecttest.New(t, ip.db, actor.Actor{Name: "alice@test", Kind: actor.Human})
	s := ip.started
	ip.runID = rec.Run(b.PipelineID("SALES"), inspecttest.Run{Key: "daily:2026-03-01", Status: "FAILED", RunDate: "2026-03-01",
		Start: s, End: s.Add(95 * time.Second), SLAStatus: "MET"})
	rec.TaskRun(ip.runID, b.TaskID("SALES", "extract"), inspecttest.TaskRun{Status: "SUCCESS", Start: s,
		End: s.Add(20 * time.Second), RowsWritten: count64(40)})
	failed := rec.TaskRun(ip.runID, b.TaskID("SALES", "load"), inspecttest.TaskRun{Status: "FAILED", Start: s.Add(20 * time.Second),
		End: s.Add(80500 * time.Millisecond), Attempts: 2, ErrorMessage: "Catalog Error: Table main.raw does not exist\nLINE 1"})
	rec.Attempt(failed, 1, "FAILED", "Catalog Error")
	rec.Attempt(failed, 2, "FAILED", "Catalog Error")
	rec.Intervention(b.PipelineID("SALES"), ip.runID, b.TaskID("SALES", "load"), "MARK", "FAILED", "SUCCESS",
		"loaded by hand", s.Add(2*time.Hour))
	ip.upRunID = rec.Run(b.PipelineID("UP"), inspecttest.Run{Status: "IN-PROGRESS", RunDate: "2026-03-01", Start: s})
	rec.Pause(b.PipelineID("SALES"), "warehouse maintenance", s.Add(3*time.Hour))
	b.Pipeline("NEW", pipeline.Full)
	return ip
}

// wantList fails the test unless r printed list's table with these rows.
func wantList(t *testing.T, r e2e.Result, rows ...string) {
	t.Helper()
	want := "PIPELINE_CODE\tPIPELINE_NAME\tREFRESH_TYPE\tRUN_SCHEDULE\tSLA_IN_HOURS\tPAUSED\tNEXT_TICK\n" + strings.Join(rows, "\n") + "\n"
	if r.Stdout != want {
		t.Fatalf("list:\n%s\nwant:\n%s", r.Stdout, want)
	}
}

func count64(n int64) *int64 { return &n }

func TestInspectionCommandsPrintTablesAndDocuments(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		ip := newInspectedProject(t, kind)
		before := rowCounts(t, ip.db)
		pause := "paused by alice@test (HUMAN) since 2026-03-01 09:00:00+00:00: warehouse maintenance"

		wantList(t, ip.OK("list"),
			"NEW\tNEW pipeline\tFULL\t\t\t\tnone",
			"SALES\tSALES pipeline\tINCREMENTAL\t0 6 * * *\t1.5\t"+pause+"\tnone while paused",
			"UP\tUP pipeline\tFULL\t\t\t\tnone")
		if s := schemaOf(t, ip.OK("list", "--format", "json")); s != "etl-craft/pipeline-list/1" {
			t.Fatalf("list schema %q", s)
		}

		r := ip.OK("graph", "--pipeline_code", "SALES")
		want := "Pipeline SALES\nWaves, the order that is always safe:\n  1: extract\n  2: load\n  3: alert\n" +
			"May start before their wave (an ANY or N run condition): alert\n" +
			"Task dependencies:\n  alert <- load (FAILURE)\n  load <- UP.publish (SUCCESS)\n  load <- extract (SUCCESS)\n" +
			"Pipeline dependencies:\n  UP (SUCCESS)\n"
		if r.Stdout != want {
			t.Fatalf("graph:\n%s\nwant:\n%s", r.Stdout, want)
		}
		r = ip.OK("graph", "--pipeline_code", "UP")
		want = "Pipeline UP\nWaves, the order that is always safe:\n  1: publish\nTask dependencies:\n  (none)\n" +
			"Pipeline dependencies:\n  (none)\n"
		if r.Stdout != want {
			t.Fatalf("graph UP:\n%s", r.Stdout)
		}
		r = ip.OK("graph", "--pipeline_code", "NEW")
		if !strings.Contains(r.Stdout, "safe:\n  (no active tasks)\nTask dependencies:\n  (none)\n") {
			t.Fatalf("graph NEW:\n%s", r.Stdout)
		}
		if s := schemaOf(t, ip.OK("graph", "--pipeline_code", "SALES", "--format", "json")); s != "etl-craft/graph/1" {
			t.Fatalf("graph schema %q", s)
		}

		r = ip.OK("steps", "--pipeline_code", "SALES", "--run-key", "daily:2026-03-01")
		want = "TASK_CODE\tSTATUS\tHANDLER\tTASK_TYPE\tRUN_CONDITION\tPARAMETERS\n" +
			"alert\tNOT-RUN\tEMAIL_ALERT\tETL\tANY\t\n" +
			"extract\tSUCCESS\tSQL\tETL\tALL\tSQL_ACTION=CREATE_TABLE, TARGET_OBJECT=main.raw\n" +
			"load\tFAILED\tSQL\tETL\tALL\tSQL_ACTION=APPEND_TABLE\n"
		if r.Stdout != want {
			t.Fatalf("steps:\n%s\nwant:\n%s", r.Stdout, want)
		}
		if s := schemaOf(t, ip.OK("steps", "--pipeline_code", "UP", "--format", "json")); s != "etl-craft/steps/1" {
			t.Fatalf("steps schema %q", s)
		}

		r = ip.OK("status", "--pipeline_code", "SALES", "--run-id", fmt.Sprint(ip.runID))
		want = fmt.Sprintf("SALES: pipeline_run_id=%d key=daily:2026-03-01 kind=MANUAL run_date=2026-03-01 status=FAILED\n", ip.runID) +
			"start=2026-03-01 06:00:00+00:00 duration_seconds=95 SLA=MET sla_hours=1.5\n" + pause + "\n" +
			"TASK\tSTATUS\tATTEMPTS\tROWS_WRITTEN\tDURATION_SECONDS\tERROR\n" +
			"alert\tNOT RUN\t0\t\t\t\n" +
			"extract\tSUCCESS\t1\t40\t20\t\n" +
			"load\tFAILED\t2\t\t60.5\tCatalog Error: Table main.raw does not exist\n" +
			"blocked by failures: (none)\n" +
			"next tick: none while paused\n"
		if r.Stdout != want {
			t.Fatalf("status:\n%s\nwant:\n%s", r.Stdout, want)
		}
		var st struct {
			Schema string `json:"schema"`
			Run    struct {
				ID        int64  `json:"pipeline_run_id"`
				StartDate string `json:"start_date"`
			} `json:"run"`
			Tasks []struct {
				Status *string `json:"status"`
			} `json:"tasks"`
		}
		r = ip.OK("status", "--pipeline_code", "SALES", "--run-id", fmt.Sprint(ip.runID), "--format", "json")
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil || st.Schema != "etl-craft/status/1" || st.Run.ID != ip.runID ||
			st.Run.StartDate != "2026-03-01T06:00:00+00:00" || len(st.Tasks) != 3 || st.Tasks[0].Status != nil {
			t.Fatalf("status JSON %v:\n%s", err, r.Stdout)
		}

		r = ip.OK("explain", "--pipeline_code", "SALES", "--task_code", "load", "--run-id", fmt.Sprint(ip.runID))
		want = "SALES.load: FAILED\n" +
			fmt.Sprintf("pipeline_run_id=%d key=daily:2026-03-01 kind=MANUAL run_date=2026-03-01 status=FAILED; attempt=2 attempt_id=2 attempt_status=FAILED\n", ip.runID) +
			pause + "\nrun_condition=ALL required_count=2\n" +
			"extract: SUCCESS status=SUCCESS met=yes; it ended SUCCESS\n" +
			"UP.publish: SUCCESS status=NOT RUN met=no; has no finished run\n" +
			"next: nothing: the run has ended; rerun the task (run --rerun) or mark it to change its outcome\n"
		if r.Stdout != want {
			t.Fatalf("explain load:\n%s\nwant:\n%s", r.Stdout, want)
		}
		r = ip.OK("explain", "--pipeline_code", "SALES", "--task_code", "alert", "--run-id", fmt.Sprint(ip.runID))
		want = "SALES.alert: NOT RUN\n" +
			fmt.Sprintf("pipeline_run_id=%d key=daily:2026-03-01 kind=MANUAL run_date=2026-03-01 status=FAILED; attempt=none\n", ip.runID) +
			pause + "\nrun_condition=ANY required_count=1\n" +
			"load: FAILURE status=FAILED met=yes; it ended FAILED\n" +
			"next: nothing: the run ended without running it\n"
		if r.Stdout != want {
			t.Fatalf("explain alert:\n%s\nwant:\n%s", r.Stdout, want)
		}
		if s := schemaOf(t, ip.OK("explain", "--pipeline_code", "SALES", "--task_code", "alert", "--format", "json")); s != "etl-craft/explain/1" {
			t.Fatalf("explain schema %q", s)
		}

		r = ip.OK("history", "--pipeline_code", "SALES", "--all")
		want = "PIPELINE_RUN_ID\tSTATUS\tRUN_DATE\tSTART_DATE\tEND_DATE\tSLA_STATUS\tSTARTED_BY\tSTARTED_BY_KIND\tENDED_BY\tENDED_BY_KIND\n" +
			fmt.Sprintf("%d\tFAILED\t2026-03-01\t2026-03-01 06:00:00+00:00\t2026-03-01 06:01:35+00:00\tMET\talice@test\tHUMAN\talice@test\tHUMAN\n", ip.runID) +
			"\nInterventions:\nPIPELINE_RUN_ID\tTASK\tACTION\tFROM\tTO\tBY\tAT\tREASON\n" +
			fmt.Sprintf("%d\tload\tMARK\tFAILED\tSUCCESS\talice@test\t2026-03-01 08:00:00+00:00\tloaded by hand\n", ip.runID)
		if r.Stdout != want {
			t.Fatalf("history:\n%s\nwant:\n%s", r.Stdout, want)
		}
		r = ip.OK("history", "--pipeline_code", "SALES", "--task_code", "load", "--run-id", fmt.Sprint(ip.runID))
		if !strings.HasPrefix(r.Stdout, "PIPELINE_RUN_ID\tSTATUS\tATTEMPTS\tSOURCE_COUNT\tTARGET_COUNT\tSTART_DATE\tEND_DATE\tERROR_MESSAGE\n"+
			fmt.Sprintf("%d\tFAILED\t2\t\t\t2026-03-01 06:00:20+00:00\t2026-03-01 06:01:20+00:00\tCatalog Error: Table main.raw does not exist LINE 1\n", ip.runID)) {
			t.Fatalf("task history:\n%s", r.Stdout)
		}
		if s := schemaOf(t, ip.OK("history", "--pipeline_code", "UP", "--format", "json")); s != "etl-craft/history/1" {
			t.Fatalf("history schema %q", s)
		}
		if r := ip.OK("history", "--pipeline_code", "NEW"); r.Stdout != "(no runs yet)\n" {
			t.Fatalf("a new pipeline's history: %q", r.Stdout)
		}

		r = ip.Run(nil, "validate")
		if r.Code != 1 || !strings.Contains(r.Stdout, "[FAIL] SALES.alert: EMAIL_TO or NOTIFY_CHANNELS is required") ||
			!strings.Contains(r.Stdout, "\nchecked 3 pipeline(s) and 4 task(s): ") {
			t.Fatalf("validate exited %d:\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		r = ip.Run(nil, "validate", "--pipeline_code", "NEW", "--format", "json")
		if r.Code != 0 || schemaOf(t, r) != "etl-craft/validation/1" {
			t.Fatalf("validate NEW exited %d:\n%s%s", r.Code, r.Stdout, r.Stderr)
		}

		if after := rowCounts(t, ip.db); !reflect.DeepEqual(before, after) {
			t.Fatalf("the read-only commands changed row counts:\nbefore %v\nafter  %v", before, after)
		}
	})
}

func TestListAndStatusShowTheNextTick(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.EditConfig("  Mode: local\n", "  Mode: local\n  Timezone: America/New_York\n")
		p.OK("init-db")
		db := p.DB()
		b := pipelinetest.New(t, db)
		// Start dates in the future make the next ticks the same whatever the time.
		b.Pipeline("BERLIN", pipeline.Full)
		b.Exec("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '30 6 * * *', SCHEDULE_TIMEZONE = 'Europe/Berlin', " +
			"SCHEDULE_START_DATE = '2100-01-04' WHERE PIPELINE_CODE = 'BERLIN'")
		b.Pipeline("BROKEN", pipeline.Full)
		b.Exec("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 6 * *' WHERE PIPELINE_CODE = 'BROKEN'")
		b.Pipeline("NEWYORK", pipeline.Full)
		b.Exec("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '@daily', SCHEDULE_START_DATE = '2100-07-01' WHERE PIPELINE_CODE = 'NEWYORK'")
		rec := inspecttest.New(t, db, actor.Actor{Name: "alice@test", Kind: actor.Human})
		s := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
		runID := rec.Run(b.PipelineID("BERLIN"), inspecttest.Run{Key: "k1", Status: "SUCCESS", RunDate: "2026-03-01", Start: s, End: s})
		broken := "invalid: RUN_SCHEDULE '0 6 * *' has 4 fields, not 5"

		wantList(t, p.OK("list"),
			"BERLIN\tBERLIN pipeline\tFULL\t30 6 * * *\t\t\t2100-01-04 05:30:00+00:00",
			"BROKEN\tBROKEN pipeline\tFULL\t0 6 * *\t\t\t"+broken,
			"NEWYORK\tNEWYORK pipeline\tFULL\t@daily\t\t\t2100-07-01 04:00:00+00:00")
		var list struct {
			Pipelines []struct {
				NextTick      *string `json:"next_tick"`
				ScheduleError *string `json:"schedule_error"`
			} `json:"pipelines"`
		}
		r := p.OK("list", "--format", "json")
		if err := json.Unmarshal([]byte(r.Stdout), &list); err != nil || len(list.Pipelines) != 3 ||
			list.Pipelines[0].NextTick == nil || *list.Pipelines[0].NextTick != "2100-01-04T05:30:00+00:00" ||
			list.Pipelines[0].ScheduleError != nil || list.Pipelines[1].NextTick != nil ||
			list.Pipelines[1].ScheduleError == nil || "invalid: "+*list.Pipelines[1].ScheduleError != broken {
			t.Fatalf("list JSON %v:\n%s", err, r.Stdout)
		}

		r = p.OK("status", "--pipeline_code", "BERLIN")
		if !strings.HasSuffix(r.Stdout, "blocked by failures: (none)\nnext tick: 2100-01-04 05:30:00+00:00\n") {
			t.Fatalf("status:\n%s", r.Stdout)
		}
		var st struct {
			Pipeline struct {
				NextTick *string `json:"next_tick"`
			} `json:"pipeline"`
		}
		r = p.OK("status", "--pipeline_code", "BERLIN", "--run-id", fmt.Sprint(runID), "--format", "json")
		if err := json.Unmarshal([]byte(r.Stdout), &st); err != nil || st.Pipeline.NextTick == nil ||
			*st.Pipeline.NextTick != "2100-01-04T05:30:00+00:00" {
			t.Fatalf("status JSON %v:\n%s", err, r.Stdout)
		}

		r = p.Run(nil, "validate")
		if r.Code != 1 || !strings.Contains(r.Stdout, "[FAIL] BROKEN: RUN_SCHEDULE '0 6 * *' has 4 fields, not 5; ") {
			t.Fatalf("validate exited %d:\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
	})
}

func TestInspectionCommandsRefuseWithTheirExitCodes(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		missing := map[engine.Kind]string{engine.SQLite: "does not exist: run `etl-craft setup`",
			engine.Postgres: "has no etl-craft tables: run `etl-craft setup`"}
		e2e.WantExit(t, p.Run(nil, "list"), 3, missing[kind])
		if _, err := os.Stat(filepath.Join(p.Dir, "state")); err == nil {
			t.Fatal("list created the SQLite Engine DB's folder")
		}
		p.OK("init-db")
		if r := p.OK("list"); r.Stdout != "(no active pipelines)\n" {
			t.Fatalf("an empty list: %q", r.Stdout)
		}
		ip := newInspectedProject(t, kind)
		before := rowCounts(t, ip.db)
		e2e.WantExit(t, ip.Run(nil, "graph"), 2, "--pipeline_code is required")
		e2e.WantExit(t, ip.Run(nil, "list", "--format", "xml"), 2, "use text or json")
		e2e.WantExit(t, ip.Run(nil, "graph", "--pipeline_code", "SALE"), 4, "did you mean SALES?")
		e2e.WantExit(t, ip.Run(nil, "history", "--pipeline_code", "SALES", "--task_code", "loads", "--all"), 4, "did you mean load?")
		e2e.WantExit(t, ip.Run(nil, "steps", "--pipeline_code", "SALES", "--run-id", "0"), 2, "--run-id must be a positive")
		e2e.WantExit(t, ip.Run(nil, "status", "--pipeline_code", "SALES", "--run-key", " "), 2, "--run-key must not be blank")
		e2e.WantExit(t, ip.Run(nil, "steps", "--pipeline_code", "SALES", "--run-id", "1", "--run-key", "k"), 2, "pass only one")
		e2e.WantExit(t, ip.Run(nil, "history", "--pipeline_code", "SALES", "--all", "--run-id", "1"), 2, "--all lists")
		e2e.WantExit(t, ip.Run(nil, "history", "--pipeline_code", "SALES", "--all", "--limit", "0"), 2, "--limit must be 1 or more")
		// A run of another pipeline never matches.
		foreign := fmt.Sprint(ip.upRunID)
		for _, cmd := range []string{"steps", "status", "history"} {
			e2e.WantExit(t, ip.Run(nil, cmd, "--pipeline_code", "SALES", "--run-id", foreign), 9, "matched 0 runs")
		}
		if r := ip.OK("steps", "--pipeline_code", "UP"); !strings.Contains(r.Stdout, "publish\tNOT-RUN\tSQL") {
			t.Fatalf("UP's one run in progress: %s", r.Stdout)
		}
		if after := rowCounts(t, ip.db); !reflect.DeepEqual(before, after) {
			t.Fatalf("refused commands changed row counts:\nbefore %v\nafter  %v", before, after)
		}
	})
}

func TestAuditListsRequestsAndChangesAndWritesNothing(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		p.Write("migrations/0001_pipelines.sql",
			"INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('SALES', 'Sales', 'FULL');\n"+
				"INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('OTHER', 'Other', 'FULL');\n")
		ci := []string{"ETL_CRAFT_ACTOR=ci:build-7", "ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR"}
		if r := p.Run(ci, "migrate"); r.Code != 0 {
			t.Fatalf("migrate: %d %s", r.Code, r.Stderr)
		}
		db := p.DB()
		ctx := actor.With(context.Background(), actor.Actor{Name: "bob@test", Kind: actor.Human})
		req := audit.Request{Command: "pause", PipelineCode: "SALES", Arguments: map[string]any{"reason": "x", "secret": "s3cr3t"}}
		if _, err := audit.Record(ctx, db, req); err != nil {
			t.Fatal(err)
		}
		before := rowCounts(t, db)

		r := p.OK("audit")
		tables := strings.Split(r.Stdout, "\n\n")
		if len(tables) != 2 {
			t.Fatalf("audit prints two tables:\n%s", r.Stdout)
		}
		actions, changes := strings.Split(strings.TrimSpace(tables[0]), "\n"), strings.Split(strings.TrimSpace(tables[1]), "\n")
		if actions[0] != "AT\tACTOR\tKIND\tCOMMAND\tOUTCOME\tARGUMENTS" || len(actions) != 4 ||
			!strings.Contains(actions[2], "\tci:build-7\tORCHESTRATOR\tmigrate\tREQUESTED\t{}") ||
			!strings.HasSuffix(actions[3], "\tbob@test\tHUMAN\tpause\tREQUESTED\t"+`{"reason":"x","secret":"[REDACTED]"}`) {
			t.Fatalf("actions:\n%s", tables[0])
		}
		if changes[0] != "AT\tACTOR\tKIND\tTABLE\tROW\tOPERATION\tBEFORE\tAFTER\tMIGRATION" || len(changes) != 3 {
			t.Fatalf("changes:\n%s", tables[1])
		}
		fields := strings.Split(changes[1], "\t")
		if len(fields) != 9 || fields[1] != "ci:build-7" || fields[2] != "ORCHESTRATOR" || fields[3] != "CFG_PIPELINES" ||
			fields[5] != "INSERT" || fields[6] != "" || !strings.Contains(fields[7], `"pipeline_code":"SALES"`) ||
			fields[8] != "0001_pipelines.sql" {
			t.Fatalf("the SALES insert: %q", fields)
		}

		r = p.OK("audit", "--pipeline_code", "SALES", "--format", "json")
		var doc struct {
			Schema  string `json:"schema"`
			Actions []struct {
				Schema    string         `json:"schema"`
				Command   string         `json:"command"`
				At        string         `json:"at"`
				Arguments map[string]any `json:"arguments"`
			} `json:"actions"`
			Changes []struct {
				Schema    string         `json:"schema"`
				RowKey    string         `json:"row_key"`
				After     map[string]any `json:"after_json"`
				Before    map[string]any `json:"before_json"`
				Migration string         `json:"migration"`
			} `json:"changes"`
		}
		if err := json.Unmarshal([]byte(r.Stdout), &doc); err != nil || doc.Schema != "etl-craft/audit/1" ||
			len(doc.Actions) != 1 || doc.Actions[0].Schema != "etl-craft/action/1" || doc.Actions[0].Command != "pause" ||
			doc.Actions[0].Arguments["secret"] != "[REDACTED]" || !strings.HasSuffix(doc.Actions[0].At, "+00:00") ||
			len(doc.Changes) != 1 || doc.Changes[0].Schema != "etl-craft/metadata-change/1" ||
			doc.Changes[0].After["pipeline_code"] != "SALES" || doc.Changes[0].Before != nil ||
			doc.Changes[0].Migration != "0001_pipelines.sql" {
			t.Fatalf("audit JSON %v:\n%s", err, r.Stdout)
		}

		future := time.Now().UTC().Add(48 * time.Hour).Format(time.DateOnly)
		if r := p.OK("audit", "--since", future); r.Stdout != "(no actions)\n\n(no metadata changes)\n" {
			t.Fatalf("audit --since %s: %q", future, r.Stdout)
		}
		e2e.WantExit(t, p.Run(nil, "audit", "--since", "last week"), 2, "is not an ISO date or timestamp")
		e2e.WantExit(t, p.Run(nil, "audit", "--pipeline_code", "SALE"), 4, "did you mean SALES?")
		if after := rowCounts(t, db); !reflect.DeepEqual(before, after) {
			t.Fatalf("audit changed row counts:\nbefore %v\nafter  %v", before, after)
		}
	})
}
