package cli_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// demoSchemas are the warehouse schemas the Support Insights demo writes;
// etl-craft never creates warehouse schemas, so a team makes them first.
var demoSchemas = []string{"lnd", "prs", "ds", "cdc", "pre_dm", "dm"}

// newDemo is a project holding the Support Insights demo of
// testdata/support-insights (the reference's demo project in shape), on an
// Engine DB of the kind and a DuckDB warehouse file not made yet; extra is
// added to the Orchestration section.
func newDemo(t *testing.T, kind engine.Kind, extra string) *project {
	t.Helper()
	p := newProject(t, kind, "")
	src := filepath.Join("testdata", "support-insights")
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		b, err := os.ReadFile(path)
		if err == nil {
			p.write(rel, string(b))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if extra != "" {
		yml := readFile(t, filepath.Join(p.dir, "craft-connector.yml"))
		p.write("craft-connector.yml", strings.Replace(yml, "Orchestration:\n  Mode: local\n", "Orchestration:\n  Mode: local\n"+extra, 1))
	}
	return p
}

// makeDemoSchemas creates the demo's schemas in the warehouse file, as a
// team does before its first run.
func (p *project) makeDemoSchemas() {
	p.t.Helper()
	var stmts []string
	for _, s := range demoSchemas {
		stmts = append(stmts, "CREATE SCHEMA IF NOT EXISTS "+s)
	}
	p.duckExec(stmts...)
}

// A fresh, correct project passes validate, as the reference's does
// ("0 failed, 0 warning(s)"), before its first run: with no warehouse file
// yet, and with the warehouse made but none of the tables the pipelines
// create. A business rule's table that a task upstream creates is
// information, not a failure.
func TestTheDemoValidatesBeforeItsFirstRun(t *testing.T) {
	t.Parallel()
	eachKind(t, func(t *testing.T, kind engine.Kind) {
		p := newDemo(t, kind, "")
		p.ok("setup")
		p.ok("migrate")
		const clean = "checked 5 pipeline(s) and 27 task(s): 0 failed, 0 warning(s)\n"
		r := p.ok("validate")
		if !strings.HasPrefix(r.stdout, "[INFO] warehouse: the DuckDB warehouse ") || !strings.HasSuffix(r.stdout, "does not exist yet: the first run creates it, "+
			"so business rules' target tables, key columns and SQL are checked against it once it exists\n"+clean) {
			t.Fatalf("validate without a warehouse file:\n%s", r.stdout)
		}
		if _, err := os.Stat(filepath.Join(p.dir, "warehouse.duckdb")); err == nil {
			t.Fatal("validate created the warehouse file")
		}
		p.makeDemoSchemas()
		r = p.ok("validate")
		want := "[INFO] SUPPORT_DM.quality: business rules rating out of range, unknown agent and long call: the TARGET_TABLE dm.support_fact " +
			"does not exist yet: SUPPORT_DM.setup_fact (SETUP_TABLE), which runs before quality, creates it; its SELECT cannot be described " +
			"before the tables it reads exist ("
		if !strings.HasPrefix(r.stdout, want) || !strings.HasSuffix(r.stdout, "), so the key column fact_key and the rule's SQL are checked at its first run\n"+clean) {
			t.Fatalf("validate with the schemas made:\n%s", r.stdout)
		}
	})
}
