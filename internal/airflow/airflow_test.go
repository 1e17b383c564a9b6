package airflow_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/testenv"
)

func TestMain(m *testing.M) { e2e.Main(m) }

// Variable names the virtual environments Airflow is installed in,
// separated by colons, as scripts/test.sh sets it.
const Variable = "ETL_CRAFT_AIRFLOW"

// install is one Airflow version in its virtual environment.
type install struct {
	dir     string
	version string // such as 2.10.5
}

// major is the Airflow's major version, 2 or 3.
func (in install) major() int { return int(in.version[0] - '0') }

// installWait is how long the tests wait for scripts/test.sh to finish an
// install it runs in the background (a fresh one takes minutes).
const installWait = 30 * time.Minute

var installed struct {
	once sync.Once
	list []install
	err  error
}

// installs returns the Airflows of ETL_CRAFT_AIRFLOW, waiting for those
// scripts/test.sh is still installing. Without the variable the test is
// skipped, unless CI is set, where it fails: CI runs every test.
func installs(t *testing.T) []install {
	t.Helper()
	v := testenv.Require(t, Variable, "run scripts/test.sh, which installs Airflow, for the Airflow tests")
	installed.once.Do(func() { installed.list, installed.err = waitInstalls(strings.Split(v, ":")) })
	if installed.err != nil {
		t.Fatal(installed.err)
	}
	return installed.list
}

// waitInstalls waits until each folder holds a finished install (its
// .etl-craft-installed) and reads its Airflow version; an install that
// failed left <folder>.failed.
func waitInstalls(dirs []string) ([]install, error) {
	var out []install
	for _, dir := range dirs {
		deadline := time.Now().Add(installWait)
		for {
			if _, err := os.Stat(filepath.Join(dir, ".etl-craft-installed")); err == nil {
				break
			}
			if b, err := os.ReadFile(dir + ".failed"); err == nil {
				return nil, fmt.Errorf("%s\n%s", b, tail(dir+".log"))
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("no Airflow installed in %s after %v (see %s.log)", dir, installWait, dir)
			}
			time.Sleep(time.Second)
		}
		infos, _ := filepath.Glob(filepath.Join(dir, "lib", "python*", "site-packages", "apache_airflow-[0-9]*.dist-info"))
		if len(infos) != 1 {
			return nil, fmt.Errorf("%s: want one apache_airflow-*.dist-info, found %v", dir, infos)
		}
		version := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(infos[0]), "apache_airflow-"), ".dist-info")
		out = append(out, install{dir: dir, version: version})
	}
	// Oldest first.
	slices.SortFunc(out, func(a, b install) int { return compareVersions(a.version, b.version) })
	return out, nil
}

// AllVariable, set to 1, runs the tests that take one Airflow line by
// default (CI's bounded form) on every installed one.
const AllVariable = "ETL_CRAFT_AIRFLOW_ALL"

// compareVersions compares two dotted version numbers, such as 2.10.5 and
// 3.3.2, number by number.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x - y
		}
	}
	return len(as) - len(bs)
}

// eachAirflow runs body as a parallel subtest per installed Airflow, named
// airflow-<version>.
func eachAirflow(t *testing.T, body func(t *testing.T, in install)) {
	t.Helper()
	runEach(t, installs(t), body)
}

// newestAirflow runs body as eachAirflow does on the newest installed
// Airflow alone, or on each with ETL_CRAFT_AIRFLOW_ALL=1.
func newestAirflow(t *testing.T, body func(t *testing.T, in install)) {
	t.Helper()
	list := installs(t)
	if os.Getenv(AllVariable) != "1" {
		list = list[len(list)-1:]
	}
	runEach(t, list, body)
}

// runEach runs body as a parallel subtest per Airflow of the list.
func runEach(t *testing.T, list []install, body func(t *testing.T, in install)) {
	t.Helper()
	for _, in := range list {
		t.Run("airflow-"+in.version, func(t *testing.T) {
			t.Parallel()
			body(t, in)
		})
	}
}

// tail returns the end of a file, for a failure message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return string(b)
}

// airflowWait is how long a test waits for Airflow to do something: parse
// the DAGs, run a DAG, notice a dead worker. Airflow's processes share two
// cores with every other test, so it is long.
const airflowWait = 20 * time.Minute

