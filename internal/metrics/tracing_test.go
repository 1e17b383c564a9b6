package metrics_test

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/etl-craft/etl-craft/internal/e2e"
)

// receiver is an OTLP/HTTP trace receiver: it decodes the protobuf
// requests sent to /v1/traces and keeps their spans.
type receiver struct {
	url   string
	mu    sync.Mutex
	spans []*tracepb.Span
}

// newReceiver starts a receiver on a loopback port until the test ends.
func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		var export collectorpb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &export)
		}
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			t.Errorf("the receiver got %s %s (%s): %v", req.Method, req.URL.Path, req.Header.Get("Content-Type"), err)
			http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range export.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				r.spans = append(r.spans, ss.GetSpans()...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&collectorpb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL
	return r
}

// received returns the spans received so far.
func (r *receiver) received() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// attr is the value of a span's attribute as text, "" when absent.
func attr(s *tracepb.Span, key string) string {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == key {
			return text(a.GetValue())
		}
	}
	return ""
}

// text is an attribute value as text.
func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	}
	return v.String()
}

// traceLoadScript loads two rows holding a value no span may carry.
const traceLoadScript = `from etl_craft.scripting import ScriptResult


def run(task):
    rows = [{"id": 1, "note": "row-value-7f3a"}, {"id": 2, "note": "row-value-7f3a"}]
    return ScriptResult(task.load("items", rows))
`

// rowValue is the value traceLoadScript loads.
const rowValue = "row-value-7f3a"

// A foreground run (Orchestration.Traces_endpoint) and a server
// (OTEL_EXPORTER_OTLP_ENDPOINT) export their spans to an OTLP receiver:
// one trace per run, whose root is the run's span with its identities; a
// span per attempt, the run's child; a span per statement the SQL handler
// sends, an attempt's child, its text cut to a length; a span for the API
// request that triggered the server's run, with its route and status. No
// attribute holds a loaded value or a secret of the project.
func TestTracesOfRuns(t *testing.T) {
	t.Parallel()
	e2e.EachOf(t, pairs, func(t *testing.T, pair e2e.Pair) {
		recv := newReceiver(t)
		p := e2e.New(t, pair, "")
		p.OK("init-db")
		p.Write("ingestion_scripts/load_items.py", traceLoadScript)
		long := "SELECT id, note FROM " + e2e.Schema + ".items WHERE note <> '" + strings.Repeat("x", 600) + "'"
		p.Register("0001_traced", e2e.Pipeline("TRACED",
			e2e.Task{Code: "extract", Handler: "PYTHON", Params: map[string]string{"SCRIPT_NAME": "load_items.py"}},
			e2e.CreateTable("load", e2e.Schema+".notes", long, "extract:SUCCESS")))
		operator := p.Token("ops", "operator")
		db := p.DB()

		foreground := p.Config()
		p.Orchestration("  Traces_endpoint: " + recv.url + "\n")
		p.OK("run", "--pipeline_code", "TRACED")
		p.Write("craft-connector.yml", foreground)
		s := p.StartServer("OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.url)
		e2e.WaitRunsEnded(t, db, s.Trigger(operator, "TRACED"))
		if code := s.Stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, s.Stderr())
		}

		spans := recv.received()
		byID := map[string]*tracepb.Span{}
		for _, sp := range spans {
			byID[hex.EncodeToString(sp.GetSpanId())] = sp
			for _, a := range sp.GetAttributes() {
				v := text(a.GetValue())
				if strings.Contains(v, rowValue) {
					t.Errorf("span %q: attribute %s holds a loaded value: %q", sp.GetName(), a.GetKey(), v)
				}
				for _, env := range p.Env {
					if _, secret, _ := strings.Cut(env, "="); secret != "" && strings.Contains(v, secret) {
						t.Errorf("span %q: attribute %s holds the secret of %s", sp.GetName(), a.GetKey(), env[:strings.Index(env, "=")])
					}
				}
			}
		}
		parent := func(sp *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(sp.GetParentSpanId())] }

		runIDs := e2e.QueryRows(t, db, "SELECT PIPELINE_RUN_ID FROM AUD_PIPELINES_RUN_LOG ORDER BY PIPELINE_RUN_ID")
		runs := map[string]*tracepb.Span{}
		traces := map[string]bool{}
		for _, sp := range spans {
			if sp.GetName() == "run TRACED" {
				runs[attr(sp, "etl_craft.pipeline_run_id")] = sp
				traces[hex.EncodeToString(sp.GetTraceId())] = true
				if len(sp.GetParentSpanId()) != 0 || attr(sp, "etl_craft.status") != "SUCCESS" {
					t.Errorf("run span %v: parent %x, status %q; want a root span, SUCCESS", sp.GetAttributes(), sp.GetParentSpanId(), attr(sp, "etl_craft.status"))
				}
			}
		}
		if len(runs) != len(runIDs) || len(traces) != len(runIDs) {
			t.Fatalf("%d run spans in %d traces for runs %v; want one trace per run", len(runs), len(traces), runIDs)
		}
		for _, id := range runIDs {
			run := runs[id]
			if run == nil {
				t.Fatalf("no span of run %s", id)
			}
			attempts := map[string]*tracepb.Span{}
			statements := 0
			for _, sp := range spans {
				if !bytes.Equal(sp.GetTraceId(), run.GetTraceId()) {
					continue
				}
				switch {
				case strings.HasPrefix(sp.GetName(), "attempt "):
					attempts[attr(sp, "etl_craft.task")] = sp
					if parent(sp) != run || attr(sp, "etl_craft.pipeline_run_id") != id {
						t.Errorf("run %s: span %q is not the run's child or names run %s", id, sp.GetName(), attr(sp, "etl_craft.pipeline_run_id"))
					}
				case sp.GetName() == "statement":
					statements++
					q := attr(sp, "db.query.text")
					if a := parent(sp); a == nil || !strings.HasPrefix(a.GetName(), "attempt ") {
						t.Errorf("run %s: statement %q is not an attempt's child", id, q)
					}
					if n := len([]rune(q)); n > 513 {
						t.Errorf("run %s: a statement span keeps %d characters of its text", id, n)
					}
				}
			}
			want := e2e.Count(t, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG r ON r.TASK_RUN_ID = a.TASK_RUN_ID WHERE r.PIPELINE_RUN_ID = "+id)
			if len(attempts) != want || attempts["extract"] == nil || attempts["load"] == nil {
				t.Errorf("run %s: attempt spans %v; want one per attempt (%d): extract and load", id, keys(attempts), want)
			}
			if statements == 0 {
				t.Errorf("run %s: no statement span", id)
			}
		}

		var requests []string
		for _, sp := range spans {
			if attr(sp, "http.route") == "/api/v1/pipelines/{code}/runs" {
				requests = append(requests, sp.GetName()+" "+attr(sp, "http.response.status_code"))
			}
		}
		if len(requests) != 1 || requests[0] != "POST /api/v1/pipelines/{code}/runs 202" {
			t.Errorf("spans of requests to /api/v1/pipelines/{code}/runs: %v; want the trigger's, POST and 202", requests)
		}
	})
}

// keys returns a map's keys.
func keys(m map[string]*tracepb.Span) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
