package e2e

import (
	"context"
	"net/http"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Families are the metric families of one scrape, by name.
type Families map[string]*dto.MetricFamily

// Scrape reads the server's /metrics with the bearer token (none when
// empty), and fails the test unless it answers 200 in the Prometheus text
// format.
func (s *Server) Scrape(token string) Families {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.API+"/metrics", nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("scraping %s: %v", s, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("scraping %s: %s", s, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		s.t.Fatalf("scraping %s: %v", s, err)
	}
	return families
}

// Sum is the sum of the values of the family's series (a counter's or a
// gauge's) that have the labels, given as name, value pairs.
func (f Families) Sum(name string, labels ...string) float64 {
	var sum float64
	for _, m := range f[name].GetMetric() {
		if hasLabels(m, labels) {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// hasLabels reports whether a series has the labels, given as name, value
// pairs.
func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			found = found || (l.GetName() == labels[i] && l.GetValue() == labels[i+1])
		}
		if !found {
			return false
		}
	}
	return true
}

// MetricsAgree fails the test unless the scraped runs ended and attempts
// ended, by status, are the Engine DB's counts (which holds while no run
// was reopened: a reopened run's second ending counts again).
func MetricsAgree(t testing.TB, db *engine.DB, f Families) {
	t.Helper()
	for _, c := range []struct{ metric, query string }{
		{"etl_craft_runs_ended_total", "SELECT STATUS, count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS IN (" + records.SQLEndedRuns + ") GROUP BY STATUS"},
		{"etl_craft_attempts_ended_total", "SELECT STATUS, count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS NOT IN (" + records.SQLActiveAttempts + ") GROUP BY STATUS"},
	} {
		want := map[string]float64{}
		rows, err := db.QueryContext(context.Background(), c.query)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var status string
			var n float64
			if err := rows.Scan(&status, &n); err != nil {
				t.Fatal(err)
			}
			want[status] = n
		}
		rows.Close()
		total := 0.0
		for status, n := range want {
			total += n
			if got := f.Sum(c.metric, "status", status); got != n {
				t.Errorf("%s{status=%q} is %v; the Engine DB has %v", c.metric, status, got, n)
			}
		}
		if got := f.Sum(c.metric); got != total {
			t.Errorf("%s sums to %v; the Engine DB has %v", c.metric, got, total)
		}
	}
}
