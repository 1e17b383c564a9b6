package airflow_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

// The pipelines of the distributed test: SEED makes main.seed; WIDE waits
// for SEED's DAG run (a sensor), then runs six tasks at once, and after
// them slow, alone, which appends main.seed's rows to main.slow_rows in a
// statement that takes fifteen seconds.
const (
	seedPipeline = "SEED"
	widePipeline = "WIDE"
	wideTasks    = 6
)

// wideMigration registers SEED and WIDE.
func wideMigration() string {
	prepare := e2e.Task{Code: "prepare", Params: map[string]string{"SQL_ACTION": "SETUP_TABLE", "TARGET_OBJECT": "main.slow_rows",
		"SOURCE_SQL": "SELECT n FROM main.seed"}}
	slow := e2e.SQL("slow", "APPEND_TABLE", "main.slow_rows", "SELECT n FROM main.seed, pg_sleep(15)", "prepare:SUCCESS")
	tasks := []e2e.Task{prepare}
	for i := 1; i <= wideTasks; i++ {
		code := fmt.Sprintf("w%d", i)
		tasks = append(tasks, e2e.CreateTable(code, "main."+code, fmt.Sprintf("SELECT n * %d AS n FROM main.seed, pg_sleep(3)", i)))
		slow.Deps = append(slow.Deps, code+":SUCCESS")
	}
	tasks = append(tasks, slow)
	return e2e.Pipeline(seedPipeline, e2e.CreateTable("seed", "main.seed", "SELECT n FROM generate_series(1, 8) AS g (n)")) +
		e2e.Pipeline(widePipeline, tasks...) + `
INSERT INTO CFG_PIPELINE_DEPENDENCY (PIPELINE_ID, DEPENDS_ON_PIPELINE_ID, DEPENDENCY_TYPE)
SELECT d.PIPELINE_ID, u.PIPELINE_ID, 'SUCCESS' FROM CFG_PIPELINES d, CFG_PIPELINES u
WHERE d.PIPELINE_CODE = 'WIDE' AND u.PIPELINE_CODE = 'SEED' AND d.ACTIVE_FLAG = 'Y' AND u.ACTIVE_FLAG = 'Y';
`
}

// worker is one Celery worker: its own copy of the project folder and of
// the binary, as a separate host has, and its own Airflow log folder.
type worker struct {
	name, dir, logs string
	proc            *process
}

// startWorker copies the project and the binary into a folder of the
// worker's own and starts `airflow celery worker` there, two tasks at once.
func startWorker(t *testing.T, d *deployment, p *e2e.Project, name string) *worker {
	t.Helper()
	w := &worker{name: name, dir: filepath.Join(t.TempDir(), name)}
	project, bin := filepath.Join(w.dir, "project"), filepath.Join(w.dir, "bin")
	w.logs = filepath.Join(w.dir, "airflow-logs")
	for _, c := range [][]string{{"-a", p.Dir, project}, {"-a", e2e.Binary(t), filepath.Join(bin, "etl-craft")}} {
		if err := os.MkdirAll(filepath.Dir(c[2]), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("cp", c...).CombinedOutput(); err != nil {
			t.Fatalf("cp %v: %v\n%s", c, err, out)
		}
	}
	env := append(stepEnv(p, bin, project),
		"AIRFLOW__LOGGING__BASE_LOG_FOLDER="+w.logs,
		"AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT="+strconv.Itoa(enginetest.FreePort(t)))
	w.proc = d.start(name, env, "celery", "worker", "--concurrency", "2", "--celery-hostname", name+"@%h", "--skip-serve-logs")
	return w
}

// startRedis starts Debian's redis-server on a free loopback port, without
// persistence, and returns its URL. It is killed when the test ends.
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("the Celery tests need Debian's redis-server (scripts/test.sh installs it)")
	}
	port := strconv.Itoa(enginetest.FreePort(t))
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return "redis://127.0.0.1:" + port + "/0"
}

