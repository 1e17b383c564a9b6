package cli_test

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
)

// demoSchemas are the warehouse schemas the Support Insights demo writes;
// etl-craft never creates warehouse schemas, so a team makes them first.
var demoSchemas = []string{"lnd", "prs", "ds", "cdc", "pre_dm", "dm"}

// newDemo is a project holding the Support Insights demo of
// testdata/support-insights (the reference's demo project in shape), on an
// Engine DB of the kind and a DuckDB warehouse file not made yet; extra is
// added to the Orchestration section.
func newDemo(t *testing.T, kind engine.Kind, extra string) *e2e.Project {
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
			p.Write(rel, string(b))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if extra != "" {
		yml := readFile(t, filepath.Join(p.Dir, "craft-connector.yml"))
		p.Write("craft-connector.yml", strings.Replace(yml, "Orchestration:\n  Mode: local\n", "Orchestration:\n  Mode: local\n"+extra, 1))
	}
	return p
}

// makeDemoSchemas creates the demo's schemas in the warehouse file, as a
// team does before its first run.
func makeDemoSchemas(p *e2e.Project) {
	p.T.Helper()
	var stmts []string
	for _, s := range demoSchemas {
		stmts = append(stmts, "CREATE SCHEMA IF NOT EXISTS "+s)
	}
	p.WarehouseExec(stmts...)
}

// A fresh, correct project passes validate, as the reference's does
// ("0 failed, 0 warning(s)"), before its first run: with no warehouse file
// yet, and with the warehouse made but none of the tables the pipelines
// create. A business rule's table that a task upstream creates is
// information, not a failure.
func TestTheDemoValidatesBeforeItsFirstRun(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newDemo(t, kind, "")
		p.OK("setup")
		p.OK("migrate")
		const clean = "checked 5 pipeline(s) and 27 task(s): 0 failed, 0 warning(s)\n"
		r := p.OK("validate")
		if !strings.HasPrefix(r.Stdout, "[INFO] warehouse: the DuckDB warehouse ") || !strings.HasSuffix(r.Stdout, "does not exist yet: the first run creates it, "+
			"so business rules' target tables, key columns and SQL are checked against it once it exists\n"+clean) {
			t.Fatalf("validate without a warehouse file:\n%s", r.Stdout)
		}
		if _, err := os.Stat(filepath.Join(p.Dir, "warehouse.duckdb")); err == nil {
			t.Fatal("validate created the warehouse file")
		}
		makeDemoSchemas(p)
		r = p.OK("validate")
		want := "[INFO] SUPPORT_DM.quality: business rules rating out of range, unknown agent and long call: the TARGET_TABLE dm.support_fact " +
			"does not exist yet: SUPPORT_DM.setup_fact (SETUP_TABLE), which runs before quality, creates it; its SELECT cannot be described " +
			"before the tables it reads exist ("
		if !strings.HasPrefix(r.Stdout, want) || !strings.HasSuffix(r.Stdout, "), so the key column fact_key and the rule's SQL are checked at its first run\n"+clean) {
			t.Fatalf("validate with the schemas made:\n%s", r.Stdout)
		}
	})
}

// demoMail is the Orchestration settings of the demo's runs: its SLA
// enforced, and its email sent to the SMTP server srv. One task runs at a
// time: in the demo's graph the alert may otherwise start while quality
// still runs (area_summary, which it waits for, needs ANY of fact and
// quality), and then it rightly says COMPLETED_WITH_ERRORS of a run not
// finished.
func demoMail(srv *mailtest.Server) string {
	return fmt.Sprintf("  Max_parallel_tasks: 1\n  Enforce_sla: true\n  Email:\n    host: %s\n    port: %d\n    from_address: etl-craft@example.com\n    tls_mode: none\n",
		srv.Host, srv.Port)
}

// mails returns the messages srv received since the first skip ones,
// parsed, by subject.
func mails(t *testing.T, srv *mailtest.Server, skip int) map[string]mailtest.Parsed {
	t.Helper()
	out := map[string]mailtest.Parsed{}
	for _, m := range srv.Messages()[skip:] {
		p := mailtest.Parse(t, m.Data)
		out[p.Subject] = p
	}
	return out
}

