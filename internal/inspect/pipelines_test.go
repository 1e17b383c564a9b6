package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/report"
)

// schedulePipelines adds one pipeline per kind of schedule setting.
func schedulePipelines(b *pipelinetest.Builder) {
	set := func(code, columns string, args ...any) {
		b.Pipeline(code, pipeline.Full)
		b.Exec("UPDATE CFG_PIPELINES SET "+columns+" WHERE PIPELINE_CODE = '"+code+"'", args...)
	}
	set("BERLIN", "RUN_SCHEDULE = $1, SCHEDULE_TIMEZONE = $2", "30 6 * * MON-FRI", "Europe/Berlin")
	set("FALLBACK", "RUN_SCHEDULE = $1", "0 6 * * *")
	set("LATER", "RUN_SCHEDULE = $1, SCHEDULE_START_DATE = $2", "0 6 * * *", "2026-04-01")
	b.Pipeline("MANUAL", pipeline.Full)
	set("PAUSED", "RUN_SCHEDULE = $1", "@hourly")
	set("BAD_CRON", "RUN_SCHEDULE = $1", "61 * * * *")
	set("BAD_ZONE", "RUN_SCHEDULE = $1, SCHEDULE_TIMEZONE = $2", "@daily", "Mars/Olympus")
}

func TestListAndStatusShowTheNextTick(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		b := pipelinetest.New(t, db)
		schedulePipelines(b)
		rec := inspecttest.New(t, db, alice)
		rec.Pause(b.PipelineID("PAUSED"), "warehouse maintenance", t0)

		// Friday 6 March 2026, 07:00 in Berlin (CET) and 01:00 in New York (EST).
		now := time.Date(2026, 3, 6, 6, 0, 0, 0, time.UTC)
		newYork, err := time.LoadLocation("America/New_York")
		if err != nil {
			t.Fatal(err)
		}
		list, err := inspect.ListPipelines(context.Background(), db, newYork, now)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"BERLIN":   "2026-03-09 05:30:00+00:00", // Monday 06:30 CET
			"FALLBACK": "2026-03-06 11:00:00+00:00", // 06:00 EST, in Orchestration.Timezone
			"LATER":    "2026-04-01 10:00:00+00:00", // 06:00 EDT on the start date
			"MANUAL":   "none",
			"PAUSED":   "none while paused",
			"BAD_CRON": "invalid: RUN_SCHEDULE '61 * * * *': '61' is not a valid minute (0-59): end of range (61) above maximum (59)",
			"BAD_ZONE": "invalid: SCHEDULE_TIMEZONE 'Mars/Olympus' is not an IANA time zone name, such as Europe/Berlin or UTC",
		}
		if len(list.Pipelines) != len(want) {
			t.Fatalf("pipelines %+v", list.Pipelines)
		}
		for _, p := range list.Pipelines {
			if got := p.DescribeNextTick(); got != want[p.PipelineCode] {
				t.Errorf("%s: next tick %q, want %q", p.PipelineCode, got, want[p.PipelineCode])
			}
			if (p.NextTick != nil) != (p.PipelineCode == "BERLIN" || p.PipelineCode == "FALLBACK" || p.PipelineCode == "LATER") ||
				(p.ScheduleError != nil) != (p.PipelineCode == "BAD_CRON" || p.PipelineCode == "BAD_ZONE") {
				t.Errorf("%s: next_tick %v, schedule_error %v", p.PipelineCode, p.NextTick, p.ScheduleError)
			}
		}

		// Without a fallback zone, schedules without SCHEDULE_TIMEZONE are in UTC;
		// a tick at now is not the next one.
		list, err = inspect.ListPipelines(context.Background(), db, nil, now)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range list.Pipelines {
			if p.PipelineCode == "FALLBACK" && p.DescribeNextTick() != "2026-03-07 06:00:00+00:00" {
				t.Errorf("FALLBACK in UTC: %q", p.DescribeNextTick())
			}
		}

		rec.Run(b.PipelineID("BERLIN"), inspecttest.Run{Key: "k1", Status: "SUCCESS", RunDate: "2026-03-06", Start: t0, End: t0})
		st, err := inspect.RunStatus(context.Background(), db, "BERLIN", inspect.RunSelector{}, newYork, now)
		if err != nil {
			t.Fatal(err)
		}
		if st.Pipeline.NextTick == nil || !st.Pipeline.NextTick.Equal(time.Date(2026, 3, 9, 5, 30, 0, 0, time.UTC)) {
			t.Fatalf("status next tick %v", st.Pipeline.NextTick)
		}
	})
}

func TestValidateReportsInvalidSchedules(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		schedulePipelines(pipelinetest.New(t, db))
		v, err := inspect.Validate(context.Background(), db, inspect.ValidateRequest{Handlers: handler.Registry{}})
		if err != nil {
			t.Fatal(err)
		}
		const fix = "; etl-craft server gives the pipeline no scheduled runs until it is fixed"
		want := []report.Finding{
			{Status: inspect.Fail, Where: "BAD_CRON", Message: "RUN_SCHEDULE '61 * * * *': '61' is not a valid minute (0-59): end of range (61) above maximum (59)" + fix},
			{Status: inspect.Fail, Where: "BAD_ZONE", Message: "SCHEDULE_TIMEZONE 'Mars/Olympus' is not an IANA time zone name, such as Europe/Berlin or UTC" + fix},
		}
		if len(v.Findings) != len(want) || v.Failed != 2 || v.Pipelines != 7 {
			t.Fatalf("validation %+v", v)
		}
		for i, f := range v.Findings {
			if f != want[i] {
				t.Errorf("finding %d: %+v, want %+v", i, f, want[i])
			}
		}
	})
}
