package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// rulesFile is the alert rules of docs/metrics.md.
var rulesFile = filepath.Join("..", "..", "docs", "metrics", "etl-craft-rules.yml")

// tool returns the path of a program of Debian's prometheus package
// (prometheus, promtool), which scripts/test.sh installs; without it the
// test is skipped, and fails under CI.
func tool(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (Debian's prometheus package): %v", name, err)
		}
		t.Skipf("%s is not installed (Debian's prometheus package)", name)
	}
	return path
}

// prometheus is a real Prometheus server scraping one etl-craft server
// every second with a bearer token, and evaluating the alert rules of
// docs/metrics.md.
type prometheus struct {
	t   *testing.T
	url string
}

// startPrometheus starts Prometheus scraping target (host:port) with the
// token, and waits until it is ready.
func startPrometheus(t *testing.T, target, token string) *prometheus {
	t.Helper()
	bin := tool(t, "prometheus")
	dir := t.TempDir()
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "token")
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %s
scrape_configs:
  - job_name: etl-craft
    authorization:
      type: Bearer
      credentials_file: %s
    static_configs:
      - targets: ['%s']
`, rules, tokenFile, target)
	for name, text := range map[string]string{"token": token, "prometheus.yml": config} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddress(t)
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	var logs e2e.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })
	p := &prometheus{t: t, url: "http://" + addr}
	deadline := time.Now().Add(e2e.Patience)
	for {
		resp, err := http.Get(p.url + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-done:
			t.Fatalf("prometheus exited:\n%s", logs.String())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus is not ready:\n%s", logs.String())
		}
	}
}

// freeAddress returns a loopback address with a port free now.
func freeAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// api reads a document of Prometheus's HTTP API into v.
func (p *prometheus) api(path string, v any) error {
	resp, err := http.Get(p.url + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// query runs an instant query whose result is a vector, and returns each
// sample's value by its labels (written name=value,… in name order).
func (p *prometheus) query(q string) (map[string]float64, error) {
	var doc struct {
		Data struct {
			Result []struct {
				Metric map[string]string
				Value  [2]any
			}
		}
	}
	if err := p.api("/api/v1/query?query="+url.QueryEscape(q), &doc); err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, r := range doc.Data.Result {
		var labels []string
		for _, name := range slices.Sorted(maps.Keys(r.Metric)) {
			labels = append(labels, name+"="+r.Metric[name])
		}
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		out[strings.Join(labels, ",")] = v
	}
	return out, nil
}

// waitFor waits until the query returns want: Prometheus has scraped the
// server since it recorded what want counts.
func (p *prometheus) waitFor(q string, want map[string]float64) {
	p.t.Helper()
	deadline := time.Now().Add(e2e.Patience)
	for {
		got, err := p.query(q)
		if err == nil && maps.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("Prometheus answers %s with %v (%v); want %v", q, got, err, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// byStatus counts rows of an Engine DB table by STATUS, among the
// statuses of cond, as Prometheus labels a sum by status.
func byStatus(t *testing.T, db *engine.DB, table, cond string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, row := range e2e.QueryRows(t, db, "SELECT STATUS, count(*) FROM "+table+" WHERE "+cond+" GROUP BY STATUS") {
		status, n, _ := strings.Cut(row, " ")
		v, _ := strconv.ParseFloat(n, 64)
		out["status="+status] = v
	}
	return out
}

// sleepScript sleeps for the INPUT_PARAMS seconds the first time it runs,
// which it marks by creating the file INPUT_PARAMS marker: a task to kill
// the server under, whose attempt after the kill ends at once.
const sleepScript = `import os
import time

from etl_craft.scripting import ScriptResult


def run(task):
    p = task.input_params
    if not os.path.exists(p["marker"]):
        open(p["marker"], "w").close()
        time.sleep(p["seconds"])
    return ScriptResult(0)
