package console_test

import (
	"net/url"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The console's tests drive the built binary's server (see internal/e2e):
// over HTTP as a browser without script would, and in headless Chromium.
func TestMain(m *testing.M) { e2e.Main(m) }

// hostile is text a task writes into its error message and its log: markup
// that would run a script were it not shown as text.
const hostile = `<script>alert("xss")</script> <img src=x onerror=alert(2)>`

// scripts are the ingestion scripts of the ops project.
var scripts = map[string]string{
	// flaky.py fails its first attempt with the hostile text in its
	// error and its log, and succeeds after.
	"flaky.py": `import os

from etl_craft.scripting import ScriptResult


def run(task):
    flag = task.input_params["flag"]
    print("checking the input: " + task.input_params["hostile"], flush=True)
    if not os.path.exists(flag):
        open(flag, "w").close()
        raise RuntimeError("bad input " + task.input_params["hostile"])
    return ScriptResult(1)
`,
	// slow.py waits until its release file exists, then writes what the
	// file says to its log and ends.
	"slow.py": `import os
import time

from etl_craft.scripting import ScriptResult


def run(task):
    release = task.input_params["release"]
    print("waiting for the release", flush=True)
    deadline = time.time() + 120
    while not os.path.exists(release) and time.time() < deadline:
        time.sleep(0.05)
    with open(release) as f:
        print("released: " + f.read(), flush=True)
    return ScriptResult(1)
`,
}

// ops is the project an operator watches and steers: SALES, three SQL
// tasks in a row; BROKEN, a script that fails once with hostile text in
// its error and its log, and a task after it; SLOW, a script that waits
// for its release file.
type ops struct {
	*e2e.Project
	db *engine.DB
	// release is the file SLOW's script waits for.
	release string
}

// newOps writes the ops project on the pair and sets it up; extra is
// appended to its Orchestration section.
func newOps(t testing.TB, pair e2e.Pair, orchestration string) *ops {
	t.Helper()
	o := &ops{Project: e2e.New(t, pair, ""), release: filepath.Join(t.TempDir(), "release")}
	o.Orchestration("  Max_parallel_tasks: 4\n" + orchestration)
	o.OK("init-db")
	for name, text := range scripts {
		o.Write("ingestion_scripts/"+name, text)
	}
	params := func(p map[string]string) string {
		b := "{"
		for k, v := range p {
			if b != "{" {
				b += ", "
			}
			b += strconv.Quote(k) + ": " + strconv.Quote(v)
		}
		return b + "}"
	}
	script := func(code, file string, p map[string]string) e2e.Task {
		return e2e.Task{Code: code, Handler: "PYTHON", Params: map[string]string{"SCRIPT_NAME": file, "INPUT_PARAMS": params(p)}}
	}
	o.Register("0001_ops", e2e.Pipeline("SALES",
		e2e.CreateTable("extract", "main.sales_raw", "SELECT 1 AS id, 10 AS amount"),
		e2e.CreateTable("transform", "main.sales", "SELECT id, amount * 2 AS amount FROM main.sales_raw", "extract:SUCCESS"),
		e2e.CreateTable("report", "main.sales_report", "SELECT COUNT(*) AS n FROM main.sales", "transform:SUCCESS"),
	)+e2e.Pipeline("BROKEN",
		script("hostile", "flaky.py", map[string]string{"flag": filepath.Join(t.TempDir(), "failed-once"), "hostile": hostile}),
		e2e.CreateTable("after", "main.after_hostile", "SELECT 1 AS id", "hostile:SUCCESS"),
	)+e2e.Pipeline("SLOW", script("wait", "slow.py", map[string]string{"release": o.release})))
	o.db = o.DB()
	return o
}

// ended waits for the run to end and returns its status.
func (o *ops) ended(id int64) records.RunStatus {
	o.T.Helper()
	return e2e.WaitRunsEnded(o.T, o.db, id)[id]
}

// actions counts the AUD_ACTIONS rows of the command by the actor, as a
// person at the console (HUMAN).
func (o *ops) actions(command, actor string) int {
	o.T.Helper()
	return e2e.Count(o.T, o.db, "SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND = $1 AND ACTOR = $2 AND ACTOR_KIND = 'HUMAN'", command, actor)
}

// form is a form's fields, as name, value pairs.
func form(nv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(nv); i += 2 {
		v.Set(nv[i], nv[i+1])
	}
	return v
}
