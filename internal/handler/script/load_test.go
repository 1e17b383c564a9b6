package script_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/script"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// loader loads the rows INPUT_PARAMS gives in the form and mode it names;
// it can fail on its first attempt, or signal and hang after loading.
const loader = `
import csv, datetime, json, os, time
from etl_craft.scripting import ScriptResult

def run(task):
    p = task.input_params
    rows = p.get("rows", [])
    form = p.get("form", "dicts")
    if form == "dicts":
        data = [{"id": r[0], "name": r[1], "ts": datetime.datetime(2024, 1, r[0], 12, 30, 15, 250000)} for r in rows]
    elif form == "tuples":
        data = [(r[0], r[1], datetime.datetime(2024, 2, r[0])) for r in rows]
    elif form == "csv":
        data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rows.csv")
        with open(data, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["id", "name", "ts"])
            for r in rows:
                w.writerow([r[0], r[1], "2024-03-%02d 08:00:00" % r[0]])
    else:
        data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rows.jsonl")
        with open(data, "w") as f:
            for r in rows:
                f.write(json.dumps({"id": r[0], "name": r[1]}) + "\n")
    n = task.load(p.get("table", "items"), data, mode=p.get("mode", "append"))
    if p.get("ready"):
        open(p["ready"], "w").close()
        while True:
            time.sleep(0.1)
    if p.get("fail_first") and task.attempt_number == 1:
        raise RuntimeError("the source went away after the load")
    return ScriptResult(n)
`

// setLoad sets the loader task's INPUT_PARAMS.
func (e *env) setLoad(taskID int64, params string) {
	e.b.Exec("UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = $1 WHERE TASK_ID = $2 AND PARAMETER_NAME = 'INPUT_PARAMS'", params, taskID)
}

// stages lists the staging tables of task.load left in the warehouse.
func (e *env) stages() string {
	return strings.Join(e.wh("SELECT table_name FROM information_schema.tables WHERE table_name LIKE 'etl_load%' ORDER BY 1"), ",")
}

// task.load appends dict rows to a new table, then tuples and a JSON-lines
// file to it, and replaces it with a CSV file; the engine counts the rows,
// and no staging table is left.
func TestLoadAppendAndReplace(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("load.py", loader)
		id := e.task("load", "load.py", map[string]string{"INPUT_PARAMS": `{"rows": [[1, "a"], [2, "b"]]}`})
		step := func(what, params string, written int, rows string) {
			t.Helper()
			e.setLoad(id, params)
			if out := e.run(); out.Status != run.RunSuccess {
				a := e.latest("load")
				t.Fatalf("%s: %s: %s\n%s", what, out, a.message, a.log)
			}
			a := e.latest("load")
			if !strings.Contains(a.taskLog, fmt.Sprintf("INSERT_COUNT = %d\n", written)) || !strings.Contains(a.taskLog, fmt.Sprintf("LOADED_ROWS = %d\n", written)) {
				t.Fatalf("%s: TASK_LOG\n%s", what, a.taskLog)
			}
			want(t, what+": rows", strings.Join(e.wh("SELECT id, name, ts FROM staging.items ORDER BY id"), ","), rows)
			want(t, what+": staging tables", e.stages(), "")
		}
		jan := func(d int) string { return fmt.Sprintf("2024-01-0%d 12:30:15.25 +0000 UTC", d) }
		step("new table", `{"rows": [[1, "a"], [2, "b"]]}`, 2, "1 a "+jan(1)+",2 b "+jan(2))
		step("tuples", `{"form": "tuples", "rows": [[3, "c"]]}`, 1, "1 a "+jan(1)+",2 b "+jan(2)+",3 c 2024-02-03 00:00:00 +0000 UTC")
		step("json lines", `{"form": "jsonl", "rows": [[4, "d"]]}`, 1, "1 a "+jan(1)+",2 b "+jan(2)+",3 c 2024-02-03 00:00:00 +0000 UTC,4 d NULL")
		step("replace", `{"form": "csv", "mode": "replace", "rows": [[7, "x"], [8, "y"]]}`, 2,
			"7 x 2024-03-07 08:00:00 +0000 UTC,8 y 2024-03-08 08:00:00 +0000 UTC")
	})
}