`

// A real Prometheus scrapes a real server with a viewer's token every
// second while pipelines run: runs the server executes, one that fails, and
// a foreground run it does not execute. Its query API then gives the
// Engine DB's counts of runs and attempts ended by status. The server is
// killed (SIGKILL) while a task runs, and a new one started on the same
// address: the attempt is LOST, counted once, and the counts still agree.
// The alert rules load and evaluate without error, and so do the Grafana
// dashboard's queries; a scrape passes promtool check metrics, and
// docs/metrics.md lists every metric it holds.
func TestPrometheusScrapesTheServer(t *testing.T) {
	t.Parallel()
	e2e.EachOf(t, pairs, func(t *testing.T, pair e2e.Pair) {
		p := e2e.New(t, pair, "")
		address := freeAddress(t)
		p.Write("craft-connector.yml", strings.Replace(p.Config(), "Api_address: 127.0.0.1:0", "Api_address: "+address, 1))
		p.OK("init-db")
		p.Write("ingestion_scripts/sleep.py", sleepScript)
		marker := filepath.Join(t.TempDir(), "slept")
		p.Register("0001_pipelines", e2e.Pipeline("GOOD", e2e.CreateTable("load", "main.good", "SELECT 1 AS id"))+
			e2e.Pipeline("BAD", e2e.CreateTable("load", "main.bad", "SELECT * FROM main.nowhere"))+
			e2e.Pipeline("SLOW", e2e.Task{Code: "sleep", Handler: "PYTHON",
				Params: map[string]string{"SCRIPT_NAME": "sleep.py",
					"INPUT_PARAMS": fmt.Sprintf(`{"seconds": 120, "marker": %q}`, marker)}}))
		viewer, operator := p.Token("prometheus", "viewer"), p.Token("ops", "operator")
		db := p.DB()
		s := p.StartServer()
		prom := startPrometheus(t, address, viewer)

		var ids []int64
		for _, code := range []string{"GOOD", "BAD", "GOOD", "BAD", "GOOD"} {
			ids = append(ids, s.Trigger(operator, code))
			e2e.WaitRunsEnded(t, db, ids...) // one run of a pipeline at a time
		}
		p.OK("run", "--pipeline_code", "GOOD") // a run the server does not execute
		agree(t, prom, db)
		checkMetrics(t, s, viewer)
		dashboardEvaluates(t, prom)

		slow := s.Trigger(operator, "SLOW")
		waitForFile(t, marker) // the script sleeps
		s.Kill()
		s = p.StartServer()
		if s.API != "http://"+address {
			t.Fatalf("the new server listens at %s, not %s", s.API, address)
		}
		e2e.WaitRunsEnded(t, db, slow)
		if n := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = $1", records.AttemptLost); n != 1 {
			t.Fatalf("%d attempts LOST after the kill, want 1", n)
		}
		agree(t, prom, db)
		lost := `sum(etl_craft_attempts_ended_total{status="LOST"})`
		prom.waitFor(lost, map[string]float64{"": 1})
		time.Sleep(3 * time.Second) // more scrapes
		prom.waitFor(lost, map[string]float64{"": 1})
		rulesHealthy(t, prom)
	})
}

// waitForFile waits until the file exists.
func waitForFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(e2e.Patience)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s was not created", path)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// agree waits until Prometheus gives the Engine DB's counts of runs and
// attempts ended, by status.
func agree(t *testing.T, prom *prometheus, db *engine.DB) {
	t.Helper()
	prom.waitFor("sum by (status) (etl_craft_runs_ended_total)",
		byStatus(t, db, "AUD_PIPELINES_RUN_LOG", "STATUS IN ("+records.SQLEndedRuns+")"))
	prom.waitFor("sum by (status) (etl_craft_attempts_ended_total)",
		byStatus(t, db, "AUD_TASK_ATTEMPTS", "STATUS NOT IN ("+records.SQLActiveAttempts+")"))
}

// checkMetrics passes a scrape of the server to promtool check metrics,
// which fails on a format error or a name against Prometheus's conventions,
// and fails the test unless docs/metrics.md lists each of etl-craft's
// metrics the scrape holds.
func checkMetrics(t *testing.T, s *e2e.Server, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.API+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	scrape, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool(t, "promtool"), "check", "metrics")
	cmd.Stdin = bytes.NewReader(scrape)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
	docs := documented(t)
	for _, line := range strings.Split(string(scrape), "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "+"etl_craft_"); ok {
			if name, _, _ = strings.Cut(name, " "); !docs["etl_craft_"+name] {
				t.Errorf("the server serves etl_craft_%s, which docs/metrics.md does not list", name)
			}
		}
	}
}

// dashboardEvaluates fails the test unless Prometheus evaluates every
// query of the Grafana dashboard without error.
func dashboardEvaluates(t *testing.T, prom *prometheus) {
	t.Helper()
	for _, q := range dashboardQueries(t) {
		var doc struct{ Status, Error string }
		if err := prom.api("/api/v1/query?query="+url.QueryEscape(q), &doc); err != nil || doc.Status != "success" {
			t.Errorf("the dashboard's query %s: %v %s %s", q, err, doc.Status, doc.Error)
		}
	}
}

// rulesHealthy fails the test unless every rule of the rules file was
// loaded and evaluated without error.
func rulesHealthy(t *testing.T, prom *prometheus) {
	t.Helper()
	var doc struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name, Health, LastError string
				}
			}
		}
	}
	deadline := time.Now().Add(e2e.Patience)
	for {
		if err := prom.api("/api/v1/rules", &doc); err != nil {
			t.Fatal(err)
		}
		var bad, names []string
		for _, g := range doc.Data.Groups {
			for _, r := range g.Rules {
				names = append(names, r.Name)
				if r.Health != "ok" {
					bad = append(bad, r.Name+": "+r.Health+" "+r.LastError)
				}
			}
		}
		sort.Strings(bad)
		if len(names) > 0 && len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("rules loaded: %v; not healthy: %v", names, bad)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// The committed alert rules pass promtool check rules.
func TestAlertRulesPassPromtool(t *testing.T) {
	t.Parallel()
	out, err := exec.CommandContext(context.Background(), tool(t, "promtool"), "check", "rules", rulesFile).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Fatalf("promtool check rules %s: %v\n%s", rulesFile, err, out)
	}
}
