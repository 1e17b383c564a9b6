package retention

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/report"
)

// ParseAge reads an age such as 30d (days), 12h or 90m: what --older-than
// takes. It must be more than zero.
func ParseAge(text string) (time.Duration, error) {
	t := strings.TrimSpace(text)
	var d time.Duration
	var err error
	if n, ok := strings.CutSuffix(t, "d"); ok {
		var days int
		days, err = strconv.Atoi(n)
		d = time.Duration(days) * Day
		if err == nil && days > config.MaxRetentionDays {
			err = fmt.Errorf("more than %d days", config.MaxRetentionDays)
		}
	} else {
		d, err = time.ParseDuration(t)
	}
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not an age: write a whole number of days such as 30d, or hours or minutes such as 12h or 90m", text)
	}
	return d, nil
}

// Report returns the purge/1 document of the result.
func (r Result) Report() report.Purge {
	doc := report.Purge{Schema: report.SchemaPurge, PurgeID: r.ID, DryRun: r.DryRun, Retention: r.Policy.texts(),
		Cutoffs: map[string]report.Instant{}, Tables: []report.PurgedTable{}, Rows: r.Rows(), LogFiles: r.LogFiles,
		Batches: r.Batches, KeptRuns: r.Kept, ArchiveDir: r.ArchiveDir, Vacuumed: r.Vacuumed}
	for _, k := range Kinds {
		if at, ok := r.Cutoffs[k]; ok {
			doc.Cutoffs[string(k)] = report.Instant{Time: at}
		}
	}
	for _, t := range r.Tables {
		doc.Tables = append(doc.Tables, report.PurgedTable{Table: t.Name, Rows: t.Rows, Archive: t.Archive})
	}
	return doc
}

// Summary is the result's one-line summary, as the purge's text output
// ends and the server logs it.
func (r Result) Summary() string {
	if r.DryRun {
		return fmt.Sprintf("purge %s (dry run) would delete %d row(s) and %d log file(s); nothing was changed", r.ID, r.Rows(), r.LogFiles)
	}
	s := fmt.Sprintf("purge %s deleted %d row(s) in %d batch(es) and %d log file(s)", r.ID, r.Rows(), r.Batches, r.LogFiles)
	if r.Kept > 0 {
		s += fmt.Sprintf("; %d planned run(s) came to be relied on meanwhile and were kept", r.Kept)
	}
	if r.ArchiveDir != "" {
		s += "; archived in " + r.ArchiveDir
	}
	return s
}

// AgeText writes a retention as ParseAge reads it (30d, 12h0m0s), or
// "forever" for none.
func AgeText(d time.Duration) string {
	switch {
	case d <= 0:
		return "forever"
	case d%Day == 0:
		return strconv.FormatInt(int64(d/Day), 10) + "d"
	}
	return d.String()
}

// texts returns the retention of every kind as AgeText writes it.
func (p Policy) texts() map[string]string {
	out := map[string]string{}
	for _, k := range Kinds {
		out[string(k)] = AgeText(p[k])
	}
	return out
}
