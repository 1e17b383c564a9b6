package concurrency_test

import (
	"fmt"
	"strings"

	"github.com/etl-craft/etl-craft/internal/e2e"
)

// The workload: eight lanes, each with one task of every kind below, in
// the order of kinds. Run as one pipeline (ALL, its task codes ending in
// the lane) the kinds come in the order of their ids, so a pool of eight
// takes the eight tasks of one kind together; run as eight pipelines
// (LANE1 … LANE8, one per lane) triggered together, the lanes' tasks of
// one kind start together. Either way tasks of one kind write one target
// at once, most of them on its first use: a fresh warehouse has none of
// them, nor the load ledger. Every target's end state is the same
// whatever order the tasks ran in, so it must be exactly what they leave
// run one after the other.
const lanes = 8

// kind is one task of a lane: its code and its task, given the lane.
type kind struct {
	code string
	task func(lane int) e2e.Task
}

// kinds lists the tasks of a lane. Every SQL action is here: CREATE_TABLE
// and OVERWRITE_TABLE write one target with the same rows from every
// lane, APPEND_TABLE and the merges write one target each lane its own
// rows (and the merges shared keys of equal values), SETUP_TABLE creates
// those targets, DELETE_ROWS marks a lane's own key in each merge target
// (which the next round's merges revive), and DROP_TABLE drops a lane's
// own table. The scripts load (append and replace) with
// task.load and write through task.warehouse(); a rules task checks a
// table the scripts replace, and an alert sends a mail.
var kinds = []kind{
	{"create", func(int) e2e.Task {
		return e2e.CreateTable("", "main.created", "SELECT k, v FROM (VALUES (1, 'one'), (2, 'two')) AS s (k, v)")
	}},
	{"setup_append", func(int) e2e.Task {
		return e2e.SQL("", "SETUP_TABLE", "main.appended", "SELECT 0 AS lane, 0 AS n").With("SETUP_FOR", "APPEND_TABLE")
	}},
	{"setup_scd1", func(int) e2e.Task {
		return e2e.SQL("", "SETUP_TABLE", "main.scd1", "SELECT 0 AS k, 'v' AS v").With("SETUP_FOR", "SCD1_MERGE")
	}},
	{"setup_scd2", func(int) e2e.Task {
		return e2e.SQL("", "SETUP_TABLE", "main.scd2", "SELECT 0 AS k, 'v' AS v").With("SETUP_FOR", "SCD2_MERGE")
	}},
	{"setup_overwrite", func(int) e2e.Task {
		return e2e.SQL("", "SETUP_TABLE", "main.overwritten", "SELECT 0 AS k, 'v' AS v").With("SETUP_FOR", "OVERWRITE_TABLE")
	}},
	{"setup_wh", func(int) e2e.Task {
		return e2e.SQL("", "SETUP_TABLE", "main.py_wh", "SELECT 0 AS lane, 0 AS n").With("SETUP_FOR", "APPEND_TABLE")
	}},
	{"create_drop", func(lane int) e2e.Task {
		return e2e.CreateTable("", fmt.Sprintf("main.dropped_%d", lane), "SELECT 1 AS k")
	}},
	{"append", func(lane int) e2e.Task {
		return e2e.SQL("", "APPEND_TABLE", "main.appended",
			fmt.Sprintf("SELECT %d AS lane, n FROM (VALUES (1), (2), (3)) AS s (n)", lane), "setup_append:SUCCESS")
	}},
	{"scd1", func(lane int) e2e.Task {
		return e2e.SQL("", "SCD1_MERGE", "main.scd1", mergeSource(lane), "setup_scd1:SUCCESS").With("MERGE_KEY", "k")
	}},
	{"scd2", func(lane int) e2e.Task {
		return e2e.SQL("", "SCD2_MERGE", "main.scd2", mergeSource(lane), "setup_scd2:SUCCESS").With("MERGE_KEY", "k")
	}},
	{"overwrite", func(int) e2e.Task {
		return e2e.SQL("", "OVERWRITE_TABLE", "main.overwritten", "SELECT k, v FROM (VALUES (1, 'one'), (2, 'two'), (3, 'three')) AS s (k, v)",
			"setup_overwrite:SUCCESS")
	}},
	{"delete", func(lane int) e2e.Task {
		return e2e.SQL("", "DELETE_ROWS", "main.scd1", fmt.Sprintf("SELECT %d AS k", 100+lane), "scd1:SUCCESS").With("MERGE_KEY", "k")
	}},
	{"delete_scd2", func(lane int) e2e.Task {
		return e2e.SQL("", "DELETE_ROWS", "main.scd2", fmt.Sprintf("SELECT %d AS k", 100+lane), "scd2:SUCCESS").With("MERGE_KEY", "k")
	}},
	{"drop", func(lane int) e2e.Task {
		t := e2e.SQL("", "DROP_TABLE", fmt.Sprintf("main.dropped_%d", lane), "", "create_drop:SUCCESS")
		delete(t.Params, "SOURCE_SQL")
		return t
	}},
	{"py_append", func(lane int) e2e.Task {
		return scriptTask("", "load.py", fmt.Sprintf(`{"lane": %d, "table": "main.py_appended", "mode": "append", "rows": 5500}`, lane))
	}},
	{"py_replace", func(lane int) e2e.Task {
		return scriptTask("", "load.py", fmt.Sprintf(`{"lane": %d, "table": "main.py_replaced", "mode": "replace", "rows": 10, "same": true}`, lane))
	}},
	{"py_wh", func(lane int) e2e.Task {
		return scriptTask("", "write.py", fmt.Sprintf(`{"lane": %d}`, lane), "setup_wh:SUCCESS")
	}},
	{"rules", func(int) e2e.Task {
		return e2e.Task{Handler: "BUSINESS_RULES", Deps: []string{"py_replace:SUCCESS"}}
	}},
	{"alert", func(lane int) e2e.Task {
		return e2e.Task{Handler: "EMAIL_ALERT", Params: map[string]string{"EMAIL_TO": fmt.Sprintf("lane%d@example.com", lane),
			"EMAIL_SUBJECT": fmt.Sprintf("lane %d", lane), "EMAIL_BODY": "the lane ran"}}
	}},
}