// A retry after a failure loads the rows once: the failed attempt's
// staging table is dropped, never published.
func TestLoadRetryLoadsOnce(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("load.py", loader)
		e.task("load", "load.py", map[string]string{"INPUT_PARAMS": `{"rows": [[1, "a"], [2, "b"]], "fail_first": true}`,
			"RETRIES": "1", "RETRY_DELAY_SECONDS": "0"})
		out := e.run()
		if out.Status != run.RunSuccess {
			t.Fatalf("%s\n%s", out, e.supLog())
		}
		want(t, "attempts", strings.Join(e.engine("SELECT ATTEMPT_NUMBER, STATUS FROM AUD_TASK_ATTEMPTS ORDER BY 1"), ","), "1 FAILED,2 SUCCESS")
		want(t, "rows", strings.Join(e.wh("SELECT id, name FROM staging.items ORDER BY id"), ","), "1 a,2 b")
		want(t, "staging tables", e.stages(), "")
		if a := e.latest("load"); !strings.Contains(a.log, twoSteps+": the warehouse is not the Engine DB's database") {
			t.Fatalf("attempt log:\n%s", a.log)
		}
	})
}

// childVariable carries a childSpec to the test binary run as a supervisor
// that a test kills.
const childVariable = "ETL_CRAFT_SCRIPT_TEST_CHILD"

// childSpec is what the child supervisor opens and runs.
type childSpec struct {
	Engine    engineSpec
	Warehouse string // a DuckDB file, or a postgres:// URL
	Dir       string
	LogDir    string
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(childVariable); spec != "" {
		os.Exit(runChild(spec))
	}
	os.Exit(m.Run())
}

// engineSpec is the Engine DB the child opens (the DSN carries the test
// server's password).
type engineSpec struct {
	Kind              engine.Kind
	Path, DSN, Schema string
}

// runChild runs pipeline P as the spec says and returns the exit status.
func runChild(text string) int {
	var spec childSpec
	if err := json.Unmarshal([]byte(text), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := acting()
	db, err := engine.Open(ctx, engine.Options{Kind: spec.Engine.Kind, Path: spec.Engine.Path, DSN: spec.Engine.DSN, Schema: spec.Engine.Schema})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer db.Close()
	opts, err := warehouseOptions(spec.Warehouse)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	wh := pool.New(db, opts)
	defer wh.Close()
	sup := run.New(run.Options{
		DB: db, Warehouse: wh, LogDir: spec.LogDir, ProjectDir: spec.Dir, Defaults: run.Defaults{TaskTimeout: time.Hour},
		Handlers: handler.Registry{pipeline.HandlerPython: script.New(db, script.Options{Python: python, Schema: "staging"})},
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	out, err := sup.RunPipeline(ctx, run.Request{PipelineCode: "P", Force: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fmt.Println(out.String())
	return int(out.Code)
}

// child starts the test binary as a supervisor running P, with a fault point.
func (e *env) child(point string) *exec.Cmd {
	e.t.Helper()
	where := e.opts.Path
	if e.opts.Kind == warehouse.Postgres {
		pw, _ := e.opts.Password()
		where = (&url.URL{Scheme: "postgres", User: url.UserPassword(e.opts.User, pw), Host: e.opts.Host + ":" + strconv.Itoa(e.opts.Port),
			Path: "/" + e.opts.Database}).String()
	}
	o := e.db.Options()
	text, err := json.Marshal(childSpec{Engine: engineSpec{Kind: o.Kind, Path: o.Path, DSN: o.DSN, Schema: o.Schema},
		Warehouse: where, Dir: e.dir, LogDir: e.logDir})
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childVariable+"="+string(text), fault.Variable+"="+point)
	log, err := os.Create(filepath.Join(e.dir, "child.log"))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { log.Close() })
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	return cmd
}

// childLog is what the child supervisor wrote.
func (e *env) childLog() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "child.log"))
	return string(b)
}

