package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// purgedRuns registers SALES, runs it three times and waits until the runs
// are more than a second old, so that `purge --older-than 1s` finds the
// first two (the third is the latest ended run, which stays). It returns
// the log files of the first two runs' attempts.
func purgedRuns(t *testing.T, p *e2e.Project) []string {
	t.Helper()
	p.OK("init-db")
	p.Register("0001_sales", e2e.Pipeline("SALES", e2e.CreateTable("totals", "main.totals", "SELECT 1 AS n")))
	for range 3 {
		p.OK("run", "--pipeline_code", "SALES")
	}
	logs := e2e.QueryRows(t, p.DB(), `SELECT a.LOG_PATH FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG t ON t.TASK_RUN_ID = a.TASK_RUN_ID
		WHERE t.PIPELINE_RUN_ID < 3 AND a.LOG_PATH IS NOT NULL`)
	if len(logs) != 2 {
		t.Fatalf("the first two runs have log files %v, want one each", logs)
	}
	for _, f := range logs {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("an attempt log: %v", err)
		}
	}
	time.Sleep(1100 * time.Millisecond) // the runs' ages pass one second
	return logs
}

func TestPurgeDryRunArchiveAndDeletesKeepingTheLatestRun(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		logs := purgedRuns(t, p)
		db := p.DB()
		runs := "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG"

		// A dry run prints what would go, per table, and changes nothing.
		r := p.OK("purge", "--older-than", "1s", "--dry-run")
		for _, want := range []string{"TABLE\tROWS\tARCHIVE\n", "AUD_PIPELINES_RUN_LOG\t2\t\n", "AUD_TASK_ATTEMPTS\t2\t\n",
			"(dry run) would delete", "nothing was changed"} {
			if !strings.Contains(r.Stdout, want) {
				t.Fatalf("the dry run's output lacks %q:\n%s", want, r.Stdout)
			}
		}
		if n := e2e.Count(t, db, runs); n != 3 {
			t.Fatalf("%d runs after a dry run, want 3", n)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'purge'"); n != 0 {
			t.Fatalf("a dry run recorded %d purge(s)", n)
		}

		// The purge archives, then deletes the first two runs with their
		// task runs, attempts and log files; the latest ended run stays.
		archive := filepath.Join(p.Dir, "archive")
		r = p.OK("purge", "--older-than", "1s", "--archive-to", archive, "--format", "json")
		var doc report.Purge
		if err := jsonUnmarshal(r.Stdout, &doc); err != nil {
			t.Fatalf("%v: %s", err, r.Stdout)
		}
		if doc.Schema != "etl-craft/purge/1" || doc.DryRun || doc.LogFiles != 2 || doc.Batches < 1 || doc.Retention["runs"] != "1s" || doc.Retention["interventions"] != "forever" || doc.ArchiveDir != archive {
			t.Fatalf("the purge's document: %+v", doc)
		}
		byTable := map[string]report.PurgedTable{}
		for _, tb := range doc.Tables {
			byTable[tb.Table] = tb
		}
		for _, table := range []string{"AUD_PIPELINES_RUN_LOG", "AUD_TASK_RUN_LOG", "AUD_TASK_ATTEMPTS"} {
			tb := byTable[table]
			if tb.Rows != 2 || tb.Archive != filepath.Join(archive, "purge-"+doc.PurgeID+"-"+table+".parquet") {
				t.Errorf("%s: %+v", table, tb)
			}
			if _, err := os.Stat(tb.Archive); err != nil {
				t.Errorf("%s: %v", table, err)
			}
		}
		if got := e2e.QueryRows(t, db, "SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG"); len(got) != 1 || got[0] != "3" {
			t.Fatalf("the runs left: %v, want the latest, 3", got)
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID <> 3"); n != 0 {
			t.Fatalf("%d task runs of the purged runs left", n)
		}
		for _, f := range logs {
			if _, err := os.Stat(f); !os.IsNotExist(err) {
				t.Errorf("the purged attempt log %s: %v", f, err)
			}
		}
		// The purge is recorded, with the rows it planned.
		recorded := e2e.Scalar(t, db, "SELECT ARGUMENTS FROM AUD_ACTIONS WHERE COMMAND = 'purge'")
		for _, want := range []string{`"purge_id":"` + doc.PurgeID + `"`, `"AUD_PIPELINES_RUN_LOG":2`, `"older-than":"1s"`} {
			if !strings.Contains(strings.ReplaceAll(recorded, " ", ""), want) {
				t.Errorf("the purge's AUD_ACTIONS row %s lacks %s", recorded, want)
			}
		}

		// No run is left to go (the first purge's own AUD_ACTIONS row may be).
		r = p.OK("purge", "--older-than", "1s")
		for _, want := range []string{"AUD_PIPELINES_RUN_LOG\t0\t\n", "AUD_TASK_ATTEMPTS\t0\t\n", " and 0 log file(s)"} {
			if !strings.Contains(r.Stdout, want) {
				t.Fatalf("the second purge's output lacks %q:\n%s", want, r.Stdout)
			}
		}
		e2e.WantExit(t, p.Run(nil, "purge", "--older-than", "soon"), 2, `--older-than: "soon" is not an age`)
	})
}

