package api_test

import (
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/server/api"
)

// changeTables are the tables a refused request must leave as they were.
var changeTables = []string{"AUD_ACTIONS", "AUD_PIPELINES_RUN_LOG", "AUD_TASK_RUN_LOG", "AUD_TASK_ATTEMPTS",
	"AUD_RUN_INTERVENTIONS", "AUD_PIPELINE_PAUSES", "CFG_API_TOKENS"}

// snapshot counts the rows of changeTables and the revoked tokens.
func (f *fixture) snapshot() map[string]int {
	out := map[string]int{}
	for _, t := range changeTables {
		out[t] = f.count("SELECT COUNT(*) FROM " + t)
	}
	out["revoked tokens"] = f.count("SELECT COUNT(*) FROM CFG_API_TOKENS WHERE REVOKED_AT IS NOT NULL")
	return out
}

// A body or query that does not fit its endpoint is refused 422 (or 400
// for a domain usage error) naming the field at fault, and changes nothing
// in the Engine DB: no action is even recorded.
func TestBadRequestsNameTheFieldAndChangeNothing(t *testing.T) {
	eachKind(t, func(t *testing.T, f *fixture) {
		w := newWorld(t, f)
		active := w.initRun("M")
		before := w.snapshot()
		cases := []struct {
			name, method, path string
			body               any
			status             int
			field              string
		}{
			{"missing reason", "POST", "/pipelines/M/pause", map[string]any{}, 422, "reason"},
			{"blank reason", "POST", "/pipelines/M/pause", map[string]any{"reason": "   "}, 422, "reason"},
			{"empty reason", "POST", fmt.Sprintf("/runs/%d/cancel", active), map[string]any{"reason": ""}, 422, "reason"},
			{"reason of the wrong type", "POST", fmt.Sprintf("/runs/%d/cancel", active), map[string]any{"reason": 7}, 422, "reason"},
			{"rows of the wrong type", "POST", fmt.Sprintf("/runs/%d/tasks/load/mark", active),
				map[string]any{"status": "SUCCESS", "reason": "r", "rows": "many"}, 422, "rows"},
			{"negative rows", "POST", fmt.Sprintf("/runs/%d/tasks/load/mark", active),
				map[string]any{"status": "SUCCESS", "reason": "r", "rows": -1}, 422, "rows"},
			{"unknown status", "POST", fmt.Sprintf("/runs/%d/tasks/load/mark", active), map[string]any{"status": "DONE", "reason": "r"}, 422, "status"},
			{"missing status", "POST", fmt.Sprintf("/runs/%d/tasks/load/mark", active), map[string]any{"reason": "r"}, 422, "status"},
			{"unknown field", "POST", fmt.Sprintf("/runs/%d/tasks/load/rerun", active), map[string]any{"reason": "r", "force": true}, 422, "force"},
			{"with_downstream of the wrong type", "POST", fmt.Sprintf("/runs/%d/tasks/load/rerun", active),
				map[string]any{"reason": "r", "with_downstream": "yes"}, 422, "with_downstream"},
			{"not JSON", "POST", "/pipelines/M/pause", "{reason:", 400, ""},
			{"a bad run date", "POST", "/pipelines/M/runs", map[string]any{"run_date": "yesterday"}, 422, "run_date"},
			{"a run date in the year 0", "POST", "/pipelines/M/runs", map[string]any{"run_date": "0000-06-01"}, 400, "run_date"},
			{"a backfill from the year 0", "POST", "/pipelines/Q/backfills", map[string]any{"first": "0000-01-01", "last": "0000-01-02", "reason": "r"}, 400, "backfill"},
			{"a backfill without last", "POST", "/pipelines/Q/backfills", map[string]any{"first": "2026-01-01", "reason": "r"}, 422, "last"},
			{"a token with an unknown role", "POST", "/tokens", map[string]any{"name": "x", "role": "root"}, 422, "role"},
			{"a token with a bad lifetime", "POST", "/tokens", map[string]any{"name": "x", "role": "viewer", "expires": "soon"}, 422, "expires"},
			{"a token with a control character", "POST", "/tokens", map[string]any{"name": "a\tb", "role": "viewer"}, 400, "name"},
			{"limit 0", "GET", "/pipelines/P/runs?limit=0", nil, 422, "limit"},
			{"limit 101", "GET", "/pipelines/P/runs?limit=101", nil, 422, "limit"},
			{"limit not a number", "GET", "/pipelines/P/runs?limit=ten", nil, 422, "limit"},
			{"an unknown query parameter", "GET", "/pipelines/P/runs?offset=3", nil, 422, "offset"},
			{"a negative log offset", "GET", fmt.Sprintf("/attempts/%d/log?offset=-1", w.attempt), nil, 422, "offset"},
			{"a run id of 0", "GET", "/runs/0", nil, 422, "id"},
			{"a body too large", "POST", "/pipelines/M/pause", map[string]any{"reason": strings.Repeat("x", api.MaxBodyBytes)}, 413, ""},
			{"a body one byte too large", "POST", "/pipelines/M/pause", padded(`{"reason":"r"}`, api.MaxBodyBytes+1), 413, ""},
			// The validator and the decoder read the same keys: a key in
			// another case, or twice, is refused before anything is read.
			{"a run date behind a key in another case", "POST", "/pipelines/M/runs",
				`{"reason":"x","run_date":"2020-01-02","Run_date":"not-a-date; DROP TABLE x"}`, 400, ""},
			{"February 30 behind a key in another case", "POST", "/pipelines/M/runs", `{"run_date":"2020-02-30","RUN_DATE":"2020-01-02"}`, 400, ""},
			{"a blank reason behind a key in another case", "POST", "/pipelines/M/pause", `{"reason":"ok","Reason":" "}`, 400, ""},
			{"a key twice", "POST", "/pipelines/M/pause", `{"reason":"a","reason":"b"}`, 400, ""},
			{"a role behind a key in another case", "POST", "/tokens", `{"name":"x","role":"viewer","ROLE":"admin"}`, 400, ""},
			{"a key in another case alone", "POST", "/pipelines/M/runs", `{"Run_date":"2020-01-02"}`, 422, "Run_date"},
			// Free text holds no control or format character.
			{"a reason with terminal escapes", "POST", "/pipelines/M/pause",
				map[string]any{"reason": "\x1b[2J\x1b[31mFAKE: all good\x1b[0m"}, 400, "reason"},
			{"a trigger reason with a bell", "POST", "/pipelines/M/runs", map[string]any{"reason": "ring\a"}, 400, "reason"},
			{"a cancel reason with a NUL", "POST", fmt.Sprintf("/runs/%d/cancel", active), map[string]any{"reason": "a\x00b"}, 400, "reason"},
			{"a mark reason with a line break", "POST", fmt.Sprintf("/runs/%d/tasks/load/mark", active),
				map[string]any{"status": "SUCCESS", "reason": "a\nFAKE"}, 400, "reason"},
			{"a token name with a zero-width space", "POST", "/tokens", map[string]any{"name": "a\u200bb", "role": "viewer"}, 400, "name"},
			{"a pipeline code with an escape", "POST", "/pipelines/M%1B%5B2J/pause", map[string]any{"reason": "r"}, 400, "code"},
			// One rule for a token's role, the command line's.
			{"a role in capitals", "POST", "/tokens", map[string]any{"name": "x", "role": "ADMIN"}, 422, "role"},
		}
		for _, c := range cases {
			got := w.call(w.tk.admin, c.method, c.path, c.body)
			var e report.Error
			got.decode(t, &e)
			field := ""
			if e.Field != nil {
				field = *e.Field
			}
			if got.status != c.status || field != c.field || e.ExitCode != 2 || e.ErrorClass != "UsageError" {
				t.Errorf("%s: got %d field %q exit %d class %s, want %d field %q\n%s", c.name, got.status, field, e.ExitCode, e.ErrorClass,
					c.status, c.field, got.body)
			}
			if c.field != "" && !strings.Contains(e.Message, c.field) {
				t.Errorf("%s: the message does not name %s: %s", c.name, c.field, e.Message)
			}
		}
		if after := w.snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("refused requests changed the Engine DB:\nbefore %v\nafter  %v", before, after)
		}
	})
}

