package cli_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// fake is what a hostile reason holds: clear the screen, then a red line.
const fake = "\x1b[2J\x1b[31mFAKE: all good\x1b[0m"

// Free text with a control or format character is refused at the command
// line (exit 2, naming the flag) before anything is read or recorded: a
// reason, a run key, a token's name; and a token's role is taken by the
// rule the API takes it by.
func TestFreeTextFlagsRefuseControlCharacters(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.OK("init-db")
	db := p.DB()
	pipelinetest.New(t, db).Pipeline("SALES", pipeline.Full)
	before := rowCounts(t, db)
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"pause", "--pipeline_code", "SALES", "--reason", "a" + fake}, "--reason contains a control or format character (U+001B)"},
		{[]string{"resume", "--pipeline_code", "SALES", "--reason", "ring\a"}, "--reason contains a control or format character (U+0007)"},
		{[]string{"run", "--pipeline_code", "SALES", "--run-key", "daily\n\x1b[31mFAKE"}, "--run-key contains a control or format character (U+000A)"},
		{[]string{"run", "--pipeline_code", "SALES", "--skip", "--reason", "tab\there"}, "--reason contains a control or format character (U+0009)"},
		{[]string{"cancel", "--pipeline_code", "SALES", "--reason", "soh\x01"}, "--reason contains a control or format character (U+0001)"},
		{[]string{"mark", "--pipeline_code", "SALES", "--status", "SUCCESS", "--reason", "rtl\u202eexe"}, "--reason contains a control or format character (U+202E)"},
		{[]string{"token", "create", "--name", "bot\u200b", "--role", "viewer"}, "--name contains a control or format character (U+200B)"},
		{[]string{"token", "create", "--name", "bot", "--role", "viewer", "--expires", "9\x7fd"}, "--expires contains a control or format character (U+007F)"},
		{[]string{"run", "--pipeline_code", "SALES", "--run-key", "bad \xff byte"}, "--run-key is not valid UTF-8 text"},
		// One rule for a token's role, the HTTP API's: as it is stored.
		{[]string{"token", "create", "--name", "bot", "--role", "ADMIN"}, `the token's role "ADMIN" is not a role: choose viewer, operator or admin`},
	} {
		r := p.Run(nil, c.args...)
		if r.Code != 2 || !strings.Contains(r.Stderr, c.says) {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 saying %q", c.args, r.Code, r.Stderr, c.says)
		}
		if strings.ContainsAny(r.Stderr, "\x1b\a\x00") {
			t.Errorf("%q: stderr holds a control character: %q", c.args, r.Stderr)
		}
	}
	if after := rowCounts(t, db); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("refused commands changed the Engine DB:\nbefore %v\nafter  %v", before, after)
	}
}