// deployment is one Airflow: its home folder, its settings and metadata
// database (a PostgreSQL database of its own), and the processes it runs.
type deployment struct {
	t    *testing.T
	in   install
	home string
	// dags is the DAGs folder.
	dags string
	// env is Airflow's settings, given to every process.
	env []string
	// meta is the metadata database.
	meta *sql.DB
	// api is Airflow 3's API server, such as http://127.0.0.1:41234.
	api   string
	procs []*process
}

// process is one long-running Airflow process; its output goes to a file
// in the home folder.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// deploy prepares an Airflow with the executor (LocalExecutor or
// CeleryExecutor) in a home folder of its own, on a metadata database of
// its own, tuned for tests: DAG files scanned every few seconds, a lost
// task noticed after 30 seconds without a heartbeat, new DAGs unpaused; the
// Celery executor's results in the metadata database. extra settings
// (NAME=value) are added. It migrates the metadata database
// and starts nothing.
func deploy(t *testing.T, in install, executor string, extra ...string) *deployment {
	t.Helper()
	home := t.TempDir()
	raw := enginetest.NewPGDatabase(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	d := &deployment{t: t, in: in, home: home, dags: filepath.Join(home, "dags")}
	if err := os.MkdirAll(d.dags, 0o755); err != nil {
		t.Fatal(err)
	}
	alchemy := "postgresql+psycopg2://" + u.User.String() + "@" + u.Host + u.Path
	d.env = []string{
		"AIRFLOW_HOME=" + home,
		"AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=" + alchemy,
		"AIRFLOW__CELERY__RESULT_BACKEND=db+" + alchemy,
		"AIRFLOW__CORE__EXECUTOR=" + executor,
		"AIRFLOW__CORE__DAGS_FOLDER=" + d.dags,
		"AIRFLOW__CORE__LOAD_EXAMPLES=False",
		"AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=False",
		"AIRFLOW__CORE__PARALLELISM=8",
		"AIRFLOW__LOGGING__BASE_LOG_FOLDER=" + filepath.Join(home, "logs"),
		"AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=" + strconv.Itoa(enginetest.FreePort(t)),
		"AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC=1",
	}
	secret := "etl-craft-airflow-test-" + strconv.Itoa(enginetest.FreePort(t))
	if in.major() == 2 {
		d.env = append(d.env,
			"AIRFLOW__WEBSERVER__SECRET_KEY="+secret,
			"AIRFLOW__SCHEDULER__DAG_DIR_LIST_INTERVAL=3",
			"AIRFLOW__SCHEDULER__MIN_FILE_PROCESS_INTERVAL=3",
			"AIRFLOW__SCHEDULER__JOB_HEARTBEAT_SEC=2",
			"AIRFLOW__SCHEDULER__SCHEDULER_ZOMBIE_TASK_THRESHOLD=30",
			"AIRFLOW__SCHEDULER__ZOMBIE_DETECTION_INTERVAL=2")
	} else {
		port := enginetest.FreePort(t)
		d.api = fmt.Sprintf("http://127.0.0.1:%d", port)
		d.env = append(d.env,
			"AIRFLOW__API__HOST=127.0.0.1",
			"AIRFLOW__API__PORT="+strconv.Itoa(port),
			"AIRFLOW__API__SECRET_KEY="+secret,
			"AIRFLOW__API_AUTH__JWT_SECRET="+secret,
			"AIRFLOW__CORE__EXECUTION_API_SERVER_URL="+d.api+"/execution/",
			"AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL=3",
			"AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL=3",
			"AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT=30",
			// A task's calls to the API server wait longer than the 5 seconds
			// of the default: the machine is shared with the other tests.
			"AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT=60",
			"AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL=2")
	}
	d.env = append(d.env, extra...)
	d.meta, err = sql.Open("pgx", raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.meta.Close() })
	t.Cleanup(d.stopAll)
	d.airflow(nil, "db", "migrate")
	return d
}

// command returns an Airflow command with the deployment's settings and
// env added to this process's environment.
func (d *deployment) command(env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(d.in.dir, "bin", "airflow"), args...)
	cmd.Dir = d.home
	cmd.Env = append(append(append(os.Environ(), "ETL_CRAFT_CONFIG=", "ETL_CRAFT_FAULT="), d.env...), env...)
	return cmd
}

