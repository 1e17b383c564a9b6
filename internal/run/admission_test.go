package run

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// queueRun records a QUEUED run of the pipeline, as a tick does, and
// returns it.
func (f *fixture) queueRun(pipe string) QueuedRun {
	f.t.Helper()
	id := f.b.PipelineID(pipe)
	f.exec(`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_DATE, BACKFILL, RUN_KEY, TRIGGER_KIND)
		VALUES ($1, $2, '2026-01-01', 'N', $3, $4)`, id, RunQueued, "manual:"+newUUID(), TriggerManual)
	var run int64
	f.scalar(&run, "SELECT max(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1", id)
	return QueuedRun{RunID: run, PipelineID: id}
}

// runStates returns each run's status and whether it has an owner, as
// "IN-PROGRESS owner=false".
func (f *fixture) runStates(runs []QueuedRun) []string {
	f.t.Helper()
	out := make([]string, len(runs))
	for i, r := range runs {
		var status string
		var owned bool
		if err := f.db.QueryRowContext(f.ctx(), `SELECT STATUS, OWNER_ID IS NOT NULL
			FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1`, r.RunID).Scan(&status, &owned); err != nil {
			f.t.Fatal(err)
		}
		out[i] = fmt.Sprintf("%s owner=%t", status, owned)
	}
	return out
}

// AdmitRuns admits the QUEUED runs of ungated, unpaused pipelines together,
// IN-PROGRESS with no owner; a run of a pipeline
// that depends on another pipeline, of a paused pipeline, or of a pipeline
// whose other run is IN-PROGRESS (a stale admission, which sends the batch
// one run a transaction) stays QUEUED.
func TestAdmitRunsAdmitsTheUngatedRunsTogether(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		for _, p := range []string{"A", "B", "GATED", "PAUSED", "BUSY", "C"} {
			f.b.Pipeline(p, "FULL")
			f.task(p, "a", "succeed")
		}
		f.b.PipelineDep("GATED", "A", "SUCCESS")
		f.pause("PAUSED")
		busy := f.queueRun("BUSY")
		f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = $1 WHERE PIPELINE_RUN_ID = $2", RunInProgress, busy.RunID)
		var runs []QueuedRun
		for _, p := range []string{"A", "B", "GATED", "PAUSED", "BUSY", "C"} {
			runs = append(runs, f.queueRun(p))
		}
		admitted, err := AdmitRuns(f.ctx(), db, runs)
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{runs[0].RunID, runs[1].RunID, runs[5].RunID}; !slices.Equal(admitted, want) {
			t.Fatalf("admitted %v, want %v", admitted, want)
		}
		in, queued := "IN-PROGRESS owner=false", "QUEUED owner=false"
		if got, want := f.runStates(runs), []string{in, in, queued, queued, queued, in}; !slices.Equal(got, want) {
			t.Fatalf("runs after AdmitRuns:\n%q\nwant\n%q", got, want)
		}
		// A run admitted together is executed as any unowned run is.
		for _, r := range []int{0, 1, 5} {
			out, err := f.supervisor().RunPipeline(f.ctx(), Request{PipelineCode: []string{"A", "B", "", "", "", "C"}[r], RunID: runs[r].RunID})
			if err != nil || out.Status != RunSuccess {
				t.Fatalf("run %d: %v %v\n%s", runs[r].RunID, out, err, f.logs.String())
			}
		}
	})
}

// A transaction of AdmitRuns that fails before its commit (a crash between
// two of its runs) admits none of its runs: each stays QUEUED, as it would
// had the runs been admitted one by one and the crash come before the
// first; a later AdmitRuns admits them all once.
func TestAdmitRunsInterruptedLeavesEveryRunQueued(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		var runs []QueuedRun
		for i := range 5 {
			p := fmt.Sprintf("P%d", i)
			f.b.Pipeline(p, "FULL")
			f.task(p, "a", "succeed")
			runs = append(runs, f.queueRun(p))
		}
		t.Setenv(fault.Variable, "admission.mid_batch")
		admitted, err := AdmitRuns(f.ctx(), db, runs)
		if exit.CodeOf(err) != exit.InjectedFault || len(admitted) != 0 {
			t.Fatalf("AdmitRuns interrupted: %v %v", admitted, err)
		}
		queued := "QUEUED owner=false"
		if got := f.runStates(runs); slices.ContainsFunc(got, func(s string) bool { return s != queued }) {
			t.Fatalf("runs after an interrupted AdmitRuns: %q", got)
		}
		t.Setenv(fault.Variable, "")
		if admitted, err = AdmitRuns(f.ctx(), db, runs); err != nil || len(admitted) != len(runs) {
			t.Fatalf("AdmitRuns again: %v %v", admitted, err)
		}
	})
}

// Two servers admitting the same QUEUED runs at once admit each exactly
// once between them, and neither fails.
func TestAdmitRunsTwoAtOnce(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db)
		var runs []QueuedRun
		for i := range 30 {
			p := fmt.Sprintf("P%02d", i)
			f.b.Pipeline(p, "FULL")
			runs = append(runs, f.queueRun(p))
		}
		var wg sync.WaitGroup
		got := make([][]int64, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Go(func() { got[i], errs[i] = AdmitRuns(f.ctx(), db, runs) })
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		all := slices.Sorted(slices.Values(append(slices.Clone(got[0]), got[1]...)))
		want := make([]int64, len(runs))
		for i, r := range runs {
			want[i] = r.RunID
		}
		if !slices.Equal(all, want) {
			t.Fatalf("admitted %v and %v, want each of %v once", got[0], got[1], want)
		}
		if n := f.count("SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = $1 AND OWNER_ID IS NULL", RunInProgress); n != len(runs) {
			t.Fatalf("%d runs IN-PROGRESS, want %d", n, len(runs))
		}
	})
}