// mergeSource is the SELECT of a lane's merges: two keys every lane merges
// with the same values, and one of the lane's own (which its DELETE_ROWS
// marks deleted).
func mergeSource(lane int) string {
	return fmt.Sprintf("SELECT k, v FROM (VALUES (1, 'shared'), (2, 'shared'), (%d, 'lane %d')) AS s (k, v)", 100+lane, lane)
}

// scripts are the workload's ingestion scripts. load.py hands the engine
// rows of (lane, n) with task.load — the same rows in every lane when
// "same" is set; more than 5,000 cross the pipe as COPY text after a first
// JSON batch, which DuckDB loads through its parallel table function. With
// a "barrier" folder it then waits for "meet" scripts to have staged their
// rows, so that their loads publish together.
// write.py replaces its lane's rows of main.py_wh through
// task.warehouse(), in one transaction.
var scripts = map[string]string{
	"load.py": `import os
import time

from etl_craft.scripting import ScriptResult


def run(task):
    p = task.input_params
    lane = 0 if p.get("same") else p["lane"]
    rows = ({"lane": lane, "n": i} for i in range(p["rows"]))
    task.load(p["table"], rows, mode=p["mode"])
    barrier = p.get("barrier")
    if barrier:
        open(os.path.join(barrier, str(p["lane"])), "w").close()
        deadline = time.time() + 60
        while len(os.listdir(barrier)) < p["meet"] and time.time() < deadline:
            time.sleep(0.01)
    return ScriptResult(p["rows"])
`,
	"write.py": `from etl_craft.scripting import ScriptResult


def run(task):
    lane = task.input_params["lane"]
    with task.warehouse() as engine, engine.begin() as conn:
        conn.execute("DELETE FROM main.py_wh WHERE lane = :lane", {"lane": lane})
        conn.execute("INSERT INTO main.py_wh (lane, n) VALUES (:lane, :n)", [{"lane": lane, "n": n} for n in range(3)])
    return ScriptResult(3)
`,
}

// scriptTask is a PYTHON task running a script of scripts with the
// INPUT_PARAMS.
func scriptTask(code, script, params string, deps ...string) e2e.Task {
	return e2e.Task{Code: code, Handler: "PYTHON", Deps: deps, Params: map[string]string{"SCRIPT_NAME": script, "INPUT_PARAMS": params}}
}

