package gate_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/gate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// setStatus changes a run's status, as the run engine's transitions would.
func (f *fixture) setStatus(runID int64, status string) {
	f.exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = $2 WHERE PIPELINE_RUN_ID = $1", runID, status)
}

// revision reads a run's revision and repair flag.
func (f *fixture) revision(runID int64) (int, bool) {
	f.t.Helper()
	rev, pending, err := gate.Revision(f.ctx, f.db, runID)
	if err != nil {
		f.t.Fatal(err)
	}
	return rev, pending
}

// reopen puts an ended run back IN-PROGRESS with its repair pending.
func (f *fixture) reopen(runID int64) {
	f.setStatus(runID, "IN-PROGRESS")
	f.tx(func(tx *engine.Tx) error { return gate.BeginRepair(f.ctx, tx, runID) })
}

// publishRepair publishes a run's repair and reports whether it did.
func (f *fixture) publishRepair(runID int64) bool {
	f.t.Helper()
	return inTx(f, func(tx *engine.Tx) (bool, error) { return gate.PublishRepair(f.ctx, tx, runID) })
}

// G14: a repair publishes one new revision, and only when it succeeds.
func TestRepairPublishesOneRevision(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		f := newFixture(t, db, pipeline.Success)
		run, _ := f.upRun("SUCCESS", t0, nil)
		if rev, pending := f.revision(run); rev != 1 || pending {
			t.Fatalf("new run: revision %d pending %v", rev, pending)
		}
		if f.publishRepair(run) {
			t.Fatal("published a run with no repair pending")
		}
		f.reopen(run)
		if f.publishRepair(run) {
			t.Fatal("published a repair still IN-PROGRESS")
		}
		f.setStatus(run, "FAILED")
		if f.publishRepair(run) {
			t.Fatal("published a failed repair")
		}
		if rev, pending := f.revision(run); rev != 1 || !pending {
			t.Fatalf("after a failed repair: revision %d pending %v", rev, pending)
		}
		err := f.db.Tx(f.ctx, func(tx *engine.Tx) error { return gate.BeginRepair(f.ctx, tx, run) })
		if !exit.Is(err, exit.StaleTransition) {
			t.Fatalf("repair of an ended run: %v", err)
		}
		f.reopen(run)
		f.setStatus(run, "SUCCESS")
		if !f.publishRepair(run) || f.publishRepair(run) {
			t.Fatal("want exactly one publication")
		}
		if rev, pending := f.revision(run); rev != 2 || pending {
			t.Fatalf("after the repair: revision %d pending %v", rev, pending)
		}
		if _, _, err := gate.Revision(f.ctx, f.db, run+100); !exit.Is(err, exit.RunState) {
			t.Fatalf("unknown run: %v", err)
		}
	})
}

// G13: a repaired upstream is new output only for dependencies that
// consume repairs, through pipeline and task edges alike.
func TestRepairedUpstreamIsNewOnlyWhenConsumingRepairs(t *testing.T) {
	t.Parallel()
	for _, repairs := range []string{"Y", "N"} {
		t.Run("CONSUME_REPAIRS="+repairs, func(t *testing.T) {
			pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
				f := newFixture(t, db, pipeline.Success)
				f.exec("UPDATE CFG_PIPELINE_DEPENDENCY SET CONSUME_REPAIRS = $1", repairs)
				f.exec("UPDATE CFG_TASK_DEPENDENCY SET CONSUME_REPAIRS = $1", repairs)
				up, _ := f.upRun("SUCCESS", t0, rows(5))

				// Two downstream runs: one before the repair, one after.
				for i, now := range []time.Time{t0.Add(time.Hour), t0.Add(3 * time.Hour)} {
					if i == 1 {
						f.reopen(up)
						f.setStatus(up, "SUCCESS")
						f.publishRepair(up)
					}
					run := f.downRun()
					attempt := f.attempt(run, "SUCCESS")
					p := f.admit(f.pipelineGate(run, gate.Enforce, time.Hour), now, 0)
					k := f.admit(f.taskGate(run, gate.Enforce, time.Hour), now, attempt)
					if p.Pass != k.Pass {
						t.Fatalf("run %d: pipeline gate %+v, task gate %+v", i+1, p, k)
					}
					if !p.Pass {
						for _, o := range []gate.Outcome{p, k} {
							if !strings.Contains(o.Reason(), "CONSUME_REPAIRS='N'") {
								t.Fatalf("reason %q does not mention CONSUME_REPAIRS", o.Reason())
							}
						}
						continue
					}
					f.succeedDown(run)
					f.consumeRun(run)
					f.consumeAttempt(attempt)
				}

				wantRevisions, wantResults := []int{1, 2}, []string{"SATISFIED", "SATISFIED"}
				if repairs == "N" {
					wantRevisions, wantResults = []int{1}, []string{"SATISFIED", "UNSATISFIED"}
				}
				for _, dep := range []string{"PIPELINE_DEPENDENCY_ID", "TASK_DEPENDENCY_ID"} {
					revisions := column[int](f, "SELECT CONSUMED_REVISION FROM AUD_DEPENDENCY_CONSUMPTION WHERE "+dep+
						" IS NOT NULL ORDER BY CONSUMPTION_ID")
					results := column[string](f, "SELECT RESULT FROM AUD_GATE_DECISIONS WHERE "+dep+" IS NOT NULL ORDER BY DECISION_ID")
					if !reflect.DeepEqual(revisions, wantRevisions) || !reflect.DeepEqual(results, wantResults) {
						t.Fatalf("%s: consumed revisions %v, decisions %v; want %v, %v",
							dep, revisions, results, wantRevisions, wantResults)
					}
				}
			})
		})
	}
}

// column reads the first column of a query's rows.
func column[T any](f *fixture, query string) []T {
	f.t.Helper()
	rows, err := f.db.QueryContext(f.ctx, query)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			f.t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	return out
}
