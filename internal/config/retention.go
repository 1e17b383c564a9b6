package config

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// The retention of each kind of history, in days, when the Retention
// section does not set it (0 keeps a kind forever).
const (
	DefaultRunsDays            = 400
	DefaultLogsDays            = 90
	DefaultActionsDays         = 400
	DefaultMetadataChangesDays = 400
	DefaultInterventionsDays   = 0
)

// MaxRetentionDays bounds a retention: some 270 years, so that as many days
// still fit a time.Duration.
const MaxRetentionDays = 100000

// retentionKeys are the settings of the Retention section.
var retentionKeys = []string{"Runs_days", "Logs_days", "Actions_days", "Metadata_changes_days", "Interventions_days",
	"Daily_at", "Archive_to"}

// Retention says how long the Engine DB keeps each kind of history, and
// whether and when the server purges what is older (etl-craft purge).
type Retention struct {
	// Profile is the selected profile, "" when none is selected.
	Profile string
	// RunsDays keeps runs with their task runs, attempts, business-rule
	// runs and results, gate decisions, consumption and gate waits;
	// LogsDays the attempts' log files; ActionsDays AUD_ACTIONS;
	// MetadataChangesDays AUD_METADATA_CHANGES; InterventionsDays
	// AUD_RUN_INTERVENTIONS. 0 keeps the kind forever.
	RunsDays, LogsDays, ActionsDays, MetadataChangesDays, InterventionsDays int
	// DailyAt is when the server purges every day, as the time after
	// midnight in Orchestration.Timezone; nil when Daily_at is not set, and
	// the server does not purge.
	DailyAt *time.Duration
	// ArchiveTo is the absolute folder a purge archives what it deletes
	// into, "" for none.
	ArchiveTo string
}

// DefaultRetention is the Retention of a file without the section.
func DefaultRetention() Retention {
	return Retention{RunsDays: DefaultRunsDays, LogsDays: DefaultLogsDays, ActionsDays: DefaultActionsDays,
		MetadataChangesDays: DefaultMetadataChangesDays, InterventionsDays: DefaultInterventionsDays}
}

// clockTime is a time of day, HH:MM or HH:MM:SS on a 24-hour clock.
var clockTime = regexp.MustCompile(`^([01][0-9]|2[0-3]):([0-5][0-9])(?::([0-5][0-9]))?$`)

// ParseClock reads a time of day written HH:MM or HH:MM:SS (24-hour) as
// the time after midnight; ok is false when it is not one.
func ParseClock(text string) (after time.Duration, ok bool) {
	m := clockTime.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	h, _ := strconv.Atoi(m[1])
	mi, _ := strconv.Atoi(m[2])
	s := 0
	if m[3] != "" {
		s, _ = strconv.Atoi(m[3])
	}
	return time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(s)*time.Second, true
}

// retention reads the optional Retention section; without it every kind has
// its default and the server does not purge.
func (l *loader) retention(cfg *Config, top *mapping) error {
	cfg.Retention = DefaultRetention()
	s, err := l.optionalSection(top, "Retention", retentionKeys)
	if err != nil || s == nil {
		return err
	}
	f := s.fields
	r := DefaultRetention()
	r.Profile = s.profile
	days := []struct {
		key  string
		into *int
	}{
		{"Runs_days", &r.RunsDays}, {"Logs_days", &r.LogsDays}, {"Actions_days", &r.ActionsDays},
		{"Metadata_changes_days", &r.MetadataChangesDays}, {"Interventions_days", &r.InterventionsDays},
	}
	for _, d := range days {
		if *d.into, err = f.number(d.key, *d.into, 0, MaxRetentionDays); err != nil {
			return err
		}
	}
	at, err := f.get("Daily_at")
	if err != nil {
		return err
	}
	if at.set {
		after, ok := ParseClock(at.text)
		if !ok {
			return l.bad(at, "must be a time of day written HH:MM or HH:MM:SS on a 24-hour clock, such as 03:30; got '%s'", at.text)
		}
		r.DailyAt = &after
	}
	if r.ArchiveTo, err = f.path("Archive_to", ""); err != nil {
		return err
	}
	cfg.Retention = r
	return nil
}

// ClockText writes a time after midnight as HH:MM, or HH:MM:SS when it has
// seconds.
func ClockText(after time.Duration) string {
	h, m, s := int(after/time.Hour), int(after%time.Hour/time.Minute), int(after%time.Minute/time.Second)
	if s == 0 {
		return fmt.Sprintf("%02d:%02d", h, m)
	}
	return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
}