// padded returns the JSON object text followed by spaces to n bytes.
func padded(object string, n int) string {
	return object + strings.Repeat(" ", n-len(object))
}

// Domain refusals map to their statuses, with the error class, message and
// exit code the command line would give, and a run id never falls back to
// another run.
func TestDomainErrorsMapToStatuses(t *testing.T) {
	eachKind(t, func(t *testing.T, f *fixture) {
		w := newWorld(t, f)
		cases := []struct {
			name, method, path string
			body               any
			status             int
			class              string
			exit               int
			says               string
		}{
			{"unknown pipeline", "GET", "/pipelines/PX", nil, 404, "MetadataError", 4, "did you mean P"},
			{"unknown pipeline's runs", "GET", "/pipelines/NOPE/runs", nil, 404, "MetadataError", 4, "NOPE"},
			{"unknown run", "GET", "/runs/999999", nil, 404, "ResourceNotFoundError", 24, "999999"},
			{"unknown attempt", "GET", "/attempts/999999", nil, 404, "ResourceNotFoundError", 24, "999999"},
			{"unknown task", "GET", fmt.Sprintf("/runs/%d/tasks/nope/explain", w.done), nil, 404, "MetadataError", 4, "nope"},
			{"cancel an ended run", "POST", fmt.Sprintf("/runs/%d/cancel", w.done), map[string]any{"reason": "r"}, 409, "RunStateError", 9, ""},
			{"resume a pipeline not paused", "POST", "/pipelines/P/resume", map[string]any{"reason": "r"}, 409, "RunStateError", 9, "not paused"},
			{"revoke an unknown token", "POST", "/tokens/999999/revoke", nil, 404, "ResourceNotFoundError", 24, ""},
			{"a second live token of a name", "POST", "/tokens", map[string]any{"name": "dashboard", "role": "viewer"}, 400, "UsageError", 2, "dashboard"},
			{"no such endpoint", "GET", "/nothing", nil, 404, "UsageError", 2, "/api/v1/docs"},
		}
		for _, c := range cases {
			var got response
			if c.path == "/nothing" {
				got = w.rawCall(w.tk.admin, c.method, c.path)
			} else {
				got = w.call(w.tk.admin, c.method, c.path, c.body)
			}
			var e report.Error
			got.decode(t, &e)
			if got.status != c.status || e.ErrorClass != c.class || e.ExitCode != c.exit || !strings.Contains(e.Message, c.says) {
				t.Errorf("%s: got %d %s exit %d %q, want %d %s exit %d saying %q", c.name, got.status, e.ErrorClass, e.ExitCode, e.Message,
					c.status, c.class, c.exit, c.says)
			}
		}
	})
}

