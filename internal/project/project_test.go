package project_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/quickstart"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool/pooltest"
)

// quickstartConfig writes the quickstart project (a SQLite Engine DB and a
// DuckDB warehouse, cloning on) into a folder and loads its configuration.
func quickstartConfig(t *testing.T) *config.Config {
	t.Helper()
	dir := t.TempDir()
	if _, err := quickstart.Write(dir); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func acting() context.Context {
	return actor.With(context.Background(), actor.Actor{Name: "tester@host", Kind: actor.Human})
}

// A read-only opening neither creates a SQLite Engine DB nor opens one
// without etl-craft's tables.
func TestForReadingCreatesNothing(t *testing.T) {
	cfg := quickstartConfig(t)
	_, err := project.Open(acting(), cfg, project.ForReading())
	if exit.CodeOf(err) != exit.Configuration || !strings.Contains(err.Error(), "does not exist: run `etl-craft setup`") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(cfg.Engine.SQLitePath); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the SQLite Engine DB was created: %v", err)
	}
	p, err := project.Open(acting(), cfg, project.WithoutWarehouse())
	if err != nil {
		t.Fatal(err)
	}
	if p.Warehouse != nil {
		t.Error("WithoutWarehouse opened the warehouse pool")
	}
	p.Close()
	_, err = project.Open(acting(), cfg, project.ForReading())
	if exit.CodeOf(err) != exit.Configuration || !strings.Contains(err.Error(), "etl-craft setup") {
		t.Fatalf("an Engine DB without tables: %v", err)
	}
}

// The opened project runs a pipeline with its SQL handler on its warehouse,
// and clones the Engine DB after the run, unless WithoutCloneHook.
func TestOpenRunsAndClones(t *testing.T) {
	cfg := quickstartConfig(t)
	ctx := acting()
	p := openSetUp(t, cfg)
	defer p.Close()
	if _, err := p.Handlers.For(pipeline.HandlerSQL); err != nil || p.Warehouse == nil {
		t.Fatalf("SQL handler: %v; warehouse %v", err, p.Warehouse)
	}
	if p.Supervisor() != p.Supervisor() {
		t.Fatal("the supervisor is built more than once")
	}
	out, err := p.Supervisor().RunPipeline(ctx, run.Request{PipelineCode: quickstart.Pipeline})
	if err != nil || out.Status != run.RunSuccess {
		t.Fatalf("%q %v", out.String(), err)
	}
	if n := mirroredRuns(t, p); n != "1" {
		t.Fatalf("the after-run clone mirrored %s runs; want 1", n)
	}
	p.Close()

	p, err = project.Open(ctx, cfg, project.WithoutCloneHook())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := p.Supervisor().RunPipeline(ctx, run.Request{PipelineCode: quickstart.Pipeline}); err != nil || out.Status != run.RunSuccess {
		t.Fatalf("%q %v", out.String(), err)
	}
	if n := mirroredRuns(t, p); n != "1" {
		t.Fatalf("WithoutCloneHook: the mirror holds %s runs; want the first clone's 1", n)
	}
	reading, err := project.Open(ctx, cfg, project.ForReading())
	if err != nil {
		t.Fatal(err)
	}
	defer reading.Close()
	if reading.Warehouse != nil {
		t.Error("ForReading opened the warehouse pool")
	}
}

