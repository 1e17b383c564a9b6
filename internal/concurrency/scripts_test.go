package concurrency_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The case: eight pipelines of one PYTHON task each, every script
// calling task.load once into the same new table, triggered together
// through the API of a server with Max_parallel_tasks 8 on a fresh
// warehouse. All eight succeed at their first attempt, and the table holds
// each pipeline's rows once.
func TestEightScriptLoadsAtOnceThroughTheServer(t *testing.T) {
	t.Parallel()
	e2e.EachPair(t, func(t *testing.T, pair e2e.Pair) { eightLoads(t, pair, "append") })
}

// The same with the warehouse in the PostgreSQL Engine DB's own database,
// where each load publishes in the Engine DB transaction recording its
// attempt: eight appends into one new table, and eight replaces of
// another, at once.
func TestEightScriptLoadsAtOnceInTheEngineDBsDatabase(t *testing.T) {
	t.Parallel()
	enginetest.AdminURL(t)
	for _, mode := range []string{"append", "replace"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			eightLoads(t, e2e.OnePostgres, mode)
		})
	}
}

// loadRows is how many rows each script loads: more than the first batch.
const loadRows = 6000

// loads is a project of eight pipelines PY1 … PY8 of one PYTHON task
// each, whose script loads loadRows rows into main.py_events in one mode
// and then waits at a barrier for meet scripts.
type loads struct {
	*e2e.Project
	db      *engine.DB
	mode    string
	barrier string
	token   string
}

// newLoads writes the project on the pair, with Max_parallel_tasks 8.
func newLoads(t *testing.T, pair e2e.Pair, mode string, meet int) *loads {
	t.Helper()
	l := &loads{Project: e2e.New(t, pair, ""), mode: mode, barrier: t.TempDir()}
	l.Orchestration("  Max_parallel_tasks: 8\n")
	l.OK("init-db")
	l.Write("ingestion_scripts/load.py", scripts["load.py"])
	var mig strings.Builder
	for i := 1; i <= 8; i++ {
		mig.WriteString(e2e.Pipeline(fmt.Sprintf("PY%d", i), scriptTask("load", "load.py", fmt.Sprintf(
			`{"lane": %d, "table": "main.py_events", "mode": %q, "rows": %d, "same": %t, "barrier": %q, "meet": %d}`,
			i, mode, loadRows, mode == "replace", l.barrier, meet))))
	}
	l.Register("0001_loads", mig.String())
	l.token = l.Token("ops", "operator")
	l.db = l.DB()
	return l
}

// trigger asks the server to run the eight pipelines, and returns their
// runs' ids.
func (l *loads) trigger(s *e2e.Server) []int64 {
	ids := make([]int64, 8)
	for i := range ids {
		ids[i] = s.Trigger(l.token, fmt.Sprintf("PY%d", i+1))
	}
	return ids
}

// check fails the test unless every run ended SUCCESS, the attempts'
// statuses counted are attempts (such as "SUCCESS 8"), and main.py_events
// holds each lane's rows once (the one lane 0 of the replaces).
func (l *loads) check(t *testing.T, s *e2e.Server, ids []int64, attempts string) {
	t.Helper()
	statuses := e2e.WaitRunsEnded(t, l.db, ids...)
	if code := s.Stop(); code != 0 {
		t.Fatalf("the server exited %d:\n%s", code, s.Stderr())
	}
	got := e2e.QueryRows(t, l.db, "SELECT STATUS, count(*) FROM AUD_TASK_ATTEMPTS GROUP BY STATUS ORDER BY STATUS")
	for _, id := range ids {
		if statuses[id] != records.RunSuccess || strings.Join(got, "|") != attempts {
			t.Fatalf("runs %v, attempts %q, want %s:\n%s", statuses, got, attempts, strings.Join(e2e.QueryRows(t, l.db,
				"SELECT ATTEMPT_ID, STATUS, coalesce(ERROR_MESSAGE, '') FROM AUD_TASK_ATTEMPTS ORDER BY ATTEMPT_ID"), "\n"))
		}
	}
	want := []string{fmt.Sprintf("0 %d %d", loadRows, loadRows*(loadRows-1)/2)}
	if l.mode == "append" {
		want = make([]string, 8)
		for i := range want {
			want[i] = fmt.Sprintf("%d %d %d", i+1, loadRows, loadRows*(loadRows-1)/2)
		}
	}
	if got := l.WarehouseRows("SELECT lane, count(*), sum(n) FROM main.py_events GROUP BY lane ORDER BY lane"); !slices.Equal(got, want) {
		t.Fatalf("main.py_events holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := l.WarehouseRows(targets["stages"]); strings.Join(got, "") != "0" {
		t.Fatalf("%s staging tables left", got)
	}
}

// eightLoads runs the eight loads of the mode on the pair through the
// server, the scripts meeting at a barrier once they staged their rows so
// that the loads publish together, and checks every attempt and the table.
func eightLoads(t *testing.T, pair e2e.Pair, mode string) {
	t.Helper()
	l := newLoads(t, pair, mode, 8)
	s := l.StartServer()
	l.check(t, s, l.trigger(s), "SUCCESS 8")
}

// Eight script loads staged and waiting when their server is killed with
// kill -9, taken up by the next server: the attempts the first held are
// LOST, each task run's next attempt loads its rows (registering nothing
// at once in DuckDB, creating the ledger and the table once), every run
// ends SUCCESS, the table holds each lane's rows once, and no staging
// table is left. Nothing is left in the temporary folder either: the
// scripts' etl_craft package is written once, in the user's cache folder.
func TestEightScriptLoadsAfterTheServerWasKilled(t *testing.T) {
	t.Parallel()
	e2e.EachPair(t, func(t *testing.T, pair e2e.Pair) {
		// The scripts wait for nine: the eight lanes and the test, which
		// arrives once the first server is gone.
		l := newLoads(t, pair, "append", 9)
		tmp, cache := t.TempDir(), t.TempDir()
		l.Env = append(l.Env, "TMPDIR="+tmp, "XDG_CACHE_HOME="+cache)
		s := l.StartServer()
		ids := l.trigger(s)
		waitForFiles(t, l.barrier, 8)
		s.Kill()
		if err := os.WriteFile(filepath.Join(l.barrier, "test"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		s = l.StartServer()
		l.check(t, s, ids, "LOST 8|SUCCESS 8")
		if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) != 0 {
			t.Fatalf("the killed server and its scripts left %q in the temporary folder", left)
		}
		if pkgs, _ := filepath.Glob(filepath.Join(cache, "etl-craft", "python", "*", "etl_craft", "_main.py")); len(pkgs) != 1 {
			t.Fatalf("the user's cache folder holds %d etl_craft packages, want 1: %q", len(pkgs), pkgs)
		}
	})
}

// waitForFiles waits until the folder holds n files.
func waitForFiles(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(e2e.Patience)
	for {
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d scripts reached the barrier", len(files), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
