package script_test

import (
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/run"
)

// referenceScript is written for the reference's contract, with only its
// documented API: rows land through task.warehouse() / engine.begin() /
// conn.execute(text(...), params), with an incremental Offset.number.
const referenceScript = `
from sqlalchemy import text

from etl_craft.scripting import Offset, ScriptResult, ScriptTask

SOURCE = [(1, "alpha"), (2, "beta"), (3, "gamma"), (4, "delta")]


def run(task: ScriptTask) -> ScriptResult:
    last = task.offset.value if task.offset is not None else 0
    batch = task.input_params.get("batch", 2)
    rows = [r for r in SOURCE if r[0] > last][:batch]
    task.logger.info("offset %s, %d new rows", last, len(rows))
    with task.warehouse() as engine, engine.begin() as conn:
        for id_, name in rows:
            conn.execute(text("INSERT INTO " + task.table("events") + " (id, name, run_id) VALUES (:id, :name, :run_id)"),
                         {"id": id_, "name": name, "run_id": task.pipeline_run_id})
        total = conn.execute(text("SELECT COUNT(*) FROM staging.events")).scalar()
    print("total rows", total)
    if not rows:
        return ScriptResult(0)
    return ScriptResult(len(rows), offset=Offset.number(rows[-1][0]), variables={"TOTAL": total})
`

// A script written for the reference's contract runs unchanged, on both
// warehouses: the first run sees no offset, the second sees the first's.
func TestReferenceContractScriptRunsUnchanged(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.exec("CREATE TABLE staging.events (id INTEGER, name VARCHAR(20), run_id BIGINT)")
		e.script("events.py", referenceScript)
		id := e.task("events", "events.py", map[string]string{"INPUT_PARAMS": `{"batch": 3}`})

		out := e.run()
		if out.Status != run.RunSuccess {
			a := e.latest("events")
			t.Fatalf("outcome %s: %s\n%s\n%s", out, a.message, a.log, e.supLog())
		}
		want(t, "offset", e.offset(id), "NUMBER 3")
		a := e.latest("events")
		if !strings.HasPrefix(a.taskLog, "TOTAL = 3\nOFFSET = NUMBER 3\nSOURCE_COUNT = 3\nTARGET_COUNT = 3\nINSERT_COUNT = 3\n") {
			t.Fatalf("TASK_LOG:\n%s", a.taskLog)
		}
		if !strings.Contains(a.log, "offset 0, 3 new rows") || !strings.Contains(a.log, "total rows 3") {
			t.Fatalf("attempt log:\n%s", a.log)
		}
		out = e.run()
		want(t, "second run", out.Status, run.RunSuccess)
		want(t, "offset", e.offset(id), "NUMBER 4")
		want(t, "rows", strings.Join(e.wh("SELECT id, name FROM staging.events ORDER BY id"), ","), "1 alpha,2 beta,3 gamma,4 delta")
		if a := e.latest("events"); !strings.Contains(a.log, "offset 3, 1 new rows") {
			t.Fatalf("second attempt log:\n%s", a.log)
		}
	})
}

// stdout, stderr and logging lines reach the attempt log in the order the
// script wrote them; an exception fails the attempt with its last line as
// ERROR_MESSAGE and its traceback in the log.
func TestOutputInOrderAndExceptionsFail(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("noisy.py", `
import logging, sys

def run(task):
    print("one to stdout")
    print("two to stderr", file=sys.stderr)
    logging.getLogger("noisy").warning("three from logging")
    task.logger.info("four from task.logger")
    print("five to stdout")
    raise ValueError("the source file is missing")
`)
		e.task("noisy", "noisy.py", nil)
		out := e.run()
		want(t, "outcome", out.Status, run.RunFailed)
		a := e.latest("noisy")
		want(t, "status", a.status, "FAILED")
		want(t, "ERROR_MESSAGE", a.message, "ValueError: the source file is missing")
		last := -1
		for _, line := range []string{"one to stdout", "two to stderr", "WARNING noisy: three from logging",
			"INFO etl_craft.script.noisy: four from task.logger", "five to stdout", "Traceback (most recent call last):",
			`raise ValueError(\"the source file is missing\")`} {
			i := strings.Index(a.log, line)
			if i < 0 || i < last {
				t.Fatalf("%q missing or out of order in the attempt log:\n%s", line, a.log)
			}
			last = i
		}
	})
}

