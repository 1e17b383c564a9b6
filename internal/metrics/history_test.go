package metrics

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/run"
)

// outcomeHandler succeeds, or fails when the task has the parameter FAIL:
// the tasks of these tests need no warehouse, so it stands in for PYTHON.
type outcomeHandler struct{}

func (outcomeHandler) Run(_ context.Context, t *handler.Task) (handler.Result, error) {
	if t.Params["FAIL"] != "" {
		return handler.Result{}, errors.New("the task was written to fail")
	}
	return handler.Result{RowsWritten: handler.Int(1)}, nil
}

func (outcomeHandler) Check(*handler.Task) ([]string, []string) { return nil, nil }

// value is the value of the metric with the labels in a gathering of reg,
// 0 when it has none such.
func value(t testing.TB, m *Metrics, name string, labels ...string) float64 {
	t.Helper()
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if hasLabels(s, labels) {
				switch {
				case s.Counter != nil:
					return s.Counter.GetValue()
				case s.Gauge != nil:
					return s.Gauge.GetValue()
				case s.Histogram != nil:
					return float64(s.Histogram.GetSampleCount())
				}
			}
		}
	}
	return 0
}

// hasLabels reports whether a metric has the labels, given as name, value
// pairs.
func hasLabels(s *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range s.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// The counts read from the Engine DB agree with it after a first read of
// what it held and after each later read of what changed: runs started and
// ended by status, attempts ended and retried, SLA breaches. A run an
// operator reopens and that ends again counts as ended again; a server
// started later counts the runs as stored.
func TestHistoryAgreesWithTheEngineDB(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		t.Parallel()
		ctx := actor.With(context.Background(), actor.Actor{Name: "metrics@test", Kind: actor.Human})
		b := pipelinetest.New(t, db)
		b.Pipeline("OK", pipeline.Full)
		b.Task("OK", "load", pipeline.HandlerPython, nil)
		b.Pipeline("BAD", pipeline.Full)
		b.Task("BAD", "load", pipeline.HandlerPython, map[string]string{"FAIL": "yes", "RETRIES": "1", "RETRY_DELAY_SECONDS": "0"})
		b.Pipeline("LATE", pipeline.Full)
		b.Exec("UPDATE CFG_PIPELINES SET SLA_IN_HOURS = 0.0000001 WHERE PIPELINE_CODE = 'LATE'")
		b.Task("LATE", "load", pipeline.HandlerPython, nil)
		sup := run.New(run.Options{DB: db, Handlers: handler.Registry{pipeline.HandlerPython: outcomeHandler{}}, LogDir: t.TempDir()})
		runPipeline := func(code string) {
			t.Helper()
			if _, err := sup.RunPipeline(ctx, run.Request{PipelineCode: code}); err != nil {
				t.Fatal(err)
			}
		}

		m := New(Options{})
		m.Watch(db, nil)
		if n := value(t, m, "etl_craft_runs_started_total"); n != 0 {
			t.Fatalf("%v runs started in an empty Engine DB", n)
		}
		runPipeline("OK")
		agree(t, db, m) // read after the first read
		runPipeline("OK")
		runPipeline("BAD")
		runPipeline("LATE")
		agree(t, db, m)
		if n := value(t, m, "etl_craft_attempts_retried_total", "pipeline", "BAD"); n != 1 {
			t.Errorf("BAD: %v attempts retried, want 1", n)
		}
		if n := value(t, m, "etl_craft_sla_breaches_total", "pipeline", "LATE"); n != 1 {
			t.Errorf("LATE: %v SLA breaches, want 1", n)
		}
		if n := value(t, m, "etl_craft_run_duration_seconds", "status", "SUCCESS"); n != 3 {
			t.Errorf("%v successful runs timed, want 3", n)
		}

		// An operator reruns the task of OK's first run: the run is
		// reopened and ends again.
		if _, err := sup.Rerun(ctx, run.Request{PipelineCode: "OK", TaskCode: "load", RunID: 1, Reason: "again"}, false); err != nil {
			t.Fatal(err)
		}
		agree(t, db, m)
		if n := value(t, m, "etl_craft_runs_ended_total", "pipeline", "OK", "status", "SUCCESS"); n != 3 {
			t.Errorf("OK: %v runs ended SUCCESS after the reopened run ended again, want 3 (two runs, one of them twice)", n)
		}

		// A server started now counts what is stored.
		later := New(Options{})
		later.Watch(db, nil)
		if n := value(t, later, "etl_craft_runs_ended_total", "pipeline", "OK", "status", "SUCCESS"); n != 2 {
			t.Errorf("OK: a new reader counts %v runs ended SUCCESS, want 2", n)
		}
		if n := value(t, later, "etl_craft_sla_breaches_total", "pipeline", "LATE"); n != 1 {
			t.Errorf("LATE: a new reader counts %v SLA breaches, want 1", n)
		}
	})
}

