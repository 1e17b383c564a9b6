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
