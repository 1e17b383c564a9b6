package inspect_test

import (
	"context"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/report"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func count(n int64) *int64 { return &n }

func TestStatusShowsEveryTaskAndWhatFailuresBlock(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := pipelinetest.New(t, db)
		pid := b.Pipeline("P", pipeline.Incremental)
		tasks := map[string]int64{}
		for _, c := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"} {
			tasks[c] = b.Task("P", c, pipeline.HandlerSQL, nil)
		}
		b.Dep("P", "b", "P", "a", pipeline.Success) // a failed: blocked
		b.Dep("P", "c", "P", "b", pipeline.Success) // b blocked: blocked too
		b.Dep("P", "d", "P", "a", pipeline.Always)  // runs after the failure
		b.Dep("P", "e", "P", "f", pipeline.Failure) // f succeeded: never runs, failures aside
		b.Dep("P", "g", "P", "a", pipeline.Failure) // runs because a failed
		b.Dep("P", "h", "P", "a", pipeline.Success) // ANY: f is enough
		b.Dep("P", "h", "P", "f", pipeline.Success)
		b.Dep("P", "i", "P", "f", pipeline.HasData) // f wrote rows
		b.Dep("P", "j", "P", "i", pipeline.Success) // i not run yet
		b.Condition("P", "h", pipeline.Any, 0)

		rec := inspecttest.New(t, db, alice)
		run := rec.Run(pid, inspecttest.Run{Key: "k1", Status: "IN-PROGRESS", RunDate: "2026-03-01", Start: t0})
		rec.TaskRun(run, tasks["a"], inspecttest.TaskRun{Status: "FAILED", Start: t0, End: t0.Add(30 * time.Second),
			Attempts: 2, ErrorMessage: "boom: the warehouse refused\nsecond line"})
		rec.TaskRun(run, tasks["f"], inspecttest.TaskRun{Status: "SUCCESS", Start: t0, End: t0.Add(10 * time.Second),
			RowsWritten: count(5)})
		rec.TaskRun(run, tasks["d"], inspecttest.TaskRun{Status: "IN-PROGRESS", Start: t0.Add(40 * time.Second)})
		rec.Pause(pid, "warehouse maintenance", t0)

		now := t0.Add(90 * time.Second)
		st, err := inspect.RunStatus(context.Background(), db, "P", inspect.RunSelector{}, nil, now)
		if err != nil {
			t.Fatal(err)
		}
		if st.Schema != report.SchemaStatus || st.Run.ID != run || *st.DurationSeconds != 90 || st.Chosen != inspect.ChoiceActive {
			t.Fatalf("header: %+v", st)
		}
		if st.Pipeline.Paused == nil ||
			st.Pipeline.Paused.Describe() != "paused by alice@test (HUMAN) since 2026-03-01 06:00:00+00:00: warehouse maintenance" {
			t.Fatalf("pause: %+v", st.Pipeline.Paused)
		}
		if want := []string{"b", "c"}; !reflect.DeepEqual(st.BlockedByFailures, want) {
			t.Fatalf("blocked by failures %v, want %v", st.BlockedByFailures, want)
		}
		byCode := map[string]report.TaskStatus{}
		for _, ts := range st.Tasks {
			byCode[ts.TaskCode] = ts
		}
		if len(st.Tasks) != 10 || st.Tasks[0].TaskCode != "a" {
			t.Fatalf("tasks %+v", st.Tasks)
		}
		a := byCode["a"]
		if *a.Status != "FAILED" || a.Attempts != 2 || *a.DurationSeconds != 30 || *a.Error != "boom: the warehouse refused" {
			t.Fatalf("a: %+v", a)
		}
		if f := byCode["f"]; *f.RowsWritten != 5 || *f.DurationSeconds != 10 {
			t.Fatalf("f: %+v", f)
		}
		if d := byCode["d"]; *d.DurationSeconds != 50 || d.Error != nil {
			t.Fatalf("d runs to now: %+v", d)
		}
		if c := byCode["c"]; c.Status != nil || c.Attempts != 0 || c.DurationSeconds != nil {
			t.Fatalf("c has no row: %+v", c)
		}

		// The failure retried and succeeded: nothing is blocked any more.
		b.Exec("UPDATE AUD_TASK_RUN_LOG SET STATUS = 'SUCCESS', ROWS_WRITTEN = 1 WHERE TASK_ID = $1", tasks["a"])
		st, err = inspect.RunStatus(context.Background(), db, "P", inspect.RunSelector{ID: run}, nil, now)
		if err != nil || len(st.BlockedByFailures) != 0 {
			t.Fatalf("after the retry: %v %v", st.BlockedByFailures, err)
		}
		_, err = inspect.RunStatus(context.Background(), db, "Q", inspect.RunSelector{}, nil, now)
		wantCode(t, err, exit.Metadata, `no active pipeline has the code "Q"`)
	})
}

func TestStepsListTasksUnderTheSelectedRun(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := salesGraph(t, db)
		rec := inspecttest.New(t, db, alice)
		run := rec.Run(b.PipelineID("SALES"), inspecttest.Run{Status: "FAILED", Start: t0, End: t0.Add(time.Minute)})
		tr := rec.TaskRun(run, b.TaskID("SALES", "extract"), inspecttest.TaskRun{Status: "SUCCESS"})
		ctx := context.Background()

		// No run is active: without a selector the most recent run is shown.
		latest, err := inspect.PipelineSteps(ctx, db, "SALES", inspect.RunSelector{})
		if err != nil || latest.PipelineRunID != run || latest.Chosen != inspect.ChoiceLatest {
			t.Fatalf("no selector: %+v %v", latest, err)
		}
		steps, err := inspect.PipelineSteps(ctx, db, "SALES", inspect.RunSelector{ID: run})
		if err != nil {
			t.Fatal(err)
		}
		if steps.Schema != report.SchemaSteps || steps.PipelineRunID != run || len(steps.Steps) != 3 ||
			steps.Chosen != inspect.ChoiceSelector {
			t.Fatalf("steps %+v", steps)
		}
		alert, extract, load := steps.Steps[0], steps.Steps[1], steps.Steps[2]
		if alert.TaskCode != "alert" || alert.Condition != "ANY" || alert.Status != nil || alert.TaskRunID != nil ||
			alert.Schema != report.SchemaStep {
			t.Fatalf("alert %+v", alert)
		}
		if *extract.Status != "SUCCESS" || *extract.TaskRunID != tr || extract.Parameters["SQL_ACTION"] != "CREATE_TABLE" ||
			extract.Handler != "SQL" || extract.TaskType != "ETL" {
			t.Fatalf("extract %+v", extract)
		}
		if load.Status != nil || load.RunCondition != "ALL" || load.RunConditionCount != nil {
			t.Fatalf("load %+v", load)
		}
	})
}