// airflow runs an Airflow command to its end, failing the test unless it
// succeeds, and returns its output.
func (d *deployment) airflow(env []string, args ...string) string {
	d.t.Helper()
	out, err := d.try(env, args...)
	if err != nil {
		d.t.Fatalf("airflow %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// try runs an Airflow command to its end and returns its output (stdout and
// stderr) and error.
func (d *deployment) try(env []string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := d.command(env, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// start starts a long-running Airflow process in a process group of its
// own, with env added. It is stopped when the test ends, and killed when
// the test process dies.
func (d *deployment) start(name string, env []string, args ...string) *process {
	d.t.Helper()
	p := &process{name: name, log: filepath.Join(d.home, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		d.t.Fatal(err)
	}
	p.cmd = d.command(env, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// Killed with the test process, should it die first.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		d.t.Fatal(err)
	}
	go func() { p.cmd.Wait(); f.Close(); close(p.done) }()
	d.procs = append(d.procs, p)
	return p
}

// up starts Airflow's services with the etl-craft environment env: Airflow
// 3's API server (waiting until it answers), its scheduler and its DAG
// processor; Airflow 2's scheduler, which parses the DAGs itself.
func (d *deployment) up(env []string) {
	d.t.Helper()
	if d.in.major() >= 3 {
		d.start("api-server", env, "api-server", "--workers", "1")
		d.waitHealthy()
		d.start("dag-processor", env, "dag-processor")
	}
	d.start("scheduler", env, "scheduler")
}

// waitHealthy waits until Airflow 3's API server answers its health check.
func (d *deployment) waitHealthy() {
	d.t.Helper()
	d.wait("the API server to answer", func() bool {
		resp, err := http.Get(d.api + "/api/v2/monitor/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// wait polls cond until it holds, failing the test with the processes'
// logs after airflowWait.
func (d *deployment) wait(what string, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(airflowWait)
	for !cond() {
		for _, p := range d.procs {
			select {
			case <-p.done:
				if !p.killed() {
					d.t.Fatalf("waiting for %s: airflow %s ended (%v)\n%s", what, p.name, p.cmd.ProcessState, tail(p.log))
				}
			default:
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("gave up waiting for %s after %v\n%s", what, airflowWait, d.logs())
		}
		time.Sleep(time.Second)
	}
}

// killed reports whether the process was ended by a signal.
func (p *process) killed() bool {
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// logs returns the end of every process's log, for a failure message.
func (d *deployment) logs() string {
	var b strings.Builder
	for _, p := range d.procs {
		fmt.Fprintf(&b, "--- airflow %s (%s):\n%s\n", p.name, p.log, tail(p.log))
	}
	return b.String()
}

// stopAll ends every process and what it started: SIGTERM to each process
// tree, then SIGKILL to what is left after a grace period.
func (d *deployment) stopAll() {
	for _, p := range d.procs {
		p.signal(syscall.SIGTERM)
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, p := range d.procs {
		select {
		case <-p.done:
		case <-time.After(time.Until(deadline)):
		}
	}
	for _, p := range d.procs {
		p.signal(syscall.SIGKILL)
		<-p.done
	}
	d.procs = nil
}

// signal sends sig to the process's tree (signalTree) while the process
// runs; once it has ended and been reaped its pid may be another's.
func (p *process) signal(sig syscall.Signal) {
	select {
	case <-p.done:
	default:
		signalTree(p.cmd.Process.Pid, sig)
	}
}

// signalTree sends sig to the process, its process group and every
// process descending from it: Airflow starts task processes in sessions
// of their own, which a signal to the group would miss.
func signalTree(pid int, sig syscall.Signal) {
	tree := append([]int{pid}, descendants(pid)...)
	if sig == syscall.SIGKILL {
		// Stop them all first, so that none starts another meanwhile.
		for _, p := range tree {
			syscall.Kill(p, syscall.SIGSTOP)
		}
		tree = append(tree, descendants(pid)...)
	}
	syscall.Kill(-pid, sig)
	for _, p := range tree {
		syscall.Kill(p, sig)
	}
}

// descendants returns the processes descending from pid, read from /proc.
func descendants(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			parent[p], _ = strconv.Atoi(fields[1])
		}
	}
	var out []int
	frontier := []int{pid}
	for len(frontier) > 0 {
		var next []int
		for p, pp := range parent {
			if slices.Contains(frontier, pp) {
				next = append(next, p)
			}
		}
		out = append(out, next...)
		frontier = next
	}
	return out
}

// rows returns the rows of a query on Airflow's metadata database, each as
// its columns' text joined by spaces.
func (d *deployment) rows(query string, args ...any) []string {
	d.t.Helper()
	return e2e.QueryRows(d.t, d.meta, query, args...)
}

// waitDAGs waits until Airflow has parsed the DAGs, failing the test at
// the first import error.
func (d *deployment) waitDAGs(ids ...string) {
	d.t.Helper()
	slices.Sort(ids)
	d.wait(fmt.Sprintf("the DAGs %v", ids), func() bool {
		if errs := d.rows("SELECT filename || ': ' || stacktrace FROM import_error"); len(errs) > 0 {
			d.t.Fatalf("Airflow's import errors:\n%s", strings.Join(errs, "\n"))
		}
		return slices.Equal(d.rows("SELECT dag_id FROM dag ORDER BY dag_id"), ids)
	})
}

// dagRun is one DAG run in Airflow's database.
type dagRun struct {
	dag, id, state string
	// date is the day of its logical date, YYYY-MM-DD.
	date string
}

// runs returns Airflow's DAG runs.
func (d *deployment) runs() []dagRun {
	d.t.Helper()
	var out []dagRun
	logical := "logical_date"
	if d.in.major() == 2 {
		logical = "execution_date"
	}
	rs, err := d.meta.QueryContext(context.Background(),
		"SELECT dag_id, run_id, state, to_char("+logical+" AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM dag_run ORDER BY dag_id, run_id")
	if err != nil {
		d.t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var r dagRun
		if err := rs.Scan(&r.dag, &r.id, &r.state, &r.date); err != nil {
			d.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// runOn returns the DAG's run of the day (YYYY-MM-DD), zero when there is
// none.
func (d *deployment) runOn(dagID, day string) dagRun {
	d.t.Helper()
	for _, r := range d.runs() {
		if r.dag == dagID && r.date == day {
			return r
		}
	}
	return dagRun{}
}

// waitRunsEnded waits until Airflow has n DAG runs, every one of them
// ended (success or failed), and returns them.
func (d *deployment) waitRunsEnded(n int) []dagRun {
	d.t.Helper()
	var runs []dagRun
	d.wait(fmt.Sprintf("%d DAG runs to end", n), func() bool {
		runs = d.runs()
		return len(runs) == n && !slices.ContainsFunc(runs, func(r dagRun) bool { return r.state != "success" && r.state != "failed" })
	})
	return runs
}

// taskInstance is one task instance of a DAG run in Airflow's database.
type taskInstance struct {
	task, state string
	tries       int
}

// taskInstances returns the task instances of a DAG run by task id.
func (d *deployment) taskInstances(run dagRun) map[string]taskInstance {
	d.t.Helper()
	out := map[string]taskInstance{}
	rs, err := d.meta.QueryContext(context.Background(),
		"SELECT task_id, COALESCE(state, ''), try_number FROM task_instance WHERE dag_id = $1 AND run_id = $2", run.dag, run.id)
	if err != nil {
		d.t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var ti taskInstance
		if err := rs.Scan(&ti.task, &ti.state, &ti.tries); err != nil {
			d.t.Fatal(err)
		}
		out[ti.task] = ti
	}
	return out
}

// taskLog returns the log Airflow wrote of a try of a task under the log
// folder (the deployment's, or a Celery worker's), as its UI shows it:
// Airflow 3 writes one JSON object a line, shown as its event and the
// values of the exceptions it records; Airflow 2 writes text.
func taskLog(t *testing.T, folder string, run dagRun, task string, try int) string {
	t.Helper()
	path := filepath.Join(folder, "dag_id="+run.dag, "run_id="+run.id, "task_id="+task, fmt.Sprintf("attempt=%d.log", try))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the task log: %v", err)
	}
	var lines []string
	for _, line := range strings.Split(string(b), "\n") {
		var rec struct {
			Event  string `json:"event"`
			Errors []struct {
				Value string `json:"exc_value"`
			} `json:"error_detail"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Event == "" {
			lines = append(lines, line)
			continue
		}
		lines = append(lines, rec.Event)
		for _, e := range rec.Errors {
			lines = append(lines, e.Value)
		}
	}
	return strings.Join(lines, "\n")
}
