package script_test

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/handler/script"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/run"
)

// The warehouse in the Engine DB's own PostgreSQL database: schema staging
// beside the Engine tables in public. There the loads commit in the Engine
// DB transaction recording the attempt's SUCCESS and offset.

// incLoader loads the rows after the stored offset up to INPUT_PARAMS'
// upto, in its mode, and returns upto as the offset.
const incLoader = `
from etl_craft.scripting import Offset, ScriptResult

def run(task):
    p = task.input_params
    start = int(task.offset.value) if task.offset is not None else 0
    rows = [{"id": i, "name": "r%d" % i} for i in range(start + 1, p["upto"] + 1)]
    n = task.load("items", rows, mode=p["mode"])
    return ScriptResult(n, offset=Offset.number(p["upto"]))
`

// The messages the attempt log gives for each path of the loads.
const (
	inEngineTx = "the loads publish in the Engine DB transaction that records the attempt's SUCCESS and offset"
	twoSteps   = "the loads publish in the warehouse before the attempt's outcome and offset commit in the Engine DB"
)

// sameDatabase runs body for append and replace on a PostgreSQL Engine DB
// (opened by engineDB from the initialized one) and a warehouse in its
// database.
func sameDatabase(t *testing.T, engineDB func(t *testing.T, db *engine.DB) *engine.DB, body func(t *testing.T, e *env, mode string)) {
	for _, mode := range []string{"append", "replace"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			db := pipelinetest.DB(t, engine.Postgres)
			where := db.Options().DSN
			body(t, newEnvOn(t, engineDB(t, db), where), mode)
		})
	}
}

// asAdmin keeps the Engine DB as it is: its login is the test server's
// administrator, who may do everything in the warehouse's schema.
func asAdmin(_ *testing.T, db *engine.DB) *engine.DB { return db }

// incRun sets the loader's INPUT_PARAMS and runs P, which must succeed.
func (e *env) incRun(id int64, params string) attempt {
	e.t.Helper()
	e.setLoad(id, params)
	if out := e.run(); out.Status != run.RunSuccess {
		a := e.latest("inc")
		e.t.Fatalf("%s: %s: %s\n%s", params, out, a.message, a.log)
	}
	return e.latest("inc")
}

// ledger lists the tables named like the load ledger in the warehouse.
func (e *env) ledger() string {
	return strings.Join(e.wh("SELECT table_schema || '.' || table_name FROM information_schema.tables WHERE table_name = 'etl_craft_script_loads'"), ",")
}

// The loads and the offset commit in the transaction recording SUCCESS:
// the log says so, and no ledger is written.
func TestLoadCommitsWithTheOutcomeInTheEngineDatabase(t *testing.T) {
	sameDatabase(t, asAdmin, func(t *testing.T, e *env, mode string) {
		e.script("inc.py", incLoader)
		id := e.task("inc", "inc.py", map[string]string{"INPUT_PARAMS": `{"upto": 2, "mode": "` + mode + `"}`})
		a := e.incRun(id, `{"upto": 2, "mode": "`+mode+`"}`)
		if !strings.Contains(a.log, inEngineTx) || !strings.Contains(a.taskLog, "LOADED_ROWS = 2\n") {
			t.Fatalf("attempt log:\n%s\nTASK_LOG:\n%s", a.log, a.taskLog)
		}
		want(t, "rows", strings.Join(e.wh("SELECT id, name FROM staging.items ORDER BY id"), ","), "1 r1,2 r2")
		want(t, "offset", e.offset(id), "NUMBER 2")
		e.incRun(id, `{"upto": 4, "mode": "`+mode+`"}`)
		rows := map[string]string{"append": "1,2,3,4", "replace": "3,4"}[mode]
		want(t, "rows of the second run", strings.Join(e.wh("SELECT id FROM staging.items ORDER BY id"), ","), rows)
		want(t, "offset of the second run", e.offset(id), "NUMBER 4")
		want(t, "staging tables", e.stages(), "")
		want(t, "ledger", e.ledger(), "")
	})
}