// agree fails the test unless the runs and attempts counted agree with the
// Engine DB's rows, reopened runs aside: runs started by pipeline, runs
// ended and attempts ended by pipeline and status.
func agree(t *testing.T, db *engine.DB, m *Metrics) {
	t.Helper()
	started := map[string]float64{}
	for _, c := range counted(t, db, `SELECT p.PIPELINE_CODE, r.STATUS, COUNT(*) FROM AUD_PIPELINES_RUN_LOG r
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID GROUP BY p.PIPELINE_CODE, r.STATUS`) {
		code, status, n := c.code, c.status, c.n
		started[code] += n
		reopened := float64(len(enginetest.Rows(t, db, `SELECT 1 FROM AUD_RUN_INTERVENTIONS i JOIN CFG_PIPELINES p ON p.PIPELINE_ID = i.PIPELINE_ID
			WHERE p.PIPELINE_CODE = $1 AND i.ACTION = 'REOPEN'`, code)))
		if got := value(t, m, "etl_craft_runs_ended_total", "pipeline", code, "status", status); got != n+reopened {
			t.Errorf("%s: %v runs ended %s, the Engine DB has %v (and %v reopened)", code, got, status, n, reopened)
		}
	}
	for code, n := range started {
		if got := value(t, m, "etl_craft_runs_started_total", "pipeline", code); got != n {
			t.Errorf("%s: %v runs started, the Engine DB has %v", code, got, n)
		}
	}
	for _, c := range counted(t, db, `SELECT p.PIPELINE_CODE, a.STATUS, COUNT(*) FROM AUD_TASK_ATTEMPTS a
		JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
		JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID GROUP BY p.PIPELINE_CODE, a.STATUS`) {
		code, status, n := c.code, c.status, c.n
		if got := value(t, m, "etl_craft_attempts_ended_total", "pipeline", code, "handler", pipeline.HandlerPython, "status", status); got != n {
			t.Errorf("%s: %v attempts ended %s, the Engine DB has %v", code, got, status, n)
		}
	}
}

// count is a row of a query counting by pipeline and status.
type count struct {
	code, status string
	n            float64
}