// kill -9 of the supervisor while its script holds staged rows leaves no
// rows in the target, and the next run leaves no staging table and loads
// the rows once.
func TestLoadSurvivesAKilledSupervisor(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.exec("CREATE TABLE staging.items (id BIGINT, name VARCHAR(10), ts TIMESTAMP)")
		e.script("load.py", loader)
		ready := filepath.Join(e.dir, "ready")
		id := e.task("load", "load.py", map[string]string{"INPUT_PARAMS": `{"rows": [[1, "a"], [2, "b"]], "ready": "` + ready + `"}`})
		cmd := e.child("")
		deadline := time.Now().Add(30 * time.Second)
		for {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("the script never staged its rows\n%s", e.childLog())
			}
			time.Sleep(20 * time.Millisecond)
		}
		// The child gives a DuckDB file back a moment (pool.Linger) after
		// the staging commits.
		if e.opts.Kind == warehouse.DuckDB {
			time.Sleep(pool.Linger + 500*time.Millisecond)
		}
		if got := e.stages(); !strings.HasPrefix(got, "etl_load_") {
			t.Fatalf("staging tables while the script runs: %q", got)
		}
		cmd.Process.Kill()
		cmd.Wait()
		want(t, "rows after the kill", strings.Join(e.wh("SELECT COUNT(*) FROM staging.items"), ","), "0")

		e.setLoad(id, `{"rows": [[1, "a"], [2, "b"]]}`)
		if out := e.run(); out.Status != run.RunSuccess {
			t.Fatalf("next run: %s\n%s", out, e.supLog())
		}
		want(t, "rows", strings.Join(e.wh("SELECT id, name FROM staging.items ORDER BY id"), ","), "1 a,2 b")
		want(t, "staging tables", e.stages(), "")
	})
}

// A crash after the load was published and before the outcome was
// recorded: the next attempt of the task run finds the load in the ledger
// and does not load it twice.
func TestLoadPublishedBeforeACrashIsNotLoadedTwice(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("load.py", loader)
		e.task("load", "load.py", map[string]string{"INPUT_PARAMS": `{"rows": [[1, "a"], [2, "b"]]}`})
		cmd := e.child(script.FaultAfterLoad + ":kill")
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 137 {
			t.Fatalf("child: %v\n%s", err, e.childLog())
		}
		want(t, "rows after the crash", strings.Join(e.wh("SELECT id FROM staging.items ORDER BY id"), ","), "1,2")
		if out := e.run(); out.Status != run.RunSuccess {
			t.Fatalf("next run: %s\n%s", out, e.supLog())
		}
		want(t, "rows", strings.Join(e.wh("SELECT id FROM staging.items ORDER BY id"), ","), "1,2")
		want(t, "attempts", strings.Join(e.engine("SELECT ATTEMPT_NUMBER, STATUS FROM AUD_TASK_ATTEMPTS ORDER BY 1"), ","), "1 LOST,2 SUCCESS")
		if a := e.latest("load"); !strings.Contains(a.log, "the load is not published again") || !strings.Contains(a.taskLog, "LOADED_ROWS = 2") {
			t.Fatalf("attempt log:\n%s\nTASK_LOG:\n%s", a.log, a.taskLog)
		}
		want(t, "staging tables", e.stages(), "")
	})
}