// sys.exit inside run, a script without run(), and a process that dies
// without a result are failures that say so.
func TestScriptsThatEndWithoutAResultFail(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("exits.py", "import sys\n\ndef run(task):\n    sys.exit(0)\n")
		e.script("norun.py", "x = 1\n")
		e.script("dies.py", "import os, signal\n\ndef run():\n    os.kill(os.getpid(), signal.SIGKILL)\n")
		e.script("wrong.py", "def run():\n    return 5\n")
		for code, msg := range map[string]string{
			"exits": "the script called sys.exit(0): return a ScriptResult, or raise an exception to fail",
			"norun": "TypeError: norun.py defines no run(task) function",
			"dies":  "the script dies.py was killed by SIGKILL before returning a result",
			"wrong": "TypeError: run() returned int: return a ScriptResult(row_count, offset=None, variables={})",
		} {
			e.task(code, code+".py", nil)
			defer func(code, msg string) {
				a := e.latest(code)
				want(t, code+" status", a.status, "FAILED")
				want(t, code+" ERROR_MESSAGE", a.message, msg)
			}(code, msg)
		}
		want(t, "outcome", e.run().Status, run.RunFailed)
	})
}

// offsetScript returns the offset INPUT_PARAMS names, or fails when told.
const offsetScript = `
import datetime
from etl_craft.scripting import Offset, ScriptResult

def run(task):
    print("offset seen:", repr(task.offset), "backfill:", task.backfill)
    p = task.input_params
    if p.get("fail"):
        raise RuntimeError("the API answered 503")
    kind = p.get("kind", "number")
    if kind == "number":
        off = Offset.number(p["value"])
    elif kind == "text":
        off = Offset.text(p["value"])
    else:
        off = Offset.timestamp(datetime.datetime.fromisoformat(p["value"]))
    return ScriptResult(1, offset=off)
`

// An incremental script: the first run sees no offset and returns one; the
// second sees it; a failing run keeps it; a backfill sees none and writes
// none; a datatype other than the stored one is refused.
func TestOffsets(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("inc.py", offsetScript)
		id := e.task("inc", "inc.py", map[string]string{"INPUT_PARAMS": `{"value": 3}`})
		set := func(params string) {
			e.b.Exec("UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = $1 WHERE TASK_ID = $2 AND PARAMETER_NAME = 'INPUT_PARAMS'", params, id)
		}
		want(t, "first run", e.run().Status, run.RunSuccess)
		if a := e.latest("inc"); !strings.Contains(a.log, "offset seen: None backfill: False") {
			t.Fatalf("first attempt log:\n%s", a.log)
		}
		want(t, "offset", e.offset(id), "NUMBER 3")

		set(`{"value": 9}`)
		want(t, "second run", e.run().Status, run.RunSuccess)
		if a := e.latest("inc"); !strings.Contains(a.log, "offset seen: Offset(3, 'NUMBER')") {
			t.Fatalf("second attempt log:\n%s", a.log)
		}
		want(t, "offset", e.offset(id), "NUMBER 9")

		set(`{"value": 12, "fail": true}`)
		want(t, "failing run", e.run().Status, run.RunFailed)
		want(t, "offset after a failure", e.offset(id), "NUMBER 9")

		set(`{"value": 50}`)
		bf, err := e.sup.Backfill(acting(), run.BackfillRequest{PipelineCode: "P", From: "2024-01-01", To: "2024-01-01", Reason: "test"})
		if err != nil {
			t.Fatalf("backfill: %v\n%s", err, e.supLog())
		}
		_ = bf
		if a := e.latest("inc"); a.status != "SUCCESS" || !strings.Contains(a.log, "offset seen: None backfill: True") {
			t.Fatalf("backfill attempt %s:\n%s", a.status, a.log)
		}
		want(t, "offset after a backfill", e.offset(id), "NUMBER 9")

		set(`{"kind": "text", "value": "abc"}`)
		want(t, "a TEXT offset over a NUMBER", e.run().Status, run.RunFailed)
		if a := e.latest("inc"); !strings.Contains(a.message, "returned a TEXT offset, but the task's stored offset is NUMBER") {
			t.Fatalf("ERROR_MESSAGE %q", a.message)
		}
		want(t, "offset", e.offset(id), "NUMBER 9")

		e.b.Exec("DELETE FROM AUD_TASK_OFFSET_TRACKER WHERE TASK_ID = $1", id)
		set(`{"kind": "timestamp", "value": "2024-05-01T10:20:30.123456+00:00"}`)
		want(t, "a TIMESTAMP offset", e.run().Status, run.RunSuccess)
		want(t, "offset", e.offset(id), "TIMESTAMP 2024-05-01T10:20:30.123456+00:00")
		set(`{"kind": "timestamp", "value": "2024-05-02T00:00:00"}`)
		want(t, "next TIMESTAMP run", e.run().Status, run.RunSuccess)
		if a := e.latest("inc"); !strings.Contains(a.log, "datetime.datetime(2024, 5, 1, 10, 20, 30, 123456, tzinfo=datetime.timezone.utc)") {
			t.Fatalf("attempt log:\n%s", a.log)
		}
	})
}