// Text stored before the command line and the API refused control
// characters is printed with them made visible, in every text output, and
// kept as it is in JSON output.
func TestStoredControlCharactersArePrintedVisible(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.OK("init-db")
	db := p.DB()
	b := pipelinetest.New(t, db)
	b.Pipeline("SALES", pipeline.Full)
	b.Task("SALES", "load", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE"})
	rec := inspecttest.New(t, db, actor.Actor{Name: "mallory", Kind: actor.Human})
	at := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	runID := rec.Run(b.PipelineID("SALES"), inspecttest.Run{Key: "daily\n" + fake, Status: "FAILED", RunDate: "2026-03-01", Start: at, End: at.Add(time.Minute)})
	rec.TaskRun(runID, b.TaskID("SALES", "load"), inspecttest.TaskRun{Status: "FAILED", Start: at, End: at.Add(time.Minute), ErrorMessage: "boom\a" + fake})
	rec.Intervention(b.PipelineID("SALES"), runID, b.TaskID("SALES", "load"), "MARK", "FAILED", "SUCCESS", "why "+fake, at.Add(time.Hour))
	rec.Pause(b.PipelineID("SALES"), "paused "+fake, at.Add(2*time.Hour))
	b.Exec("UPDATE CFG_PIPELINES SET DESCRIPTION = $1 WHERE PIPELINE_CODE = 'SALES'", "desc\u202eroF")
	// A request recorded by an actor whose name was never checked.
	_, err := audit.Record(actor.With(t.Context(), actor.Actor{Name: "bot" + fake, Kind: actor.Orchestrator}), db,
		audit.Request{Command: "pause", PipelineCode: "SALES"})
	if err != nil {
		t.Fatal(err)
	}

	id := strconv.FormatInt(runID, 10)
	for _, args := range [][]string{
		{"list"},
		{"status", "--pipeline_code", "SALES", "--run-id", id},
		{"explain", "--pipeline_code", "SALES", "--task_code", "load", "--run-id", id},
		{"history", "--pipeline_code", "SALES"},
		{"history", "--pipeline_code", "SALES", "--task_code", "load"},
		{"audit"},
	} {
		r := p.OK(args...)
		if strings.ContainsAny(r.Stdout, "\x1b\a\u202e") || strings.ContainsAny(r.Stderr, "\x1b\a\u202e") {
			t.Errorf("%q printed a control character:\n%q", args, r.Stdout)
		}
		if !strings.Contains(r.Stdout, `\u001b[2J\u001b[31mFAKE: all good\u001b[0m`) {
			t.Errorf("%q does not show the stored escapes:\n%s", args, r.Stdout)
		}
	}
	// JSON output keeps the stored text, escaped as JSON escapes it.
	var doc struct {
		Pipelines []struct {
			Paused struct {
				Reason string `json:"reason"`
			} `json:"paused"`
		} `json:"pipelines"`
	}
	r := p.OK("list", "--format", "json")
	if err := jsonUnmarshal(r.Stdout, &doc); err != nil || len(doc.Pipelines) != 1 || doc.Pipelines[0].Paused.Reason != "paused "+fake ||
		strings.Contains(r.Stdout, "\x1b") {
		t.Errorf("list --format json: %v\n%s", err, r.Stdout)
	}
}

// A state-changing command that cannot be recorded in AUD_ACTIONS does not
// act: while another process holds what a long migration holds, run,
// pause, token create and migrate exit 12 once the busy timeout is over,
// naming the other process, and change nothing; once it is free they act
// and are recorded.
func TestACommandThatCannotBeRecordedDoesNotAct(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p := newProject(t, kind, "")
		p.EditConfig("Engine:\n  dev:\n", "Engine:\n  dev:\n    busy_timeout_seconds: 1\n")
		p.OK("init-db")
		db := p.DB()
		b := pipelinetest.New(t, db)
		b.Pipeline("SALES", pipeline.Full)
		b.Task("SALES", "load", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.sales",
			"SOURCE_SQL": "SELECT 1 AS id"})
		holder := map[engine.Kind]string{engine.SQLite: "another process holds the Engine DB's write lock",
			engine.Postgres: "another session holds a lock"}[kind]
		commands := [][]string{
			{"run", "--pipeline_code", "SALES"},
			{"pause", "--pipeline_code", "SALES", "--reason", "while locked"},
			{"token", "create", "--name", "while-locked", "--role", "viewer"},
			{"migrate"},
		}
		before := rowCounts(t, db)
		release := enginetest.HoldWriteLock(t, p.Engine)
		for _, args := range commands {
			r := p.Run(nil, args...)
			if r.Code != 12 || !strings.Contains(r.Stderr, holder) || !strings.Contains(r.Stderr, "not carried out") {
				t.Errorf("%q while another process holds the lock: exit %d\n%s%s", args, r.Code, r.Stdout, r.Stderr)
			}
		}
		release()
		if after := rowCounts(t, db); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("commands that could not be recorded changed the Engine DB:\nbefore %v\nafter  %v", before, after)
		}
		for _, args := range commands {
			p.OK(args...)
		}
		if n := e2e.Count(t, db, "SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND IN ('run', 'pause', 'token create', 'migrate')"); n != 4 {
			t.Errorf("%d commands recorded once the lock is free, want 4", n)
		}
	})
}