// rulesOf registers the rule of each rules task of the pipeline: REPORT the
// keys of main.py_replaced above 5 (a table without run columns, so every
// run checks it whole and flags the same five keys).
func rulesOf(pipeline string) string {
	return `INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL, BUSINESS_RULE_TYPE,
  BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)
SELECT 'high_' || t.TASK_CODE, p.PIPELINE_ID, t.TASK_ID, 'SELECT 1 WHERE t.n > 5', 'REPORT', 'n', 'main.py_replaced', 1
FROM CFG_TASKS t JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID AND p.ACTIVE_FLAG = 'Y'
WHERE p.PIPELINE_CODE = ` + e2e.Quote(pipeline) + ` AND t.HANDLER = 'BUSINESS_RULES' AND t.ACTIVE_FLAG = 'Y';
`
}

// allInOne is the migration of the workload as one pipeline ALL: the task
// of kind k of lane i is k_i, its dependencies on its own lane's tasks.
func allInOne() string {
	var tasks []e2e.Task
	for _, k := range kinds {
		for lane := 1; lane <= lanes; lane++ {
			t := k.task(lane)
			t.Code = fmt.Sprintf("%s_%d", k.code, lane)
			deps := make([]string, len(t.Deps))
			for i, d := range t.Deps {
				up, typ, _ := strings.Cut(d, ":")
				deps[i] = fmt.Sprintf("%s_%d:%s", up, lane, typ)
			}
			t.Deps = deps
			tasks = append(tasks, t)
		}
	}
	return e2e.Pipeline("ALL", tasks...) + rulesOf("ALL")
}

// perLane is the migration of the workload as eight pipelines LANE1 …
// LANE8, one per lane, with the kinds' codes.
func perLane() string {
	var b strings.Builder
	for lane := 1; lane <= lanes; lane++ {
		tasks := make([]e2e.Task, len(kinds))
		for i, k := range kinds {
			tasks[i] = k.task(lane)
			tasks[i].Code = k.code
		}
		code := fmt.Sprintf("LANE%d", lane)
		b.WriteString(e2e.Pipeline(code, tasks...) + rulesOf(code))
	}
	return b.String()
}

// snapshot is what the workload left: each target's rows as the
// warehouse returns them, and what the Engine DB recorded of the rules.
type snapshot map[string][]string

// targets are the queries reading the workload's targets, each the same
// text on DuckDB and PostgreSQL, by name.
var targets = map[string]string{
	"created":     "SELECT k, v FROM main.created ORDER BY k",
	"appended":    "SELECT lane, n, count(*) FROM main.appended GROUP BY lane, n ORDER BY lane, n",
	"row_ids":     "SELECT count(*) - count(DISTINCT row_id) FROM main.appended",
	"scd1":        "SELECT k, v, delete_flag FROM main.scd1 ORDER BY k",
	"scd2":        "SELECT k, v, active_flag, delete_flag, count(*) FROM main.scd2 GROUP BY k, v, active_flag, delete_flag ORDER BY k, active_flag",
	"overwritten": "SELECT k, v FROM main.overwritten ORDER BY k",
	"dropped":     "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'main' AND table_name LIKE 'dropped%'",
	"py_appended": "SELECT lane, count(*), sum(n) FROM main.py_appended GROUP BY lane ORDER BY lane",
	"py_replaced": "SELECT lane, n FROM main.py_replaced ORDER BY n",
	"py_wh":       "SELECT lane, n FROM main.py_wh ORDER BY lane, n",
	"ledger":      "SELECT load_mode, count(*) FROM main.etl_craft_script_loads GROUP BY load_mode ORDER BY load_mode",
	"stages":      "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'etl\\_%' ESCAPE '\\' AND table_name <> 'etl_craft_script_loads'",
}

// flagged reads the rules' active findings from the Engine DB: every lane's
// rule flags the same keys.
const flagged = `SELECT s.BUSINESS_RULE_KEY, s.STATUS, count(*) FROM AUD_BUSINESS_RULES_RESULTS s
WHERE s.ACTIVE_FLAG = 'Y' GROUP BY s.BUSINESS_RULE_KEY, s.STATUS ORDER BY s.BUSINESS_RULE_KEY`