// rawCall sends a request the OpenAPI document has no operation for.
func (f *fixture) rawCall(token, method, path string) response {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+api.Prefix+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return response{status: res.StatusCode, body: body}
}

// A run triggered by an operator token is the exact run the answer names,
// started by the token's name and left for the overseer, which runs it to
// SUCCESS; AUD_ACTIONS holds the request, and the run's pages list it.
func TestTriggerLeavesTheRunToTheOverseer(t *testing.T) {
	eachKind(t, func(t *testing.T, f *fixture) {
		w := newWorld(t, f)
		got := w.call(w.tk.operator, "POST", "/pipelines/P/runs", map[string]any{"run_date": "2026-03-01", "reason": "month end"})
		var out struct {
			Schema        string `json:"schema"`
			PipelineRunID *int64 `json:"pipeline_run_id"`
			Status        string `json:"status"`
		}
		got.decode(t, &out)
		if got.status != http.StatusAccepted || out.Schema != "etl-craft/run-outcome/1" || out.PipelineRunID == nil {
			t.Fatalf("trigger: %d %s", got.status, got.body)
		}
		id := *out.PipelineRunID
		var r struct {
			ID        int64   `json:"pipeline_run_id"`
			Status    string  `json:"status"`
			RunDate   *string `json:"run_date"`
			StartedBy *string `json:"started_by"`
			Kind      *string `json:"started_by_kind"`
		}
		w.call(w.tk.viewer, "GET", fmt.Sprintf("/runs/%d", id), nil).decode(t, &r)
		if r.ID != id || r.Status != string(records.RunInProgress) || r.RunDate == nil || *r.RunDate != "2026-03-01" ||
			r.StartedBy == nil || *r.StartedBy != "chat-bot" || *r.Kind != "ORCHESTRATOR" {
			t.Fatalf("the triggered run: %+v", r)
		}
		if n := w.count("SELECT COUNT(*) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_RUN_ID = $1 AND OWNER_ID IS NULL", id); n != 1 {
			t.Fatal("the triggered run has an owner: the overseer could not take it")
		}
		if n := w.count(`SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND = 'api trigger' AND ACTOR = 'chat-bot' AND ACTOR_KIND = 'ORCHESTRATOR'
			AND CAST(ARGUMENTS AS TEXT) LIKE '%month end%'`); n != 1 {
			t.Fatalf("AUD_ACTIONS holds %d trigger requests", n)
		}
		// What the overseer does with an unowned run in progress.
		if done := w.runPipeline(run.Request{PipelineCode: "P", RunID: id}); done.Status != string(records.RunSuccess) || done.RunID != id {
			t.Fatalf("the overseer's run: %+v", done)
		}
		var page struct {
			Runs []struct {
				ID     int64  `json:"pipeline_run_id"`
				Status string `json:"status"`
			} `json:"runs"`
			NextBefore *int64 `json:"next_before"`
		}
		w.call(w.tk.viewer, "GET", "/pipelines/P/runs?limit=1", nil).decode(t, &page)
		if len(page.Runs) != 1 || page.Runs[0].ID != id || page.Runs[0].Status != "SUCCESS" || page.NextBefore == nil || *page.NextBefore != id {
			t.Fatalf("first page: %+v", page)
		}
		w.call(w.tk.viewer, "GET", fmt.Sprintf("/pipelines/P/runs?limit=1&before=%d", id), nil).decode(t, &page)
		if len(page.Runs) != 1 || page.Runs[0].ID != w.done || page.NextBefore != nil {
			t.Fatalf("second page: %+v", page)
		}
	})
}