// The offset commits with the attempt's SUCCESS: a fault after it is
// written, inside that transaction, leaves the old offset and the attempt
// FAILED; the next run stores the new one.
func TestAFaultAfterTheOffsetKeepsTheOldOne(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.script("inc.py", offsetScript)
		id := e.task("inc", "inc.py", map[string]string{"INPUT_PARAMS": `{"value": 3}`})
		want(t, "first run", e.run().Status, run.RunSuccess)
		e.setLoad(id, `{"value": 9}`)
		cmd := e.child(script.FaultAfterOffset)
		if err := cmd.Wait(); err == nil {
			t.Fatalf("the child succeeded through the fault\n%s", e.childLog())
		}
		want(t, "offset after the fault", e.offset(id), "NUMBER 3")
		a := e.latest("inc")
		want(t, "attempt", a.status, "FAILED")
		if !strings.Contains(a.message, "injected fault at "+script.FaultAfterOffset) {
			t.Fatalf("ERROR_MESSAGE %q", a.message)
		}
		want(t, "next run", e.run().Status, run.RunSuccess)
		want(t, "offset", e.offset(id), "NUMBER 9")
	})
}

// valuesLoader loads the same awkward values twice into one table: in the
// first batch (rows as JSON, which the engine converts) and after it (COPY
// text, which the engine forwards to a PostgreSQL server and decodes itself
// for DuckDB), into a table with typed columns and into a new one typed
// from the rows.
const valuesLoader = `
import datetime, decimal
from etl_craft.scripting import ScriptResult

UTC2 = datetime.timezone(datetime.timedelta(hours=2))
VALUES = [
    (None, "it's \"quoted\"", 1.5, True, datetime.datetime(2024, 1, 2, 3, 4, 5, 600000), 3,
     datetime.date(2024, 1, 2), {"b": [1, 2.5, None], "a": "<x & y>"}),
    ("tab\there", "new\nline", decimal.Decimal("12345678901234567890.0123456789"), False, datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC2), -5,
     datetime.datetime(2024, 1, 2, 23, 30, tzinfo=UTC2), [1, "two", {"k": "é\t"}]),
    ("back\\slash \\N", "cr\rx", 3, None, datetime.date(2024, 5, 6), None, "2024-05-06", 1.5),
    ("é中😀", "", None, 1, "2024-05-06 07:08:09", 2 ** 62, None, True),
    ("", " spaces ", -0.25, 0, None, -2 ** 63, datetime.datetime(2024, 5, 6, 7, 8, 9), datetime.datetime(2024, 1, 2, 3, 4, 5, 600000)),
    ("\\N", "\\.", decimal.Decimal("0.00000000005"), "yes", "2024-05-06T07:08:09.123456+00:00", "12", datetime.date(1999, 12, 31), 2 ** 70),
]
COLUMNS = ["id", "s", "t", "n", "b", "ts", "k", "d", "j"]

def rows(offset):
    return [(offset + i + 1,) + v for i, v in enumerate(VALUES)]

def run(task):
    filler = [(1000 + i, None, "f", 0, False, None, 0, None, None) for i in range(6000)]
    data = rows(0) + filler + rows(10000)
    n = task.load("vals", data)
    n += task.load("vals_new", [dict(zip(COLUMNS, r)) for r in data], mode="replace")
    return ScriptResult(n)
`

