package email_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/email"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// supervisor returns a supervisor running SQL tasks on a DuckDB warehouse
// and alerts sent to srv, and the buffer of its log.
func supervisor(t *testing.T, db *engine.DB, srv *mailtest.Server) (*run.Supervisor, *bytes.Buffer) {
	wh := pool.New(db, warehouse.Options{Kind: warehouse.DuckDB, Path: filepath.Join(t.TempDir(), "w.duckdb"), Schema: "main"})
	t.Cleanup(func() { wh.Close() })
	logs := &bytes.Buffer{}
	settings := srv.Settings(from)
	return run.New(run.Options{
		DB: db, Warehouse: wh, LogDir: t.TempDir(), Defaults: run.Defaults{TaskTimeout: time.Hour},
		Handlers: handler.Registry{pipeline.HandlerSQL: sqltask.New(db),
			pipeline.HandlerEmailAlert: email.New(db, email.Options{Mail: func() (*mail.Sender, error) { return mail.New(settings, nil) }})},
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
	}), logs
}

func acting() context.Context {
	return actor.With(context.Background(), actor.Actor{Name: "tester@host", Kind: actor.Human})
}

// taskRun returns the status and TASK_LOG of a task's run under the run.
func taskRun(t *testing.T, db *engine.DB, runID int64, code string) (status, log string) {
	t.Helper()
	err := db.QueryRowContext(context.Background(), `SELECT tr.STATUS, COALESCE(tr.TASK_LOG, '') FROM AUD_TASK_RUN_LOG tr
		JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID WHERE tr.PIPELINE_RUN_ID = $1 AND t.TASK_CODE = $2`, runID, code).Scan(&status, &log)
	if err != nil {
		t.Fatal(err)
	}
	return status, log
}

// TestAnAlertAfterAFailedSQLTaskIsSentAndTheRunKeepsTheSQLOutcome runs real
// pipelines: SQL tasks on a DuckDB warehouse, and an alert on an ALWAYS
// dependency on the last of them.
func TestAnAlertAfterAFailedSQLTaskIsSentAndTheRunKeepsTheSQLOutcome(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.SQLite)
	b := pipelinetest.New(t, db)
	srv := mailtest.Start(t, mailtest.Options{Refuse: []string{"gone@example.com"}})
	sup, logs := supervisor(t, db, srv)
	pipe := func(code, source, to string) run.Outcome {
		t.Helper()
		b.Pipeline(code, "FULL")
		b.Task(code, "setup", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "SETUP_TABLE", "SETUP_FOR": "APPEND_TABLE",
			"TARGET_OBJECT": "main." + code + "_orders", "SOURCE_SQL": "SELECT 1 AS id"})
		b.Task(code, "load", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "APPEND_TABLE",
			"TARGET_OBJECT": "main." + code + "_orders", "SOURCE_SQL": source})
		b.Task(code, "alert", pipeline.HandlerEmailAlert, map[string]string{"EMAIL_TO": to,
			"EMAIL_SUBJECT": "[$$status] $$pipeline_code", "EMAIL_BODY": "Run $$pipeline_run_id"})
		b.Dep(code, "load", code, "setup", pipeline.Success)
		b.Dep(code, "alert", code, "load", pipeline.Always)
		out, err := sup.RunPipeline(acting(), run.Request{PipelineCode: code})
		if err != nil {
			t.Fatalf("%s: %v\n%s", code, err, logs)
		}
		return out
	}
	taskStatus := func(runID int64, code string) (string, string) { return taskRun(t, db, runID, code) }

	out := pipe("BROKEN", "SELECT id FROM main.no_such_table", "ops@example.com")
	if out.Status != run.RunFailed || out.Detail != "1 task(s) did not succeed: load (FAILED)" {
		t.Fatalf("outcome %q\n%s", out.String(), logs)
	}
	status, log := taskStatus(out.RunID, "alert")
	if status != "SUCCESS" || !strings.HasPrefix(log, "EMAIL_OUTCOME = FAILED\nEMAIL_SENT = Y\nEMAIL_SUBJECT = [FAILED] BROKEN\n") {
		t.Fatalf("alert %s, TASK_LOG:\n%s", status, log)
	}
	m := parse(t, srv.Messages()[0])
	if m.subject != "[FAILED] BROKEN" || !strings.Contains(m.text, "\nload   SQL      FAILED   1\n") ||
		!strings.Contains(m.html, "no_such_table") {
		t.Fatalf("subject %q\n%s\n%s", m.subject, m.text, m.html)
	}

	out = pipe("GOOD", "SELECT 2 AS id", "gone@example.com")
	if out.Status != run.RunSuccess {
		t.Fatalf("a failed alert decided the run: %q", out.String())
	}
	if status, _ := taskStatus(out.RunID, "alert"); status != "FAILED" {
		t.Fatalf("an alert whose every recipient was refused: %s", status)
	}
	if n := len(srv.Messages()); n != 1 {
		t.Fatalf("%d messages", n)
	}
}

// The complete example of docs/alerts.md applies as a project migration and
// runs as the page says.
func TestTheDocumentedExampleRuns(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/alerts.md")
	if err != nil {
		t.Fatal(err)
	}
	_, example, _ := strings.Cut(string(doc), "## A complete example")
	_, example, _ = strings.Cut(example, "```sql\n")
	example, _, _ = strings.Cut(example, "```")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "0002_sales_alerts.sql"), []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	db := pipelinetest.DB(t, engine.SQLite)
	if _, err := (&migrate.Runner{DB: db, ProjectDir: dir}).Migrate(acting()); err != nil {
		t.Fatal(err)
	}
	srv := mailtest.Start(t, mailtest.Options{})
	sup, logs := supervisor(t, db, srv)
	out, err := sup.RunPipeline(acting(), run.Request{PipelineCode: "SALES"})
	if err != nil || out.Status != run.RunSuccess {
		t.Fatalf("%q %v\n%s", out.String(), err, logs)
	}
	if st, _ := taskRun(t, db, out.RunID, "on_failure"); st != "SKIPPED" {
		t.Fatalf("on_failure %s", st)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 || parse(t, msgs[0]).subject != "SALES is ready" {
		t.Fatalf("%d messages", len(msgs))
	}

	pipelinetest.New(t, db).Exec(`UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = 'SELECT * FROM main.no_such_table'
		WHERE PARAMETER_NAME = 'SOURCE_SQL' AND TASK_ID = (SELECT TASK_ID FROM CFG_TASKS WHERE TASK_CODE = 'extract')`)
	out, err = sup.RunPipeline(acting(), run.Request{PipelineCode: "SALES"})
	if err != nil || out.Status != run.RunFailed {
		t.Fatalf("%q %v\n%s", out.String(), err, logs)
	}
	var subjects []string
	for _, m := range srv.Messages()[1:] {
		r := parse(t, m)
		subjects = append(subjects, r.subject+" → "+strings.Join(m.To, ","))
	}
	slices.Sort(subjects)
	want := []string{
		"SALES failed: extract: read the SELECT's columns failed for main.raw_orders: Catalog Error: Table with name no_such_table does not exist! → oncall@example.com,data-team@example.com",
		fmt.Sprintf("[FAILED] SALES run %d → data-team@example.com", out.RunID),
	}
	if !slices.Equal(subjects, want) {
		t.Fatalf("sent %q", subjects)
	}
}