// The OpenAPI document and the interactive docs are public.
func TestOpenAPIAndDocsArePublic(t *testing.T) {
	f := newFixture(t, engine.SQLite)
	for _, path := range []string{"/openapi.json", "/docs"} {
		res, err := http.Get(f.srv.URL + api.Prefix + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", path, res.StatusCode)
		}
	}
}

// While the Engine DB is unavailable every endpoint answers 503, token
// checks included, and the API answers again once it is back.
func TestEngineDBUnavailable(t *testing.T) {
	f := newFixture(t, engine.Postgres)
	tk := f.newTokens()
	if got := f.call(tk.viewer, "GET", "/health", nil); got.status != http.StatusOK {
		t.Fatalf("health: %d %s", got.status, got.body)
	}
	admin, err := sql.Open("pgx", enginetest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	u, _ := url.Parse(f.opts.DSN)
	name := strings.TrimPrefix(u.Path, "/")
	exec := func(q string) {
		if _, err := admin.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	exec("ALTER DATABASE " + name + " WITH ALLOW_CONNECTIONS false")
	exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "' AND pid <> pg_backend_pid()")
	for _, path := range []string{"/health", "/pipelines", "/runs/1"} {
		got := f.call(tk.viewer, "GET", path, nil)
		var e report.Error
		got.decode(t, &e)
		if got.status != http.StatusServiceUnavailable || e.Status != 503 {
			t.Errorf("%s with the Engine DB down: %d %s", path, got.status, got.body)
		}
	}
	exec("ALTER DATABASE " + name + " WITH ALLOW_CONNECTIONS true")
	if got := f.call(tk.viewer, "GET", "/health", nil); got.status != http.StatusOK {
		t.Fatalf("health once the Engine DB is back: %d %s", got.status, got.body)
	}
}

// Each request's log record names the token's name, never a token value.
func TestLogsNameTheActorNeverTheToken(t *testing.T) {
	f := newFixture(t, engine.SQLite)
	tk := f.newTokens()
	var logs strings.Builder
	srv := httptest.NewServer(api.New(f.p, api.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))
	defer srv.Close()
	for _, token := range []string{tk.viewer, tk.revoked, "made-up"} {
		req, _ := http.NewRequest("GET", srv.URL+api.Prefix+"/health", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	text := logs.String()
	if !strings.Contains(text, "actor=dashboard") || !strings.Contains(text, "status=401") {
		t.Errorf("the log does not say who asked and what they got:\n%s", text)
	}
	for _, v := range []string{tk.viewer, tk.revoked, "made-up"} {
		if strings.Contains(text, v) {
			t.Errorf("the log holds a token value:\n%s", text)
		}
	}
}