// The demo run as the reference's end-to-end test runs it: both clients,
// then the mart, whose flaky feed fails its first run (its watcher and its
// alert say so), and whose second run succeeds: the run is SUCCESS, and so
// is its alert, though the watcher had nothing to watch; then the export,
// past its SLA, says BREACHED in its e2e.Result line.
func TestTheDemoRunsAsTheReferenceExpects(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		srv := mailtest.Start(t, mailtest.Options{})
		p := newDemo(t, kind, demoMail(srv))
		makeDemoSchemas(p)
		p.OK("setup")
		for _, client := range []string{"CLIENT_ALPHA", "CLIENT_BETA"} {
			if r := p.OK("run", "--pipeline_code", client); !strings.Contains(r.Stdout, " SUCCESS") {
				t.Fatalf("%s: %s", client, r.Stdout)
			}
		}
		first := p.Run(nil, "run", "--pipeline_code", "SUPPORT_DM")
		if first.Code != 1 || !strings.Contains(first.Stdout, "flaky_feed (FAILED)") {
			t.Fatalf("the mart's first run: exit %d\n%s%s", first.Code, first.Stdout, first.Stderr)
		}
		_, skipped, _ := strings.Cut(first.Stdout, "skipped because of the failure: ")
		for _, task := range []string{"interactions", "setup_fact", "fact", "quality"} {
			if !strings.Contains(skipped, task) {
				t.Errorf("the first run did not skip %s because of the failure:\n%s", task, first.Stdout)
			}
		}
		got := mails(t, srv, 0)
		if _, ok := got["SUPPORT_DM: FAILED"]; !ok || len(got) != 2 {
			t.Errorf("the first run's emails: %v", keys(got))
		}
		if watcher, ok := got["SUPPORT_DM: a feed failed"]; !ok || !strings.Contains(watcher.Text, "flaky_feed: RuntimeError: the feed is not ready yet") {
			t.Errorf("the watcher's email: %v\n%s", ok, watcher.Text)
		}

		sent := len(srv.Messages())
		second := p.OK("run", "--pipeline_code", "SUPPORT_DM")
		if !regexp.MustCompile(`^SUPPORT_DM: pipeline_run_id=\d+ SUCCESS\n$`).MatchString(second.Stdout) {
			t.Fatalf("the mart's second run:\n%s", second.Stdout)
		}
		db := p.DB()
		if got := textColumn(t, db, "SELECT r.STATUS FROM AUD_PIPELINES_RUN_LOG r JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID "+
			"WHERE p.PIPELINE_CODE = 'SUPPORT_DM' ORDER BY r.PIPELINE_RUN_ID"); strings.Join(got, " ") != "FAILED SUCCESS" {
			t.Errorf("the mart's recorded runs: %v", got)
		}
		if got := textColumn(t, db, "SELECT r.STATUS FROM AUD_TASK_RUN_LOG r JOIN CFG_TASKS t ON t.TASK_ID = r.TASK_ID "+
			"WHERE t.TASK_CODE = 'on_failure' ORDER BY r.PIPELINE_RUN_ID"); strings.Join(got, " ") != "SUCCESS SKIPPED" {
			t.Errorf("the watcher's task runs: %v", got)
		}
		// The watcher had nothing to watch: the run's alert says SUCCESS,
		// and lists no error.
		got = mails(t, srv, sent)
		alert, ok := got["SUPPORT_DM: SUCCESS"]
		if !ok || len(got) != 1 {
			t.Fatalf("the second run's emails: %v", keys(got))
		}
		if strings.Contains(alert.Text, "Errors:") || strings.Contains(alert.Text, "can never be met") ||
			!strings.Contains(alert.Text, "Run ") || !strings.Contains(alert.Text, ": SUCCESS") {
			t.Errorf("the alert of a clean run:\n%s", alert.Text)
		}

		// Once the tables are made, validate checks the rules against them,
		// and has nothing to say.
		if r := p.OK("validate"); r.Stdout != "checked 5 pipeline(s) and 27 task(s): 0 failed, 0 warning(s)\n" {
			t.Errorf("validate after the runs:\n%s", r.Stdout)
		}

		// The export overruns its time limit and its SLA: the e2e.Result line
		// says BREACHED, as the reference's does, and so does its document.
		sent = len(srv.Messages())
		export := p.Run(nil, "run", "--pipeline_code", "SUPPORT_EXPORT", "--format", "json")
		var doc struct {
			Status, Detail string
			SLA            string `json:"sla_status"`
		}
		if export.Code != 1 || jsonUnmarshal(export.Stdout, &doc) != nil || doc.Status != "FAILED" || doc.SLA != "BREACHED" ||
			!strings.HasSuffix(doc.Detail, "1 task(s) did not succeed: export (FAILED); SLA of 0.0002 h BREACHED") {
			t.Errorf("the export: exit %d\n%s%s", export.Code, export.Stdout, export.Stderr)
		}
		if got := mails(t, srv, sent); len(got) != 1 {
			t.Errorf("the export's emails: %v", keys(got))
		}
	})
}

// keys lists a map's keys, sorted.
func keys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