// A fault, and a kill -9 of the supervisor, after the loads' statements
// ran in the transaction recording SUCCESS and before it commits: the
// target, the offset and the attempt stay as they were; the next run
// loads the rows once and leaves no staging table.
func TestAFaultBeforeTheOutcomeCommitsLeavesNothing(t *testing.T) {
	sameDatabase(t, asAdmin, func(t *testing.T, e *env, mode string) {
		e.script("inc.py", incLoader)
		id := e.task("inc", "inc.py", map[string]string{"INPUT_PARAMS": `{"upto": 2, "mode": "` + mode + `"}`})
		e.incRun(id, `{"upto": 2, "mode": "`+mode+`"}`)
		e.setLoad(id, `{"upto": 4, "mode": "`+mode+`"}`)
		unchanged := func(what string) {
			t.Helper()
			want(t, what+": rows", strings.Join(e.wh("SELECT id FROM staging.items ORDER BY id"), ","), "1,2")
			want(t, what+": offset", e.offset(id), "NUMBER 2")
			if a := e.latest("inc"); a.status == "SUCCESS" {
				t.Fatalf("%s: the attempt is SUCCESS\n%s", what, a.log)
			}
		}

		cmd := e.child(script.FaultAfterLoad)
		if err := cmd.Wait(); err == nil {
			t.Fatalf("the child succeeded through the fault\n%s", e.childLog())
		}
		unchanged("after the fault")
		if a := e.latest("inc"); a.status != "FAILED" || !strings.Contains(a.message, "injected fault at "+script.FaultAfterLoad) {
			t.Fatalf("after the fault: %s %q", a.status, a.message)
		}

		cmd = e.child(script.FaultAfterLoad + ":kill")
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != fault.KilledStatus {
			t.Fatalf("child: %v\n%s", err, e.childLog())
		}
		unchanged("after the kill")
		if got := e.stages(); !strings.HasPrefix(got, "etl_load_") {
			t.Fatalf("staging tables after the kill: %q", got)
		}

		a := e.incRun(id, `{"upto": 4, "mode": "`+mode+`"}`)
		rows := map[string]string{"append": "1,2,3,4", "replace": "3,4"}[mode]
		want(t, "rows", strings.Join(e.wh("SELECT id FROM staging.items ORDER BY id"), ","), rows)
		want(t, "offset", e.offset(id), "NUMBER 4")
		want(t, "attempts", strings.Join(e.engine("SELECT ATTEMPT_NUMBER, STATUS FROM AUD_TASK_ATTEMPTS ORDER BY ATTEMPT_ID"), ","),
			"1 SUCCESS,1 FAILED,1 LOST,2 SUCCESS")
		if !strings.Contains(a.log, inEngineTx) || !strings.Contains(a.taskLog, "LOADED_ROWS = 2\n") {
			t.Fatalf("attempt log:\n%s\nTASK_LOG:\n%s", a.log, a.taskLog)
		}
		want(t, "staging tables", e.stages(), "")
	})
}

// withoutWarehouseRights reopens the Engine DB as a login of its own that
// reads and writes the Engine tables and has no right in the warehouse's
// schema staging, which the administrator owns.
func withoutWarehouseRights(t *testing.T, db *engine.DB) *engine.DB {
	admin := db.Options().DSN
	b := make([]byte, 4)
	rand.Read(b)
	role, password := "etl_craft_script_"+hex.EncodeToString(b), hex.EncodeToString(b)+"-pw"
	conn, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN PASSWORD '" + password + "'",
		"GRANT USAGE ON SCHEMA public TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO " + role,
		"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO " + role,
	} {
		if _, err := conn.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { // after the Engine DB opened below is closed
		if c, err := sql.Open("pgx", admin); err == nil {
			c.Exec("DROP OWNED BY " + role)
			c.Exec("DROP ROLE " + role)
			c.Close()
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	return enginetest.OpenWith(t, engine.Options{Kind: engine.Postgres, DSN: u.String(), Schema: "public"})
}

// Where the Engine DB's role may not write the warehouse's schema, the
// loads publish in two steps, as in any other warehouse, and the log says
// why.
func TestLoadFallsBackToTwoStepsWithoutTheRights(t *testing.T) {
	sameDatabase(t, withoutWarehouseRights, func(t *testing.T, e *env, mode string) {
		e.script("inc.py", incLoader)
		id := e.task("inc", "inc.py", map[string]string{"INPUT_PARAMS": `{"upto": 2, "mode": "` + mode + `"}`})
		a := e.incRun(id, `{"upto": 2, "mode": "`+mode+`"}`)
		if !strings.Contains(a.log, twoSteps+": the warehouse is the Engine DB's database, but the Engine DB's role cannot publish the load there") ||
			!strings.Contains(a.log, "has no USAGE on schema staging") || strings.Contains(a.log, inEngineTx) {
			t.Fatalf("attempt log:\n%s", a.log)
		}
		want(t, "rows", strings.Join(e.wh("SELECT id, name FROM staging.items ORDER BY id"), ","), "1 r1,2 r2")
		want(t, "offset", e.offset(id), "NUMBER 2")
		want(t, "ledger", e.ledger(), "staging.etl_craft_script_loads")
		want(t, "staging tables", e.stages(), "")

		// With USAGE and INSERT, the role still does not own the staging
		// tables the warehouse's login creates.
		u, _ := url.Parse(e.db.Options().DSN)
		e.exec("GRANT USAGE ON SCHEMA staging TO "+u.User.Username(), "GRANT INSERT ON staging.items TO "+u.User.Username())
		a = e.incRun(id, `{"upto": 4, "mode": "`+mode+`"}`)
		if !strings.Contains(a.log, twoSteps) || !strings.Contains(a.log, "does not own the staging table") {
			t.Fatalf("attempt log:\n%s", a.log)
		}
		rows := map[string]string{"append": "1,2,3,4", "replace": "3,4"}[mode]
		want(t, "rows of the second run", strings.Join(e.wh("SELECT id FROM staging.items ORDER BY id"), ","), rows)
		want(t, "offset of the second run", e.offset(id), "NUMBER 4")
	})
}
