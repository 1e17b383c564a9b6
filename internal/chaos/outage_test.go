package chaos_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/records"
)

// outage is how long the outage tests stop a database.
const outage = 5 * time.Second

// outageProject sets a project up for an outage test: eight pipelines of
// the workload, whose scripts sleep two seconds before they load (so the
// outage finds attempts in the middle of their work), with cloning on; the
// tasks' retries outlast the outage.
func outageProject(t *testing.T, pair e2e.Pair, engineURL, warehouseURL string) (*e2e.Project, *workload, *engine.DB, string) {
	t.Helper()
	p := e2e.NewOn(t, pair, engineURL, warehouseURL, cloning)
	p.Orchestration("  Max_parallel_tasks: 4\n")
	p.OK("init-db")
	w := newWorkload(p, 8, 2*time.Second, retryOutlasting)
	return p, w, p.DB(), p.Token("ops", "operator")
}

// triggerAll runs every pipeline of the workload once, through the API.
func triggerAll(s *e2e.Server, token string, w *workload) {
	for _, code := range w.pipelines {
		s.Trigger(token, code)
	}
}

// waitRunning waits until an attempt of the task runs.
func waitRunning(t *testing.T, db *engine.DB, task string) {
	t.Helper()
	deadline := time.Now().Add(e2e.Patience)
	for e2e.Count(t, db, `SELECT count(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG r ON r.TASK_RUN_ID = a.TASK_RUN_ID
		JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID WHERE c.TASK_CODE = $1 AND a.STATUS = $2`, task, records.AttemptRunning) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no attempt of %s ever ran", task)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// afterOutage checks that the server outlived the outage and goes on by
// itself: every run ends, the runs triggered next through its API end too,
// a second server is still refused (the first is still the overseer), and
// the server stops cleanly.
func afterOutage(t *testing.T, p *e2e.Project, s *e2e.Server, db *engine.DB, w *workload, token string) {
	t.Helper()
	e2e.WaitRunsEnded(t, db)
	if s.Exited() {
		t.Fatalf("the server did not outlive the outage:\n%s", s.Stderr())
	}
	triggerAll(s, token, w)
	e2e.WaitRunsEnded(t, db)
	second := p.Command(nil, "server")
	done := make(chan error, 1)
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- second.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 14 {
			t.Fatalf("a second server after the outage: %v", err)
		}
	case <-time.After(e2e.Patience):
		second.Process.Kill()
		t.Fatal("a second server started after the outage: the first had lost the overseer lock")
	}
	if code := s.Stop(); code != 0 {
		t.Fatalf("the server exited %d:\n%s", code, s.Stderr())
	}
}

// A PostgreSQL Engine DB stopped for five seconds under a running server,
// with attempts running: the server keeps running, waits the outage out,
// takes its overseer lock again, and finishes every run by itself; the
// attempts that failed were retried by their policy, and nothing was lost
// or written twice.
func TestAnEngineDBOutageUnderARunningServer(t *testing.T) {
	t.Parallel()
	enginetest.AdminURL(t)
	c := enginetest.NewCluster(t)
	p, w, db, token := outageProject(t, e2e.PostgresPostgres, c.NewDatabase("engine"), "")
	s := p.StartServer()
	triggerAll(s, token, w)
	waitRunning(t, db, scriptLoad.String())
	c.Outage(outage)
	dropIdle(db)
	afterOutage(t, p, s, db, w, token)
	if log := s.Stderr(); !strings.Contains(log, "the overseer lock was taken again") {
		t.Errorf("the server never lost its overseer lock in the outage:\n%s", log)
	}
	verify(t, p, db, w, 2, func(status records.AttemptStatus, _ string) bool { return status == records.AttemptFailed })
}

// A PostgreSQL warehouse stopped for five seconds while scripts are about
// to load into it: the server keeps running, the loads that failed are
// retried by their policy, and once the warehouse is back every run ends
// SUCCESS with each run's rows loaded once.
func TestAWarehouseOutageMidTask(t *testing.T) {
	t.Parallel()
	c := enginetest.NewCluster(t)
	p, w, db, token := outageProject(t, e2e.SQLitePostgres, "", c.NewDatabase("warehouse"))
	s := p.StartServer()
	triggerAll(s, token, w)
	waitRunning(t, db, scriptLoad.String())
	c.Outage(outage)
	afterOutage(t, p, s, db, w, token)
	if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = $1", records.AttemptFailed); n == 0 {
		t.Errorf("no attempt failed: the outage was not in the middle of a task")
	}
	verify(t, p, db, w, 2, func(status records.AttemptStatus, _ string) bool { return status == records.AttemptFailed })
}

// dropIdle closes the idle connections of the test's own handle on a
// database that restarted, which are dead.
func dropIdle(db *engine.DB) {
	db.SQL().SetMaxIdleConns(0)
	db.SQL().SetMaxIdleConns(2)
}