// The CeleryExecutor with Redis as its broker: Airflow's scheduler and two
// Celery workers as separate processes, each worker with its own copy of
// the project folder and the binary, on one PostgreSQL Engine DB and
// warehouse. WIDE's steps run on both workers (their attempts' logs are
// in both copies). Then the worker running slow is killed with SIGKILL,
// with every process it started, in the middle of slow's statement:
// Airflow notices the lost task and retries it on the other worker,
// etl-craft fences the dead attempt (LOST: its process is gone), the second
// attempt succeeds, and main.slow_rows holds each row once. Airflow's DAG
// runs and task instances agree with the Engine DB. On the newest Airflow
// line, or on each with ETL_CRAFT_AIRFLOW_ALL=1, to bound the time of CI.
func TestCeleryExecutor(t *testing.T) {
	t.Parallel()
	newestAirflow(t, func(t *testing.T, in install) {
		p := e2e.New(t, e2e.PostgresPostgres, "")
		p.Orchestration("  Allow_schedule: false\n  Retries: 1\n  Retry_delay_minutes: 0\n")
		p.Write("craft-connector.yml", strings.Replace(p.Config(), "  Mode: local\n", "  Mode: remote\n", 1))
		p.Write("migrations/0001_wide.sql", wideMigration())
		p.OK("setup")

		d := deploy(t, in, "CeleryExecutor", "AIRFLOW__CELERY__BROKER_URL="+startRedis(t))
		ids := writeDAGs(t, p, d.dags, seedPipeline, widePipeline)
		d.up(stepEnv(p, filepath.Dir(e2e.Binary(t)), p.Dir))
		workers := []*worker{startWorker(t, d, p, "worker-a"), startWorker(t, d, p, "worker-b")}
		d.waitDAGs(ids...)
		d.trigger(seedPipeline, widePipeline)

		// slow's first attempt runs: kill its worker.
		db := p.DB()
		attempt := func() string {
			return e2e.Scalar(t, db, `SELECT COALESCE(MAX(a.STATUS || ' ' || a.LOG_PATH), '') FROM AUD_TASK_ATTEMPTS a
				JOIN AUD_TASK_RUN_LOG r ON r.TASK_RUN_ID = a.TASK_RUN_ID JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID
				WHERE c.TASK_CODE = 'slow' AND a.ATTEMPT_NUMBER = 1`)
		}
		d.wait("slow's first attempt to run", func() bool { return strings.HasPrefix(attempt(), "RUNNING ") })
		time.Sleep(2 * time.Second) // into its statement
		var dead, alive *worker
		for i, w := range workers {
			if strings.Contains(attempt(), w.dir+string(os.PathSeparator)) {
				dead, alive = w, workers[1-i]
			}
		}
		if dead == nil {
			t.Fatalf("slow's first attempt ran on no worker: %s", attempt())
		}
		dead.proc.signal(syscall.SIGKILL)

		runs := d.waitRunsEnded(2)
		for _, r := range runs {
			if r.state != "success" {
				t.Fatalf("DAG run %s %s %s\n%s", r.dag, r.id, r.state, d.logs())
			}
			agree(t, d, p, r)
		}
		wide := runs[0]
		if wide.dag != widePipeline {
			wide = runs[1]
		}
		if ti := d.taskInstances(wide)["slow"]; ti.tries != 2 || ti.state != "success" {
			t.Errorf("slow in Airflow: %+v", ti)
		}
		// Airflow's log of each try is on the worker that ran it.
		for try, w := range map[int]*worker{1: dead, 2: alive} {
			if log := taskLog(t, w.logs, wide, "slow", try); try == 2 && !strings.Contains(log, "slow: SUCCESS") {
				t.Errorf("the log of slow's try 2 on %s:\n%s", w.name, log)
			}
		}
		attempts := e2e.QueryRows(t, db, `SELECT a.STATUS, a.LOG_PATH, COALESCE(a.ERROR_MESSAGE, '') FROM AUD_TASK_ATTEMPTS a
			JOIN AUD_TASK_RUN_LOG r ON r.TASK_RUN_ID = a.TASK_RUN_ID JOIN CFG_TASKS c ON c.TASK_ID = r.TASK_ID
			WHERE c.TASK_CODE = 'slow' ORDER BY a.ATTEMPT_NUMBER`)
		if len(attempts) != 2 || !strings.HasPrefix(attempts[0], "LOST "+dead.dir) || !strings.Contains(attempts[0], "is gone") ||
			!strings.HasPrefix(attempts[1], "SUCCESS "+alive.dir) {
			t.Errorf("slow's attempts (%s died):\n%s", dead.name, strings.Join(attempts, "\n"))
		}
		if got := p.WarehouseRows("SELECT count(*), count(DISTINCT n) FROM main.slow_rows"); fmt.Sprint(got) != "[8 8]" {
			t.Errorf("main.slow_rows holds %v rows (distinct n), want each of the 8 once", got)
		}
		// Both workers ran WIDE's steps.
		for _, w := range workers {
			if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE LOG_PATH LIKE $1", w.dir+"/%"); n == 0 {
				t.Errorf("no attempt ran on %s", w.name)
			}
		}
	})
}
