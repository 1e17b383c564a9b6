package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Sections of a small valid file, for tests to combine.
const (
	secretsEnv = `Secrets:
  Source_type: environment
  Profile: dev
`
	orchLocal = `Orchestration:
  Mode: local
`
	engineSQLite = `Engine:
  dev:
    jdbc_url: jdbc:sqlite:engine.db
    schema: main
`
	warehouseDuck = `Warehouse:
  Name: DuckDB
  dev:
    jdbc_url: jdbc:duckdb:warehouse.duckdb
    schema: analytics
`
	minimal = secretsEnv + orchLocal + engineSQLite
)

// writeFiles writes files (path relative to dir: content) into a new folder
// and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// loadYAML writes yml as craft-connector.yml in a new folder and loads it.
func loadYAML(t *testing.T, yml string) (*Config, string, error) {
	t.Helper()
	dir := writeFiles(t, map[string]string{FileName: yml})
	path := filepath.Join(dir, FileName)
	cfg, err := Load(path)
	return cfg, path, err
}

// mustLoad loads yml and fails the test on an error.
func mustLoad(t *testing.T, yml string) *Config {
	t.Helper()
	cfg, _, err := loadYAML(t, yml)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

// wantConfigError checks err is a configuration error (exit 3) holding every
// one of want.
func wantConfigError(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("Load succeeded; want an error containing %q", want)
	}
	if code := exit.CodeOf(err); code != exit.Configuration {
		t.Errorf("exit code %v, want CONFIGURATION: %v", code, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\n does not contain %q", err, w)
		}
	}
}

// errorCase is a file, written as body, that must fail to load with an
// error containing want.
type errorCase struct{ name, body, want string }

// asIs is the wrap of errorCases whose body is the whole file.
func asIs(body string) string { return body }

// checkErrors loads wrap(body) for each case and checks the error, which
// must contain none of absent.
func checkErrors(t *testing.T, wrap func(string) string, cases []errorCase, absent ...string) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := loadYAML(t, wrap(c.body))
			wantConfigError(t, err, c.want)
			for _, a := range absent {
				if err != nil && strings.Contains(err.Error(), a) {
					t.Errorf("the error shows %q: %v", a, err)
				}
			}
		})
	}
}

// setenv sets environment variables for one test.
func setenv(t *testing.T, vars map[string]string) {
	t.Helper()
	for k, v := range vars {
		t.Setenv(k, v)
	}
}

