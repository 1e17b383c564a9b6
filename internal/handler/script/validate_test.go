package script_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/script"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/run"
)

// Scripts outside ingestion_scripts/ and a JSON-array INPUT_PARAMS are
// refused by validate and by the run (exit 3, not retried).
func TestValidateAndRunRefuseEscapesAndArrays(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("good.py", "from etl_craft.scripting import ScriptResult\n\ndef run():\n    return ScriptResult(0)\n")
		outside := filepath.Join(e.dir, "outside.py")
		if err := os.WriteFile(outside, []byte("def run():\n    pass\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(e.dir, "ingestion_scripts", "link.py")); err != nil {
			t.Fatal(err)
		}
		refused := map[string][2]string{
			"dotdot":   {"../outside.py", "SCRIPT_NAME ../outside.py leads out of ingestion_scripts/ (..): keep scripts inside the folder"},
			"absolute": {outside, "SCRIPT_NAME " + outside + " is an absolute path: name the script relative to ingestion_scripts/"},
			"symlink":  {"link.py", "SCRIPT_NAME link.py is a symbolic link leading out of ingestion_scripts/ (to " + outside + "): keep scripts inside the folder"},
			"missing":  {"nothere.py", "SCRIPT_NAME nothere.py does not exist: expected " + filepath.Join(e.dir, "ingestion_scripts", "nothere.py")},
			"notpy":    {"good.txt", "SCRIPT_NAME good.txt is not a .py file"},
		}
		for code, c := range refused {
			e.task(code, c[0], nil)
		}
		e.task("array", "good.py", map[string]string{"INPUT_PARAMS": `["orders.csv", 100]`})
		arrayMsg := "INPUT_PARAMS is a JSON array, the form of etl-craft 0.1.0: write it as a JSON object, naming each value"
		e.task("good", "good.py", map[string]string{"INPUT_PARAMS": `{"source": "orders.csv"}`, "ANYTHING": "scripts may read it"})

		v, err := inspect.Validate(context.Background(), e.db, inspect.ValidateRequest{
			Handlers:   handler.Registry{pipeline.HandlerPython: script.New(nil, script.Options{})},
			ProjectDir: e.dir,
		})
		if err != nil {
			t.Fatal(err)
		}
		var findings []string
		for _, f := range v.Findings {
			findings = append(findings, f.Status+" "+f.Where+": "+f.Message)
		}
		all := strings.Join(findings, "\n")
		want(t, "failed", v.Failed, len(refused)+1)
		want(t, "warnings", v.Warnings, 0)
		for code, c := range refused {
			if !strings.Contains(all, "P."+code+": "+c[1]) {
				t.Fatalf("no finding %q for %s in\n%s", c[1], code, all)
			}
		}
		if !strings.Contains(all, "P.array: "+arrayMsg) {
			t.Fatalf("no array finding in\n%s", all)
		}

		want(t, "outcome", e.run().Status, run.RunFailed)
		for code, c := range refused {
			a := e.latest(code)
			want(t, code+" status", a.status, "FAILED")
			want(t, code+" message", a.message, c[1])
		}
		if a := e.latest("array"); !strings.HasPrefix(a.message, arrayMsg) {
			t.Fatalf("array: %q", a.message)
		}
		want(t, "good", e.latest("good").status, "SUCCESS")
		got := e.engine("SELECT DISTINCT EXIT_CODE, RETRYABLE FROM AUD_TASK_ATTEMPTS WHERE STATUS = 'FAILED'")
		if len(got) != 1 || !strings.HasPrefix(got[0], "3 ") || strings.HasSuffix(got[0], "true") || strings.HasSuffix(got[0], " 1") {
			t.Fatalf("failed attempts' EXIT_CODE, RETRYABLE: %v", got)
		}
	})
}
