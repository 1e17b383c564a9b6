package metrics_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
)

// get asks the server for /metrics with the Authorization header (none
// when empty), and returns the status and the WWW-Authenticate header.
func get(t *testing.T, s *e2e.Server, authorization string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.API+"/metrics", nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// /metrics answers 401 without a token or with one that is not valid, and
// 200 to a viewer's; with Orchestration.Metrics_public: true it answers
// without a token. Either way each answer is counted by its route.
func TestMetricsNeedAViewersTokenUnlessPublic(t *testing.T) {
	t.Parallel()
	p := e2e.New(t, e2e.SQLiteDuckDB, "")
	p.OK("init-db")
	viewer := p.Token("dashboards", "viewer")
	s := p.StartServer()
	for _, auth := range []string{"", "Bearer not-a-token", "Basic " + viewer} {
		if status, challenge := get(t, s, auth); status != http.StatusUnauthorized || !strings.HasPrefix(challenge, "Bearer") {
			t.Errorf("Authorization %q: %d %q, want 401 with a Bearer challenge", auth, status, challenge)
		}
	}
	f := s.Scrape(viewer)
	if n := f.Sum("etl_craft_http_requests_total", "route", "/metrics", "code", "401"); n != 3 {
		t.Errorf("%v refused scrapes counted, want 3", n)
	}
	s.Stop()

	p.Orchestration("  Metrics_public: true\n")
	s = p.StartServer()
	if status, _ := get(t, s, ""); status != http.StatusOK {
		t.Errorf("public metrics without a token: %d, want 200", status)
	}
	if n := s.Scrape("").Sum("etl_craft_build_info"); n != 1 {
		t.Errorf("etl_craft_build_info is %v, want 1", n)
	}
}