// openSetUp opens the project and sets its Engine DB up (schema and project
// migrations); the test closes it.
func openSetUp(t *testing.T, cfg *config.Config, opts ...project.Option) *project.Project {
	t.Helper()
	p, err := project.Open(acting(), cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := cfg.MigrationsDir("")
	if _, err := (&migrate.Runner{DB: p.DB, ProjectDir: dir}).Setup(acting()); err != nil {
		p.Close()
		t.Fatal(err)
	}
	return p
}

// mirroredRuns counts the runs in the warehouse's mirror of
// AUD_PIPELINES_RUN_LOG.
func mirroredRuns(t *testing.T, p *project.Project) string {
	t.Helper()
	return pooltest.Value(t, p.Warehouse, `SELECT COUNT(*) FROM main."AUD_PIPELINES_RUN_LOG"`)
}

// The project's EMAIL_ALERT handler sends over Orchestration.Email, and
// fails its task, without deciding the run, when there are no Email
// settings.
func TestAlertsSendOverTheEmailSettings(t *testing.T) {
	cfg := quickstartConfig(t)
	ctx := acting()
	srv := mailtest.Start(t, mailtest.Options{})
	runAlert := func() (run.Outcome, string, string) {
		t.Helper()
		p := openSetUp(t, cfg, project.WithoutCloneHook())
		defer p.Close()
		if _, err := p.Handlers.For(pipeline.HandlerEmailAlert); err != nil {
			t.Fatal(err)
		}
		out, err := p.Supervisor().RunPipeline(ctx, run.Request{PipelineCode: quickstart.Pipeline})
		if err != nil {
			t.Fatal(err)
		}
		var status, message string
		if err := p.DB.QueryRowContext(ctx, `SELECT tr.STATUS, COALESCE(tr.ERROR_MESSAGE, '') FROM AUD_TASK_RUN_LOG tr
			JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID WHERE tr.PIPELINE_RUN_ID = $1 AND t.TASK_CODE = 'alert'`, out.RunID).Scan(&status, &message); err != nil {
			t.Fatal(err)
		}
		return out, status, message
	}
	p := openSetUp(t, cfg, project.WithoutWarehouse())
	pipelinetest.New(t, p.DB).Task(quickstart.Pipeline, "alert", pipeline.HandlerEmailAlert,
		map[string]string{"EMAIL_TO": "ops@example.com", "EMAIL_SUBJECT": "$$pipeline_code: $$status", "EMAIL_BODY": "run $$pipeline_run_id"})
	p.Close()

	out, status, message := runAlert()
	if out.Status != run.RunSuccess || status != "FAILED" || !strings.Contains(message, "sending email needs Orchestration.Email in "+cfg.Path) {
		t.Fatalf("without Email settings: run %q, alert %s %q", out.String(), status, message)
	}
	cfg.Orchestration.Email = srv.Settings("etl@example.com")
	if out, status, message = runAlert(); out.Status != run.RunSuccess || status != "SUCCESS" {
		t.Fatalf("with Email settings: run %q, alert %s %q", out.String(), status, message)
	}
	if msgs := srv.Messages(); len(msgs) != 1 || msgs[0].To[0] != "ops@example.com" || !strings.Contains(string(msgs[0].Data), "Subject: "+quickstart.Pipeline+": ") {
		t.Fatalf("messages %v", msgs)
	}
}

// The opened project runs BUSINESS_RULES tasks: the quickstart's
// migrations/0002_check_orders.sql, which docs/business-rules.md shows as
// its example, adds a rules task to the quickstart pipeline, and a run flags
// the order its rules find.
func TestOpenRunsBusinessRules(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "business-rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	const start = "```sql\n-- migrations/0002_check_orders.sql\n"
	i := strings.Index(string(doc), start)
	if i < 0 {
		t.Fatal("docs/business-rules.md has no example migration 0002_check_orders.sql")
	}
	example := string(doc)[i+len(start):]
	example = example[:strings.Index(example, "```")]
	cfg := quickstartConfig(t)
	dir, _ := cfg.MigrationsDir("")
	if shipped, err := os.ReadFile(filepath.Join(dir, "0002_check_orders.sql")); err != nil || strings.TrimSpace(string(shipped)) != strings.TrimSpace(example) {
		t.Fatalf("the quickstart's 0002_check_orders.sql is not the example of docs/business-rules.md (%v)", err)
	}
	ctx := acting()
	p, err := project.Open(ctx, cfg, project.WithoutCloneHook())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := (&migrate.Runner{DB: p.DB, ProjectDir: dir}).Setup(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := p.Supervisor().RunPipeline(ctx, run.Request{PipelineCode: quickstart.Pipeline})
	if err != nil || out.Status != run.RunSuccess {
		t.Fatalf("%q %v", out.String(), err)
	}
	var flags string
	err = p.DB.QueryRowContext(ctx, `SELECT r.BUSINESS_RULE_NAME || ' ' || s.BUSINESS_RULE_KEY || ' ' || s.STATUS
FROM AUD_BUSINESS_RULES_RESULTS s JOIN CFG_BUSINESS_RULES r ON r.BUSINESS_RULE_ID = s.BUSINESS_RULE_ID
WHERE s.ACTIVE_FLAG = 'Y'`).Scan(&flags)
	if err != nil || flags != "large_order 103 REPORT" {
		t.Fatalf("flags %q (%v), want large_order 103 REPORT", flags, err)
	}
	var counts string
	err = p.DB.QueryRowContext(ctx, `SELECT tr.STATUS || ' ' || tr.INSERT_COUNT || ' ' || tr.UPDATE_COUNT FROM AUD_TASK_RUN_LOG tr
JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID WHERE t.TASK_CODE = 'check_orders'`).Scan(&counts)
	if err != nil || counts != "SUCCESS 1 0" {
		t.Fatalf("check_orders: %q (%v), want SUCCESS 1 0", counts, err)
	}
}