func TestMinimalFileAndDefaults(t *testing.T) {
	cfg, path, err := loadYAML(t, minimal+warehouseDuck)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	if cfg.Path != path || cfg.ProjectDir != dir {
		t.Errorf("Path %q ProjectDir %q; want %q and %q", cfg.Path, cfg.ProjectDir, path, dir)
	}
	o := cfg.Orchestration
	checks := []struct {
		name      string
		got, want any
	}{
		{"Mode", o.Mode, "local"},
		{"APIAddress", o.APIAddress, "127.0.0.1:8730"},
		{"LogDir", o.LogDir, filepath.Join(dir, "logs")},
		{"TaskTimeoutSeconds", o.TaskTimeoutSeconds, 21600},
		{"MaxParallelTasks", o.MaxParallelTasks, 8},
		{"ShutdownGraceSeconds", o.ShutdownGraceSeconds, 60},
		{"GateWaitMinutes", o.GateWaitMinutes, 60},
		{"Timezone", o.Timezone, "UTC"},
		{"Location", o.Location.String(), "UTC"},
		{"DependencyGates", o.DependencyGates, "enforce"},
		{"AllowSchedule", o.AllowSchedule, true},
		{"EnforceSLA", o.EnforceSLA, false},
		{"GlobalDAG", o.GlobalDAG, false},
		{"Catchup unset", o.Catchup == nil, true},
		{"Retries unset", o.Retries == nil, true},
		{"Tags unset", o.Tags == nil, true},
		{"Email unset", o.Email == nil, true},
		{"Engine.Kind", cfg.Engine.Kind, "sqlite"},
		{"Engine.Name", cfg.Engine.Name, "SQLite"},
		{"Engine.Profile", cfg.Engine.Profile, "dev"},
		{"Engine.SQLitePath", cfg.Engine.SQLitePath, filepath.Join(dir, "engine.db")},
		{"Engine.AuthMode", cfg.Engine.AuthMode, "none"},
		{"Engine.Schema", cfg.Engine.Schema, "main"},
		{"Warehouse.Dialect", cfg.Warehouse.Dialect, "duckdb"},
		{"Warehouse.Name", cfg.Warehouse.Name, "DuckDB"},
		{"Warehouse.TableFormat", cfg.Warehouse.TableFormat, "native"},
		{"Warehouse.DuckDBPath", cfg.Warehouse.DuckDBPath, filepath.Join(dir, "warehouse.duckdb")},
		{"Warehouse.Catalog", cfg.Warehouse.Catalog, "warehouse"},
		{"Warehouse.AuthMode", cfg.Warehouse.AuthMode, "none"},
		{"Cloning.Scope", cfg.Cloning.Scope, "cfg"},
		{"Cloning.Effective", cfg.Cloning.Effective(), false},
		{"DocsSite", cfg.DocsSite == nil, true},
		{"CatalogDir", cfg.CatalogDir(), filepath.Join(dir, "catalog")},
		{"Secrets", cfg.Secrets, Secrets{SourceType: "environment", Profile: "dev"}},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestLayoutRules(t *testing.T) {
	cases := []struct {
		name string
		yml  string
		want []string
	}{
		{"sections out of order", orchLocal + secretsEnv + engineSQLite,
			[]string{":1: the sections are in the order Orchestration, Secrets, Engine", "write them as Secrets, Orchestration, Engine"}},
		{"unknown section with suggestion", minimal + "Clonning:\n  Enabled: true\n",
			[]string{FileName + ":10: Clonning: unknown section; did you mean Cloning?"}},
		{"missing Engine", secretsEnv + orchLocal, []string{"missing the Engine section"}},
		{"missing Secrets", orchLocal + engineSQLite, []string{"missing the Secrets section"}},
		{"missing Orchestration", secretsEnv + engineSQLite, []string{"missing the Orchestration section"}},
		{"earlier layout section", minimal + "Dag_defaults:\n  Retries: 1\n",
			[]string{":10: Dag_defaults: this is an earlier craft-connector.yml layout", ExamplePath}},
		{"earlier layout Variables block", secretsEnv + "Orchestration:\n  Mode: local\n  Variables:\n    A: b\n" + engineSQLite,
			[]string{":6: Orchestration.Variables: this is an earlier craft-connector.yml layout", ExamplePath}},
		{"top level not a mapping", "- a\n- b\n", []string{"the top level must be a mapping"}},
		{"empty file", "", []string{"the file is empty"}},
		{"invalid YAML", "Secrets:\n  Source_type: [environment\n", []string{"not valid YAML"}},
		{"two documents", minimal + "---\na: b\n", []string{"more than one YAML document"}},
		{"unknown key names the key and a suggestion", secretsEnv + "Orchestration:\n  Mode: local\n  Max_paralel_tasks: 3\n" + engineSQLite,
			[]string{":6: Orchestration: unknown key 'Max_paralel_tasks' (did you mean Max_parallel_tasks?)"}},
		{"section not a mapping", secretsEnv + "Orchestration: local\n" + engineSQLite,
			[]string{":4: Orchestration: must be a mapping"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, path, err := loadYAML(t, c.yml)
			wantConfigError(t, err, append(c.want, path)...)
		})
	}
}

func TestDuplicateKeys(t *testing.T) {
	yml := minimal + `Warehouse:
  dev:
    jdbc_url: jdbc:duckdb:a.duckdb
    schema: s
    schema: t
`
	_, _, err := loadYAML(t, yml)
	wantConfigError(t, err, ":14: Warehouse.dev.schema: duplicate key: written on line 13 and again on line 14")

	_, _, err = loadYAML(t, minimal+"Orchestration:\n  Mode: remote\n")
	wantConfigError(t, err, "Orchestration: duplicate key: written on line 4 and again on line 10")
}

func TestMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "elsewhere", FileName)
	_, err := Load(missing)
	wantConfigError(t, err, "craft-connector.yml not found", missing)

	_, err = Load(t.TempDir())
	wantConfigError(t, err, "is a folder")
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	yml := secretsEnv + orchLocal + `Engine:
  base: &base
    jdbc_url: jdbc:sqlite:base.db
    schema: main
  dev:
    <<: *base
    jdbc_url: jdbc:sqlite:dev.db
`
	cfg := mustLoad(t, yml)
	if filepath.Base(cfg.Engine.SQLitePath) != "dev.db" || cfg.Engine.Schema != "main" {
		t.Errorf("merged profile = %q schema %q; want dev.db and main", cfg.Engine.SQLitePath, cfg.Engine.Schema)
	}
}
