package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/run"
)

// world is a fixture with pipelines to act on: P (load, then report) ran
// once to SUCCESS as run done, and R as run rerun; Q is backfilled, and C
// cancelled and M marked on runs made for each call.
type world struct {
	*fixture
	tk      tokens
	done    int64
	rerun   int64
	attempt int64
}

func newWorld(t *testing.T, f *fixture) *world {
	for _, pipe := range []string{"P", "Q", "C", "M", "R"} {
		f.b.Pipeline(pipe, "FULL")
		f.sqlTask(pipe, "load")
	}
	f.sqlTask("P", "report")
	f.b.Dep("P", "report", "P", "load", "SUCCESS")
	w := &world{fixture: f, tk: f.newTokens()}
	out := f.runPipeline(run.Request{PipelineCode: "P"})
	if out.Status != string(records.RunSuccess) {
		t.Fatalf("P: %+v", out)
	}
	w.done = out.RunID
	if out := f.runPipeline(run.Request{PipelineCode: "R"}); out.Status != string(records.RunSuccess) {
		t.Fatalf("R: %+v", out)
	} else {
		w.rerun = out.RunID
	}
	w.attempt = int64(f.count(`SELECT MAX(a.ATTEMPT_ID) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
		WHERE tr.PIPELINE_RUN_ID = $1`, w.done))
	return w
}

// endpointCase is one endpoint of the matrix: the role it needs, the
// request (made afresh for each call, with what it acts on) and the status
// a token allowed to call it gets.
type endpointCase struct {
	name    string
	role    apitoken.Role
	request func(w *world, caller string) (method, path string, body any)
	status  int
}

func endpointCases() []endpointCase {
	get := func(path string) func(*world, string) (string, string, any) {
		return func(*world, string) (string, string, any) { return http.MethodGet, path, nil }
	}
	reason := map[string]any{"reason": "asked by the matrix"}
	return []endpointCase{
		{"health", apitoken.Viewer, get("/health"), 200},
		{"list-pipelines", apitoken.Viewer, get("/pipelines"), 200},
		{"get-pipeline", apitoken.Viewer, get("/pipelines/P"), 200},
		{"list-runs", apitoken.Viewer, get("/pipelines/P/runs?limit=5"), 200},
		{"get-run", apitoken.Viewer, func(w *world, _ string) (string, string, any) {
			return http.MethodGet, fmt.Sprintf("/runs/%d", w.done), nil
		}, 200},
		{"get-run-tasks", apitoken.Viewer, func(w *world, _ string) (string, string, any) {
			return http.MethodGet, fmt.Sprintf("/runs/%d/tasks", w.done), nil
		}, 200},
		{"explain-task", apitoken.Viewer, func(w *world, _ string) (string, string, any) {
			return http.MethodGet, fmt.Sprintf("/runs/%d/tasks/report/explain", w.done), nil
		}, 200},
		{"get-attempt", apitoken.Viewer, func(w *world, _ string) (string, string, any) {
			return http.MethodGet, fmt.Sprintf("/attempts/%d", w.attempt), nil
		}, 200},
		{"get-attempt-log", apitoken.Viewer, func(w *world, _ string) (string, string, any) {
			return http.MethodGet, fmt.Sprintf("/attempts/%d/log?offset=0", w.attempt), nil
		}, 200},
		{"trigger-run", apitoken.Operator, func(*world, string) (string, string, any) {
			return http.MethodPost, "/pipelines/P/runs", map[string]any{"reason": "from the matrix"}
		}, 202},
		{"backfill", apitoken.Operator, func(*world, string) (string, string, any) {
			return http.MethodPost, "/pipelines/Q/backfills", map[string]any{"first": "2026-01-01", "last": "2026-01-01", "reason": "matrix"}
		}, 200},
		{"pause-pipeline", apitoken.Operator, func(*world, string) (string, string, any) {
			return http.MethodPost, "/pipelines/M/pause", reason
		}, 200},
		{"resume-pipeline", apitoken.Operator, func(*world, string) (string, string, any) {
			return http.MethodPost, "/pipelines/M/resume", reason
		}, 200},
		{"cancel-run", apitoken.Operator, func(w *world, _ string) (string, string, any) {
			return http.MethodPost, fmt.Sprintf("/runs/%d/cancel", w.initRun("C")), reason
		}, 200},
		{"mark-task", apitoken.Operator, func(w *world, _ string) (string, string, any) {
			return http.MethodPost, fmt.Sprintf("/runs/%d/tasks/load/mark", w.initRun("M")),
				map[string]any{"status": "SUCCESS", "reason": "done by hand", "rows": 3}
		}, 200},
		{"rerun-task", apitoken.Operator, func(w *world, _ string) (string, string, any) {
			return http.MethodPost, fmt.Sprintf("/runs/%d/tasks/load/rerun", w.rerun), map[string]any{"reason": "again"}
		}, 200},
		{"list-tokens", apitoken.Admin, get("/tokens"), 200},
		{"create-token", apitoken.Admin, func(_ *world, caller string) (string, string, any) {
			return http.MethodPost, "/tokens", map[string]any{"name": "made-by-" + caller, "role": "viewer", "expires": "30d"}
		}, 201},
		{"revoke-token", apitoken.Admin, func(w *world, caller string) (string, string, any) {
			c, err := apitoken.Create(acting(), w.p.DB, apitoken.Request{Name: "to-revoke-" + caller, Role: "viewer"})
			if err != nil {
				w.t.Fatal(err)
			}
			return http.MethodPost, fmt.Sprintf("/tokens/%d/revoke", c.ID), nil
		}, 200},
	}
}