// Two purges run while a server runs eight pipelines at once, each of two
// tasks: every run succeeds with all its tasks, both purges finish, one
// after the other, and what they delete is old history only.
func TestPurgesAlongsideAServerRunningEightPipelines(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.OK("init-db")
		var codes []string
		for i := 1; i <= 8; i++ {
			code := fmt.Sprintf("P%d", i)
			codes = append(codes, code)
			p.Register(fmt.Sprintf("%04d_%s", i, strings.ToLower(code)), e2e.Pipeline(code,
				e2e.CreateTable("a", "main."+strings.ToLower(code)+"_a", "SELECT 1 AS n"),
				e2e.CreateTable("b", "main."+strings.ToLower(code)+"_b", "SELECT n FROM main."+strings.ToLower(code)+"_a", "a:SUCCESS")))
		}
		token := p.Token("ops", "operator")
		s := p.StartServer()
		db := p.DB()
		var old []int64
		for range 2 {
			var wave []int64
			for _, code := range codes {
				wave = append(wave, s.Trigger(token, code))
			}
			e2e.WaitRunsEnded(t, db, wave...)
			old = append(old, wave...)
		}
		time.Sleep(1100 * time.Millisecond) // the first waves' ages pass one second

		var running []int64
		for _, code := range codes {
			running = append(running, s.Trigger(token, code))
		}
		results := make(chan e2e.Result, 2)
		for range 2 {
			go func() { results <- p.Run(nil, "purge", "--older-than", "1s") }()
		}
		for range 2 {
			if r := <-results; r.Code != 0 {
				t.Fatalf("a purge beside the server exited %d: %s", r.Code, r.Stderr)
			}
		}
		for id, status := range e2e.WaitRunsEnded(t, db, running...) {
			if status != records.RunSuccess {
				t.Errorf("run %d beside the purges ended %s", id, status)
			}
		}
		for _, id := range running {
			if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1 AND STATUS = 'SUCCESS'", id); n != 2 {
				t.Errorf("run %d beside the purges has %d successful task runs, want 2", id, n)
			}
		}
		// The first wave is older than a later ended run of its pipeline:
		// gone, with its task runs.
		for _, id := range old[:8] {
			if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1", id) +
				e2e.Count(t, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", id); n != 0 {
				t.Errorf("the old run %d keeps %d row(s)", id, n)
			}
		}
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_ACTIONS WHERE COMMAND = 'purge'"); n != 2 {
			t.Errorf("%d purges recorded, want 2", n)
		}
		if code := s.Stop(); code != 0 {
			t.Fatalf("the server exited %d: %s", code, s.Stderr())
		}
	})
}