// counted reads the rows of a query counting by pipeline and status.
func counted(t *testing.T, db *engine.DB, query string) []count {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []count
	for rows.Next() {
		var c count
		if err := rows.Scan(&c.code, &c.status, &c.n); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// A run that commits after one with a higher id (PostgreSQL hands ids out
// at insert) is counted once it commits, once.
func TestHistoryCountsARunCommittedLate(t *testing.T) {
	t.Parallel()
	enginetest.AdminURL(t)
	db := pipelinetest.DB(t, engine.Postgres)
	b := pipelinetest.New(t, db)
	pid := b.Pipeline("P", pipeline.Full)
	m := New(Options{})
	m.Watch(db, nil)
	value(t, m, "etl_craft_runs_started_total")

	ctx := actor.With(context.Background(), actor.Actor{Name: "metrics@test", Kind: actor.Human})
	insert := `INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, END_DATE, RUN_KEY) VALUES ($1, 'SUCCESS', $2, $3)`
	late := make(chan error)
	inserted := make(chan struct{})
	commit := make(chan struct{})
	go func() {
		late <- db.Tx(ctx, func(tx *engine.Tx) error {
			_, err := tx.ExecContext(ctx, insert, pid, time.Now().UTC(), "late")
			close(inserted)
			<-commit
			return err
		})
	}()
	<-inserted
	b.Exec(insert, pid, time.Now().UTC(), "early")
	if n := value(t, m, "etl_craft_runs_ended_total", "pipeline", "P"); n != 1 {
		t.Fatalf("%v runs ended before the late one commits, want 1", n)
	}
	close(commit)
	if err := <-late; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if n := value(t, m, "etl_craft_runs_ended_total", "pipeline", "P"); n != 2 {
			t.Fatalf("%v runs ended once the late one committed, want 2", n)
		}
	}
}

// queries counts the queries sent to an Engine DB (engine.Observer).
type queries struct{ n atomic.Int64 }

func (q *queries) Observe(op engine.Operation, _ time.Duration, _ error) {
	if op == engine.OpQuery {
		q.n.Add(1)
	}
}

// A read of the Engine DB is one query, whether anything changed or not;
// the first also reads the labels (two queries). The gauges of the queue
// and of the gates it sets agree with the rows: runs QUEUED and
// IN-PROGRESS, and the gate waits waiting of those runs only.
func TestReadsAreOneQuery(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		t.Parallel()
		b := pipelinetest.New(t, db)
		ids := map[string]int64{}
		for _, code := range []string{"A", "B", "C"} {
			ids[code] = b.Pipeline(code, pipeline.Full)
		}
		now := db.TimeArg(time.Now())
		runs := 0
		// record records a run of the pipeline, with a gate wait waiting
		// when gated, and returns its id.
		record := func(code string, status records.RunStatus, gated bool) int64 {
			t.Helper()
			runs++
			key := fmt.Sprintf("test:%d", runs)
			b.Exec("INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY) VALUES ($1, $2, $3)", ids[code], status, key)
			var id int64
			if err := db.QueryRowContext(context.Background(), "SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG WHERE RUN_KEY = $1",
				key).Scan(&id); err != nil {
				t.Fatal(err)
			}
			if gated {
				b.Exec(`INSERT INTO AUD_GATE_WAITS (PIPELINE_RUN_ID, FIRST_CHECK_AT, NEXT_CHECK_AT, LOOKS, WAIT_UNTIL)
					VALUES ($1, $2, $2, 0, $2)`, id, now)
			}
			return id
		}
		end := func(id int64, status records.RunStatus) {
			t.Helper()
			b.Exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = $2, END_DATE = $3 WHERE PIPELINE_RUN_ID = $1", id, status, now)
		}
		queued := record("A", records.RunQueued, false)
		running := record("B", records.RunInProgress, true)
		end(record("C", records.RunInProgress, true), records.RunSuccess) // ended: its wait is not counted

		opts := db.Options()
		var q queries
		opts.Observer = &q
		m := New(Options{})
		m.Watch(enginetest.OpenWith(t, opts), nil)
		gauges := func(when string, wantQueued, wantRunning, wantWaits float64) {
			t.Helper()
			for name, want := range map[string]float64{"etl_craft_runs_queued": wantQueued,
				"etl_craft_runs_in_progress": wantRunning, "etl_craft_gate_waits_open": wantWaits} {
				if got := value(t, m, name); got != want {
					t.Errorf("%s: %s = %v, want %v", when, name, got, want)
				}
			}
		}
		gauges("first read", 1, 1, 1)
		if n := q.n.Load(); n != 5 {
			t.Errorf("a first read and two later ones sent %d queries, want 5 (1 + 2 for the labels, 1, 1)", n)
		}

		end(running, records.RunFailed)
		b.Exec("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = $2 WHERE PIPELINE_RUN_ID = $1", queued, records.RunInProgress)
		record("C", records.RunQueued, true)
		q.n.Store(0)
		gauges("after changes", 1, 1, 1)
		if n := q.n.Load(); n != 3 {
			t.Errorf("three later reads sent %d queries, want 3", n)
		}
		if n := value(t, m, "etl_craft_runs_ended_total", "pipeline", "B", "status", string(records.RunFailed)); n != 1 {
			t.Errorf("B: %v runs ended FAILED, want 1", n)
		}
		end(queued, records.RunSuccess)
		gauges("after the queued run ended", 1, 0, 1)
	})
}
