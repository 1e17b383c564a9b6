package freetext

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"
)

// BenchmarkWriter prints a JSON document of 10,000 audit-like rows (names
// and reasons in several scripts, no hidden character; about 2 MB) as a
// command prints one, with an indenting encoder, once straight to the sink
// and once through a Writer, as every command's stdout is written. It
// reports the milliseconds of each per document and their ratio (through
// the Writer / straight), measured in the same run.
func BenchmarkWriter(b *testing.B) {
	rows := make([]map[string]any, 10_000)
	for i := range rows {
		rows[i] = map[string]any{"id": i, "actor": fmt.Sprintf("user%d@host", i), "command": "pause",
			"reason": "warehouse maintenance — naïve café 日本語 👍", "at": "2026-03-01T06:00:00+00:00"}
	}
	doc := map[string]any{"schema": "etl-craft/audit/1", "actions": rows}
	print := func(w io.Writer) time.Duration {
		start := time.Now()
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	var straight, through time.Duration
	for b.Loop() {
		straight += print(io.Discard)
		w := NewWriter(io.Discard)
		through += print(w)
		w.Flush()
	}
	b.ReportMetric(straight.Seconds()*1e3/float64(b.N), "straight-ms/doc")
	b.ReportMetric(through.Seconds()*1e3/float64(b.N), "writer-ms/doc")
	b.ReportMetric(float64(through)/float64(straight), "ratio")
}
