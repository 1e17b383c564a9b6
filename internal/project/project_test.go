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
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
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
	p, err := project.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	dir, _ := cfg.MigrationsDir("")
	if _, err := (&migrate.Runner{DB: p.DB, ProjectDir: dir}).Setup(ctx); err != nil {
		t.Fatal(err)
	}
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

// mirroredRuns counts the runs in the warehouse's mirror of
// AUD_PIPELINES_RUN_LOG.
func mirroredRuns(t *testing.T, p *project.Project) string {
	t.Helper()
	return pooltest.Value(t, p.Warehouse, `SELECT COUNT(*) FROM main."AUD_PIPELINES_RUN_LOG"`)
}
