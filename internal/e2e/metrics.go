package e2e

import (
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are the metric families of one scrape, by name.
type Families map[string]*dto.MetricFamily

// Scrape reads the server's /metrics with the bearer token (none when
// empty), and fails the test unless it answers 200 in the Prometheus text
// format.
func (s *Server) Scrape(token string) Families {
	s.t.Helper()
	families, err := s.TryScrape(token)
	if err != nil {
		s.t.Fatalf("scraping %s: %v", s, err)
	}
	return families
}

// TryScrape is Scrape returning its error, for a caller that goes on
// without the figures (the soak, whose server may just have been killed).
func (s *Server) TryScrape(token string) (Families, error) {
	req, err := http.NewRequest(http.MethodGet, s.API+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(resp.Body)
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