// Awkward values read back the same whether they crossed the pipe as JSON
// or as COPY text: NULLs, quotes, tabs, newlines, backslashes, \N, unicode,
// empty strings, the largest integers, exact decimals, booleans from text
// and integers, timestamps with and without a zone, dates (from dates,
// timestamps and text), text timestamps, and lists, dicts, numbers,
// booleans and timestamps in a text column.
func TestLoadValuesAsJSONAndCopyText(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.exec("CREATE TABLE staging.vals (id BIGINT, s VARCHAR, t VARCHAR, n DECIMAL(38, 10), b BOOLEAN, ts TIMESTAMP WITH TIME ZONE, k BIGINT, d DATE, j VARCHAR)")
		e.script("vals.py", valuesLoader)
		e.task("vals", "vals.py", nil)
		if out := e.run(); out.Status != run.RunSuccess {
			a := e.latest("vals")
			t.Fatalf("%s: %s\n%s", out, a.message, a.log)
		}
		for _, table := range []string{"vals", "vals_new"} {
			q := "SELECT id, s, t, CAST(n AS VARCHAR), b, ts, k, CAST(d AS VARCHAR), j FROM staging." + table + " WHERE id < 1000 OR id > 10000 ORDER BY id"
			got := e.wh(q)
			if len(got) != 12 {
				t.Fatalf("%s: %d rows: %q", table, len(got), got)
			}
			for i := range 6 {
				first, _ := strings.CutPrefix(got[i], strconv.Itoa(i+1)+" ")
				second, _ := strings.CutPrefix(got[i+6], strconv.Itoa(10001+i)+" ")
				want(t, table+": row "+strconv.Itoa(i+1)+" as JSON and as COPY text", second, first)
			}
			if table == "vals" {
				want(t, "vals: rows", strings.Join(got[:6], "|"), strings.Join([]string{
					`1 NULL it's "quoted" 1.5000000000 true 2024-01-02 03:04:05.6 +0000 UTC 3 2024-01-02 {"a":"<x & y>","b":[1,2.5,null]}`,
					"2 tab\there new\nline 12345678901234567890.0123456789 false 2024-01-02 01:04:05 +0000 UTC -5 2024-01-02 " + `[1,"two",{"k":"é\t"}]`,
					"3 back\\slash \\N cr\rx 3.0000000000 NULL 2024-05-06 00:00:00 +0000 UTC NULL 2024-05-06 1.5",
					"4 é中😀  NULL true 2024-05-06 07:08:09 +0000 UTC 4611686018427387904 NULL true",
					"5   spaces  -0.2500000000 false NULL -9223372036854775808 2024-05-06 2024-01-02T03:04:05.6Z",
					"6 \\N \\. 0.0000000001 true 2024-05-06 07:08:09.123456 +0000 UTC 12 1999-12-31 1180591620717411303424",
				}, "|"))
			}
		}
		want(t, "rows loaded", strings.Contains(e.latest("vals").taskLog, "LOADED_ROWS = 12024\n"), true)
	})
}

// failingLoader hands task.load rows that fail after the first batch: the
// iterator raises, or a row has too few values.
const failingLoader = `
from etl_craft.scripting import ScriptResult

def rows(how):
    for i in range(7000):
        if i == 6000:
            if how == "raise":
                raise RuntimeError("the source broke at row 6000")
            yield (i,)
        yield (i, "r%d" % i)

def run(task):
    how = task.input_params["how"]
    try:
        task.load("items", rows(how))
    except Exception as e:
        print("load failed:", e)
        raise
    return ScriptResult(0)
`

// A load whose rows fail after the first batch (on PostgreSQL, in the
// middle of the COPY) fails the attempt with the script's error and leaves
// the target empty and no staging table.
func TestLoadFailingAfterTheFirstBatch(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		e.exec("CREATE TABLE staging.items (id BIGINT, name VARCHAR)")
		e.script("failing.py", failingLoader)
		id := e.task("failing", "failing.py", map[string]string{"INPUT_PARAMS": `{"how": "raise"}`})
		for how, message := range map[string]string{"raise": "RuntimeError: the source broke at row 6000", "short": "has 1 values for its 2 columns"} {
			e.setLoad(id, `{"how": "`+how+`"}`)
			if out := e.run(); out.Status != run.RunFailed {
				t.Fatalf("%s: %s", how, out)
			}
			a := e.latest("failing")
			if !strings.Contains(a.message, message) || !strings.Contains(a.log, "load failed:") {
				t.Fatalf("%s: ERROR_MESSAGE %q\n%s", how, a.message, a.log)
			}
			want(t, how+": rows", strings.Join(e.wh("SELECT COUNT(*) FROM staging.items"), ","), "0")
			want(t, how+": staging tables", e.stages(), "")
		}
	})
}
