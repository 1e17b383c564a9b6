package config

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestRetention(t *testing.T) {
	cfg := mustLoad(t, minimal)
	if !reflect.DeepEqual(cfg.Retention, DefaultRetention()) || cfg.Retention.RunsDays != 400 || cfg.Retention.LogsDays != 90 ||
		cfg.Retention.InterventionsDays != 0 || cfg.Retention.DailyAt != nil {
		t.Errorf("without the section: %+v", cfg.Retention)
	}
	cfg = mustLoad(t, minimal+`Retention:
  Runs_days: 30
  Interventions_days: 1000
  Daily_at: '03:30'
  dev:
    Logs_days: 0
    Archive_to: archive/engine
  prod:
    Logs_days: many
`)
	at := 3*time.Hour + 30*time.Minute
	want := Retention{Profile: "dev", RunsDays: 30, LogsDays: 0, ActionsDays: 400, MetadataChangesDays: 400, InterventionsDays: 1000,
		DailyAt: &at, ArchiveTo: filepath.Join(cfg.ProjectDir, "archive", "engine")}
	if !reflect.DeepEqual(cfg.Retention, want) {
		t.Errorf("Retention\n got %+v\nwant %+v", cfg.Retention, want)
	}
	if got := ClockText(at); got != "03:30" {
		t.Errorf("ClockText = %q", got)
	}
	errs := []errorCase{
		{"negative days", "  Runs_days: -1\n", ":11: Retention.Runs_days: must be a whole number"},
		{"days not a number", "  Logs_days: ninety\n", "Retention.Logs_days: must be a whole number"},
		{"bad time of day", "  Daily_at: '25:00'\n", ":11: Retention.Daily_at: must be a time of day written HH:MM or HH:MM:SS on a 24-hour clock, such as 03:30; got '25:00'"},
		{"unknown key", "  Runs_day: 3\n", "Retention: unknown key 'Runs_day' (did you mean Runs_days?)"},
	}
	checkErrors(t, func(body string) string { return minimal + "Retention:\n" + body }, errs)
}
