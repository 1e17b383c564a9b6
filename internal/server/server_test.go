package server_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/server"
)

// The optional handler is served on Orchestration.Api_address while the
// server runs, with the body limit, and shut down when it stops; the
// server records its overseer row and returns nil on a clean stop.
func TestServerServesTheHandler(t *testing.T) {
	dir := t.TempDir()
	yml := "Secrets:\n  Source_type: environment\n  Profile: dev\n\nOrchestration:\n  Mode: local\n  Api_address: 127.0.0.1:0\n  Shutdown_grace_seconds: 0\n\n" +
		"Engine:\n  dev:\n    jdbc_url: jdbc:sqlite:state/engine.db\n    schema: main\n"
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	ctx := actor.With(context.Background(), actor.Actor{Name: "ops@host", Kind: actor.Human})
	p, err := project.Open(ctx, cfg, project.ForServer())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	mdir, _ := cfg.MigrationsDir("")
	if _, err := (&migrate.Runner{DB: p.DB, ProjectDir: mdir}).Setup(ctx); err != nil {
		t.Fatal(err)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		io.WriteString(w, "read "+strconv.Itoa(len(b)))
	})
	addr := make(chan string, 1)
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(sctx, server.Options{Project: p, Version: "test", Handler: handler,
			Started: func(_ int64, a string) { addr <- a }})
	}()
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatalf("the server stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not start")
	}
	resp, err := http.Post(base+"/", "text/plain", strings.NewReader("abc"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "read 3" {
		t.Fatalf("the handler answered %q", body)
	}
	resp, err = http.Post(base+"/", "text/plain", strings.NewReader(strings.Repeat("x", server.MaxBodyBytes+1)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body over the limit: %s", resp.Status)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + "/"); err == nil {
		t.Fatal("the API still answers after the server stopped")
	}
	var stopped int
	if err := p.DB.QueryRowContext(ctx, "SELECT count(*) FROM AUD_OVERSEERS WHERE STOPPED_AT IS NOT NULL").Scan(&stopped); err != nil || stopped != 1 {
		t.Fatalf("%d overseer rows stopped: %v", stopped, err)
	}
}

// TestMain removes the binary the black-box benchmarks build.
func TestMain(m *testing.M) { e2e.Main(m) }
