package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

// binary is the etl-craft binary built once for the black-box tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "etl-craft-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "etl-craft")
	build := exec.Command("go", "build", "-o", binary, "github.com/etl-craft/etl-craft/cmd/etl-craft")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building etl-craft:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the binary printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// project is a temporary project folder with a craft-connector.yml.
type project struct {
	t    *testing.T
	dir  string
	env  []string
	kind engine.Kind
	opts engine.Options
}

// newProject writes a project whose Engine DB is a fresh database of the
// dialect and whose warehouse is a DuckDB file; extra is appended to the YAML.
func newProject(t *testing.T, kind engine.Kind, extra string) *project {
	t.Helper()
	p := &project{t: t, dir: t.TempDir(), kind: kind}
	var engineBlock string
	if kind == engine.SQLite {
		engineBlock = "    jdbc_url: jdbc:sqlite:state/engine.db\n    schema: main\n"
		p.opts = engine.Options{Kind: engine.SQLite, Path: filepath.Join(p.dir, "state", "engine.db")}
	} else {
		raw := enginetest.NewPGDatabase(t)
		u, _ := url.Parse(raw)
		pw, _ := u.User.Password()
		engineBlock = fmt.Sprintf("    jdbc_url: jdbc:postgresql://%s%s?sslmode=disable\n    schema: public\n    auth_mode: password\n    user: %s\n    secret: ENGINE_SECRET\n",
			u.Host, u.Path, u.User.Username())
		p.env = append(p.env, "ENGINE_SECRET="+pw)
		p.opts = engine.Options{Kind: engine.Postgres, DSN: raw, Schema: "public"}
	}
	p.write("craft-connector.yml", connectorYAML(engineBlock, duckdbWarehouse)+extra)
	return p
}

// duckdbWarehouse is the Warehouse section of a DuckDB file in the project.
const duckdbWarehouse = "  Name: DuckDB\n  dev:\n    jdbc_url: jdbc:duckdb:warehouse.duckdb\n    schema: main\n"

// connectorYAML is a craft-connector.yml in local mode whose secrets come
// from the environment, with the Engine's dev profile block engineBlock (its
// lines indented four spaces) and the Warehouse section's body. A server
// started in it serves its API on a free loopback port, so that tests run
// side by side.
func connectorYAML(engineBlock, warehouse string) string {
	return "Secrets:\n  Source_type: environment\n  Profile: dev\n\nOrchestration:\n  Mode: local\n  Api_address: 127.0.0.1:0\n\n" +
		"Engine:\n  dev:\n" + engineBlock + "\n" + "Warehouse:\n" + warehouse
}

func (p *project) write(name, text string) {
	p.t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// editConfig replaces the first old in the project's craft-connector.yml,
// which must hold it, with new.
func (p *project) editConfig(old, new string) {
	p.t.Helper()
	yml, err := os.ReadFile(filepath.Join(p.dir, "craft-connector.yml"))
	if err != nil || !strings.Contains(string(yml), old) {
		p.t.Fatalf("craft-connector.yml lacks %q (%v)", old, err)
	}
	p.write("craft-connector.yml", strings.Replace(string(yml), old, new, 1))
}

// command returns the command that runs the binary in the project folder.
func (p *project) command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(binary, args...)
	cmd.Dir = p.dir
	cmd.Env = append(append(append(os.Environ(), "ETL_CRAFT_CONFIG=", "ETL_CRAFT_FAULT="), p.env...), env...)
	return cmd
}

// run runs the binary with extra environment variables and arguments.
func (p *project) run(env []string, args ...string) result {
	p.t.Helper()
	cmd := p.command(env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		p.t.Fatalf("running etl-craft %s: %v", strings.Join(args, " "), err)
	}
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// ok runs the binary and fails the test unless it exits 0.
func (p *project) ok(args ...string) result {
	p.t.Helper()
	r := p.run(nil, args...)
	if r.code != 0 {
		p.t.Fatalf("etl-craft %s exited %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	return r
}

// db opens the project's Engine DB.
func (p *project) db() *engine.DB {
	p.t.Helper()
	db, err := engine.Open(p.t.Context(), p.opts)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { db.Close() })
	return db
}

// eachKind runs body as subtests on a SQLite and a PostgreSQL Engine DB.
func eachKind(t *testing.T, body func(t *testing.T, kind engine.Kind)) {
	for _, k := range enginetest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			if k == engine.Postgres {
				enginetest.AdminURL(t)
			}
			body(t, k)
		})
	}
}

// jsonUnmarshal decodes one JSON document printed by a command.
func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
