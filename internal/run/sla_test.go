package run

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// breaches collects the breaches a supervisor reports.
type breaches struct {
	mu  sync.Mutex
	got []Breach
}

func (b *breaches) report(_ context.Context, x Breach) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, x)
	return nil
}

// slaFixture is a fixture whose pipeline P has one task of the behaviour,
// an SLA of hours, and a supervisor that reports its breaches.
func slaFixture(t *testing.T, db *engine.DB, behave, hours string) (*fixture, *breaches) {
	f := newFixture(t, db)
	seen := &breaches{}
	f.opts.OnBreach = seen.report
	f.b.Pipeline("P", "FULL")
	f.task("P", "slow", behave)
	f.b.Exec("UPDATE CFG_PIPELINES SET SLA_IN_HOURS = " + hours + " WHERE PIPELINE_CODE = 'P'")
	return f, seen
}

func (b *breaches) list() []Breach {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Breach(nil), b.got...)
}

// A live run that passes its SLA is BREACHED while it still runs, with a
// warning, and reported once; its end keeps BREACHED and reports nothing
// more. A run within its SLA ends MET and reports nothing. A run whose
// SLA was decided is never measured again after a reopen.
func TestSLABreachedWhileRunning(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f, seen := slaFixture(t, db, "block", "0.0003") // about a second
		done := make(chan Outcome, 1)
		go func() { done <- f.runPipeline("P") }()
		f.h.waitStarted(t, "slow")
		deadline := time.Now().Add(20 * time.Second)
		var sla, status string
		for sla != SLABreached {
			if time.Now().After(deadline) {
				t.Fatalf("the run never became BREACHED while running; log:\n%s", f.logs.String())
			}
			time.Sleep(50 * time.Millisecond)
			f.scalar(&status, "SELECT STATUS || ' ' || COALESCE(SLA_STATUS, '-') FROM AUD_PIPELINES_RUN_LOG")
			status, sla, _ = strings.Cut(status, " ")
		}
		if status != RunInProgress {
			t.Fatalf("BREACHED only once the run was %s", status)
		}
		close(f.h.gate("slow"))
		out := <-done
		f.scalar(&sla, "SELECT SLA_STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		got := seen.list()
		if out.Status != RunSuccess || sla != SLABreached || len(got) != 1 || !got[0].Live || got[0].RunID != out.RunID ||
			got[0].Pipeline.Code != "P" || got[0].At.Sub(got[0].Start) < time.Second {
			t.Fatalf("run %q SLA %s, breaches %+v", out.String(), sla, got)
		}
		if !strings.Contains(f.logs.String(), `level=WARN msg="the run passed its SLA" pipeline=P pipeline_run_id=`) {
			t.Fatalf("no warning:\n%s", f.logs.String())
		}
		// The result line says so too, as the reference's does.
		if want := fmt.Sprintf("P: pipeline_run_id=%d SUCCESS — SLA of 0.0003 h BREACHED", out.RunID); out.String() != want || out.SLA != SLABreached {
			t.Fatalf("the result line %q (SLA %q), want %q", out.String(), out.SLA, want)
		}

		// Within its SLA a run ends MET, reporting nothing; reopened for a
		// rerun long past the SLA, it keeps MET: it is never measured again.
		f.b.Exec("UPDATE CFG_PIPELINES SET SLA_IN_HOURS = 10 WHERE PIPELINE_CODE = 'P'")
		f.setBehaviour("P", "slow", "succeed")
		met := f.runPipeline("P")
		f.scalar(&sla, "SELECT SLA_STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", met.RunID)
		if met.RunID == out.RunID || sla != SLAMet || len(seen.list()) != 1 || met.SLA != SLAMet || strings.Contains(met.String(), "SLA") {
			t.Fatalf("run %q SLA %s, breaches %+v", met.String(), sla, seen.list())
		}
		f.b.Exec("UPDATE CFG_PIPELINES SET SLA_IN_HOURS = 0.0000000001 WHERE PIPELINE_CODE = 'P'")
		if again, err := f.supervisor().Rerun(f.ctx(), Request{PipelineCode: "P", RunID: met.RunID, TaskCode: "slow", Reason: "again"}, false); err != nil || again.Status != TaskSuccess {
			t.Fatalf("the rerun: %q %v", again.String(), err)
		}
		f.scalar(&status, "SELECT STATUS || ' ' || SLA_STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", met.RunID)
		if status != RunSuccess+" "+SLAMet || len(seen.list()) != 1 {
			t.Fatalf("after the reopen: %s, breaches %+v", status, seen.list())
		}
	})
}

// A run that ends past its SLA is decided BREACHED at its end and reported
// once, as ended.
func TestSLABreachedAtTheEnd(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f, seen := slaFixture(t, db, "succeed", "0.0000000001")
		out := f.runPipeline("P")
		var sla string
		f.scalar(&sla, "SELECT SLA_STATUS FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1", out.RunID)
		if got := seen.list(); sla != SLABreached || len(got) != 1 || got[0].Live || got[0].RunID != out.RunID {
			t.Fatalf("SLA %s, breaches %+v", sla, got)
		}
		doc := out.Document(exit.Flag)
		if !strings.HasSuffix(out.String(), "SUCCESS — SLA of 1e-10 h BREACHED") || doc.SLAStatus != SLABreached ||
			!strings.HasSuffix(doc.Detail, "SLA of 1e-10 h BREACHED") {
			t.Fatalf("the result line %q, its document %+v", out.String(), doc)
		}
	})
}
