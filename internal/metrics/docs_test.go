package metrics_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The starter kit's files: docs/metrics.md, and the Grafana dashboard
// beside the alert rules.
var (
	docsFile      = filepath.Join("..", "..", "docs", "metrics.md")
	dashboardFile = filepath.Join("..", "..", "docs", "metrics", "etl-craft-dashboard.json")
)

// metricName matches the name of one of etl-craft's metrics, without a
// histogram's _bucket, _sum or _count.
var metricName = regexp.MustCompile(`etl_craft_[a-z_]*[a-z]`)

// documented returns the metrics docs/metrics.md lists in its tables (a
// line starting "| `etl_craft_").
func documented(t *testing.T) map[string]bool {
	t.Helper()
	text, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(text), "\n") {
		if name, ok := strings.CutPrefix(line, "| `"); ok && strings.HasPrefix(name, "etl_craft_") {
			out[name[:strings.IndexByte(name, '`')]] = true
		}
	}
	return out
}

// family is the metric a name in a query means: a histogram's series
// (_bucket, _sum, _count) are of the histogram.
func family(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			return base
		}
	}
	return name
}

// dashboardQueries returns the PromQL expressions of the Grafana
// dashboard's panels.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(text, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, target := range p.Targets {
			out = append(out, target.Expr)
		}
	}
	if d.Title == "" || len(out) == 0 {
		t.Fatalf("%s: no title or no query", dashboardFile)
	}
	return out
}

// Every metric the alert rules and the dashboard query is one
// docs/metrics.md lists.
func TestStarterKitUsesDocumentedMetrics(t *testing.T) {
	t.Parallel()
	docs := documented(t)
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for where, text := range map[string]string{rulesFile: string(rules), dashboardFile: strings.Join(dashboardQueries(t), "\n")} {
		for _, name := range metricName.FindAllString(text, -1) {
			if !docs[family(name)] {
				t.Errorf("%s queries %s, which docs/metrics.md does not list", where, name)
			}
		}
	}
}
