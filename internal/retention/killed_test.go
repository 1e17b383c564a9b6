package retention_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/retention"
)

// purgeChildVariable carries the killed child's purge (purgeChild, as
// JSON).
const purgeChildVariable = "ETL_CRAFT_PURGE_KILL_CHILD"

// purgeChild is the purge the child makes, and on which Engine DB.
type purgeChild struct {
	Engine          engine.Kind
	Path, DSN       string
	Schema          string
	Now             time.Time
	Policy          retention.Policy
	Archive, LogDir string
	BatchRows       int
	Hold            time.Duration
}

func (c purgeChild) options() retention.Options {
	return retention.Options{Policy: c.Policy, Now: c.Now, ArchiveDir: c.Archive, LogDir: c.LogDir, BatchRows: c.BatchRows, Hold: c.Hold}
}

// A purge killed in a batch's transaction (kill -9: no cleanup) leaves
// every run whole, with all its rows or none; the archive holds at least
// every row deleted; and the next purge completes, leaving what the rules
// keep. It is killed in its third batch; or between two transactions of
// one batch (a batch whose transactions may each hold the write lock for
// only a moment, here one group of runs each), after which the next purge
// leaves what one transaction for the batch would have left.
func TestAKilledPurgeLeavesWholeRunsAndTheNextCompletes(t *testing.T) {
	t.Parallel()
	if spec := os.Getenv(purgeChildVariable); spec != "" {
		killedPurgeChild(t, spec)
		return
	}
	for _, k := range enginetest.Kinds {
		t.Run(string(k)+"/third batch", func(t *testing.T) {
			t.Parallel()
			killPurge(t, k, "retention.batch.3:kill", "", purgeChild{BatchRows: 15,
				Policy: retention.Policy{retention.Runs: 10 * retention.Day, retention.Logs: 5 * retention.Day,
					retention.Actions: 10 * retention.Day, retention.MetadataChanges: 10 * retention.Day}})
		})
		t.Run(string(k)+"/inside a batch", func(t *testing.T) {
			t.Parallel()
			// Only runs go, all in batch 1: its third transaction is killed.
			killPurge(t, k, "retention.batch.1.3:kill", "AUD_PIPELINES_RUN_LOG", purgeChild{BatchRows: 100_000, Hold: time.Nanosecond,
				Policy: retention.Policy{retention.Runs: 10 * retention.Day, retention.Logs: 5 * retention.Day}})
		})
	}
}

// killPurge makes a history of 40 days on a new Engine DB of kind k, runs
// c's purge in a child process that the fault point kills, and checks what it left: every run whole, rows gone (of table,
// when set), each archived; then that the next purge leaves what the rules
// keep.
func killPurge(t *testing.T, k engine.Kind, point, table string, c purgeChild) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	db := pipelinetest.DB(t, k)
	o := db.Options()
	c.Engine, c.Path, c.DSN, c.Schema = o.Kind, o.Path, o.DSN, o.Schema
	c.Now, c.Archive, c.LogDir = time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC), t.TempDir(), t.TempDir()
	h := newHistory(t, db, seed, c.LogDir)
	for range 40 {
		c.Now = c.Now.Add(retention.Day)
		h.day(c.Now)
	}
	before := read(t, db, c.LogDir)

	spec, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestAKilledPurgeLeavesWholeRunsAndTheNextCompletes$")
	cmd.Env = append(os.Environ(), purgeChildVariable+"="+string(spec), fault.Variable+"="+point)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != fault.KilledStatus {
		t.Fatalf("the child purge ended %v, want killed at %s:\n%s", err, point, out)
	}

	mid := read(t, db, c.LogDir)
	checkWhole(t, before, mid)
	deleted := minus(before.keys(), mid.keys())
	delete(deleted, "log files")
	if len(deleted) == 0 || table != "" && len(deleted[table]) == 0 {
		t.Fatalf("the transactions committed before the kill deleted %v, want rows of %q", deleted, table)
	}
	archived := archivedKeys(t, c.Archive)
	for table, keys := range deleted {
		if lost := minus(map[string][]string{table: keys}, archived); len(lost[table]) > 0 {
			t.Errorf("%s: deleted but not archived: %v", table, lost[table])
		}
	}

	if _, err := retention.Purge(acting(), db, c.options()); err != nil {
		t.Fatalf("the purge after the kill: %v", err)
	}
	checkKept(t, "after the kill and the next purge", before, read(t, db, c.LogDir), c.Policy.Cutoffs(c.Now), c.LogDir)
}

// checkWhole fails unless each run of before is in after with every row of
// its unit, or is gone with all of them.
func checkWhole(t *testing.T, before, after state) {
	t.Helper()
	was, is := before.units(), after.units()
	for run, rows := range was {
		_, kept := after.runs[run]
		switch {
		case kept && !slices.Equal(is[run], rows):
			t.Errorf("run %d is kept with rows %v, it had %v", run, is[run], rows)
		case !kept && len(is[run]) > 0:
			t.Errorf("run %d is gone, but rows of it are left: %v", run, is[run])
		}
	}
}

// units lists, per run, the keys of the rows that belong to it: its task
// runs, attempts, business-rule runs and results, gate decisions,
// consumption and gate waits.
func (s state) units() map[int64][]string {
	out := map[int64][]string{}
	add := func(run int64, table string, key any) {
		if run != 0 {
			out[run] = append(out[run], fmt.Sprintf("%s %v", table, key))
		}
	}
	for id := range s.runs {
		add(id, "run", id)
	}
	for id, tr := range s.taskRuns {
		add(tr.run, "task run", id)
	}
	for id, a := range s.attempts {
		add(s.taskRuns[a.taskRun].run, "attempt", id)
	}
	for id, tr := range s.ruleRuns {
		add(s.taskRuns[tr].run, "rule run", id)
	}
	for id, r := range s.results {
		add(s.taskRuns[s.ruleRuns[r.ruleRun]].run, "result", id)
	}
	for id, d := range s.decisions {
		add(d.run, "decision", id)
	}
	for id, c := range s.consumption {
		add(c.run, "consumption", id)
	}
	for k, run := range s.gateWaits {
		add(run, "gate wait", k)
	}
	for _, rows := range out {
		slices.Sort(rows)
	}
	return out
}

// killedPurgeChild purges as spec says, and the fault point kills it.
func killedPurgeChild(t *testing.T, spec string) {
	var c purgeChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		t.Fatal(err)
	}
	db, err := engine.Open(acting(), engine.Options{Kind: c.Engine, Path: c.Path, DSN: c.DSN, Schema: c.Schema})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := retention.Purge(acting(), db, c.options())
	t.Fatalf("the purge was not killed: %+v %v", res, err)
}