// Every endpoint answers each token as the role matrix says: 401 without a
// token or with an expired or revoked one, 403 below the role it needs, and
// its own status from the role up, every answer fitting the served OpenAPI
// document.
func TestRoleMatrix(t *testing.T) {
	eachKind(t, func(t *testing.T, f *fixture) {
		w := newWorld(t, f)
		callers := []struct {
			name  string
			token string
			role  apitoken.Role
		}{
			{"none", "", ""}, {"garbage", "not-a-token", ""}, {"expired", w.tk.expired, ""}, {"revoked", w.tk.revoked, ""},
			{"viewer", w.tk.viewer, apitoken.Viewer}, {"operator", w.tk.operator, apitoken.Operator}, {"admin", w.tk.admin, apitoken.Admin},
		}
		for _, who := range callers {
			for _, c := range endpointCases() {
				method, path, body := c.request(w, who.name)
				got := w.call(who.token, method, path, body)
				want := c.status
				switch {
				case who.role == "":
					want = http.StatusUnauthorized
				case !who.role.Allows(c.role):
					want = http.StatusForbidden
				}
				if got.status != want {
					t.Errorf("%s as %s: got %d, want %d\n%s", c.name, who.name, got.status, want, got.body)
					continue
				}
				if want >= 400 {
					var e report.Error
					got.decode(t, &e)
					if e.Schema != "etl-craft/error/1" || e.Status != want || e.Message == "" || e.ErrorClass == "" {
						t.Errorf("%s as %s: error document %s", c.name, who.name, got.body)
					}
					if strings.Contains(string(got.body), w.tk.expired) || strings.Contains(string(got.body), w.tk.revoked) {
						t.Errorf("%s as %s: the answer holds a token value", c.name, who.name)
					}
				}
			}
		}
		// A token's name is the actor of what it did.
		if n := w.count("SELECT COUNT(*) FROM AUD_ACTIONS WHERE ACTOR = 'chat-bot' AND COMMAND = 'api cancel'"); n != 1 {
			t.Errorf("operator cancels recorded: %d", n)
		}
		if n := w.count("SELECT COUNT(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS = 'CANCELLED' AND ENDED_BY IN ('chat-bot', 'ops-admin')"); n != 2 {
			t.Errorf("runs cancelled by the tokens: %d", n)
		}
	})
}
