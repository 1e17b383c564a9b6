package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/server/api"
)

// A state-changing request that cannot be recorded in AUD_ACTIONS does not
// act: while another process holds what a long migration holds (SQLite's
// write lock, a lock on AUD_ACTIONS on PostgreSQL), pause, trigger and
// token creation answer 503 once the busy timeout is over, naming the
// other process, and the Engine DB is left exactly as it was: nothing
// acted, nothing recorded half-way. Once it is free, the same requests act
// and are recorded.
func TestARequestThatCannotBeRecordedDoesNotAct(t *testing.T) {
	for _, k := range enginetest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			if k == engine.Postgres {
				enginetest.AdminURL(t)
			}
			f := newFixtureWith(t, k, "    busy_timeout_seconds: 1\n")
			f.b.Pipeline("M", "FULL")
			f.sqlTask("M", "load")
			tk := f.newTokens()
			before := f.snapshot()
			holder := map[engine.Kind]string{engine.SQLite: "another process holds the Engine DB's write lock",
				engine.Postgres: "another session holds a lock"}[k]
			requests := []struct {
				token, path string
				body        any
				status      int
			}{
				{tk.operator, "/pipelines/M/pause", map[string]any{"reason": "while locked"}, http.StatusOK},
				{tk.operator, "/pipelines/M/runs", map[string]any{"reason": "while locked"}, http.StatusAccepted},
				{tk.admin, "/tokens", map[string]any{"name": "while-locked", "role": "viewer"}, http.StatusCreated},
			}
			release := enginetest.HoldWriteLock(t, f.opts)
			for _, r := range requests {
				got := f.call(r.token, "POST", r.path, r.body)
				var e report.Error
				got.decode(t, &e)
				if got.status != http.StatusServiceUnavailable || e.ExitCode != 12 ||
					!strings.Contains(e.Message, "not carried out") || !strings.Contains(e.Message, holder) {
					t.Errorf("POST %s while another process holds the lock: %d %s", r.path, got.status, got.body)
				}
			}
			release()
			if after := f.snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("requests that could not be recorded changed the Engine DB:\nbefore %v\nafter  %v", before, after)
			}
			for _, r := range requests {
				if got := f.call(r.token, "POST", r.path, r.body); got.status != r.status {
					t.Errorf("POST %s once the lock is free: %d %s", r.path, got.status, got.body)
				}
			}
			if n := f.count("SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND IN ('api pause', 'api trigger', 'api token create')"); n != 3 {
				t.Errorf("%d requests recorded once the lock is free, want 3", n)
			}
		})
	}
}

// The answers of a hostile client's requests: strict bodies name what was
// wrong; a body of exactly 64 KiB is taken; headers over the limit, a
// second Authorization header and a method a path does not take are
// refused with error documents; every answer is marked no-store and
// nosniff; a token that does not authenticate is not described.
func TestHostileRequests(t *testing.T) {
	f := newFixture(t, engine.SQLite)
	w := newWorld(t, f)
	send := func(method, path, body string, header http.Header) (*http.Response, report.Error, string) {
		t.Helper()
		req, err := http.NewRequest(method, f.srv.URL+api.Prefix+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		if req.Header == nil {
			req.Header = http.Header{"Authorization": {"Bearer " + w.tk.admin}}
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var e report.Error
		if res.StatusCode >= 400 {
			if err := json.Unmarshal(raw, &e); err != nil || e.Schema != "etl-craft/error/1" || e.Status != res.StatusCode {
				t.Errorf("%s %s: %d is no error document: %s", method, path, res.StatusCode, raw)
			}
		}
		if res.Header.Get("Cache-Control") != "no-store" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s (%d): Cache-Control %q, X-Content-Type-Options %q", method, path, res.StatusCode,
				res.Header.Get("Cache-Control"), res.Header.Get("X-Content-Type-Options"))
		}
		return res, e, string(raw)
	}
	bearer := func(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

	// Strict bodies: the message names the keys.
	if res, e, _ := send("POST", "/pipelines/M/runs", `{"reason":"x","run_date":"2020-01-02","Run_date":"not-a-date; DROP TABLE x"}`, nil); res.StatusCode != 400 ||
		!strings.Contains(e.Message, `"run_date" and "Run_date"`) {
		t.Errorf("case-variant keys: %d %s", res.StatusCode, e.Message)
	}
	if res, e, _ := send("POST", "/pipelines/M/pause", `{"reason":"a","reason":"b"}`, nil); res.StatusCode != 400 ||
		!strings.Contains(e.Message, `"reason" appears twice`) {
		t.Errorf("a key twice: %d %s", res.StatusCode, e.Message)
	}

	// 64 KiB exactly is taken; a byte more is not.
	if res, _, body := send("POST", "/pipelines/M/pause", padded(`{"reason":"a big body"}`, api.MaxBodyBytes), nil); res.StatusCode != 200 {
		t.Errorf("a body of exactly %d bytes: %d %s", api.MaxBodyBytes, res.StatusCode, body)
	}
	if res, e, _ := send("POST", "/pipelines/M/resume", padded(`{"reason":"a big body"}`, api.MaxBodyBytes+1), nil); res.StatusCode != 413 ||
		!strings.Contains(e.Message, "64 KiB") {
		t.Errorf("a body of %d bytes: %d %s", api.MaxBodyBytes+1, res.StatusCode, e.Message)
	}

	// Headers: the limit is stated, and refused with a document.
	big := bearer(w.tk.viewer)
	big.Set("X-Filler", strings.Repeat("x", api.MaxHeaderBytes))
	if res, e, _ := send("GET", "/health", "", big); res.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !strings.Contains(e.Message, "16 KiB") {
		t.Errorf("headers over %d bytes: %d %s", api.MaxHeaderBytes, res.StatusCode, e.Message)
	}
	big.Set("X-Filler", strings.Repeat("x", api.MaxHeaderBytes-1000))
	if res, _, body := send("GET", "/health", "", big); res.StatusCode != 200 {
		t.Errorf("headers under the limit: %d %s", res.StatusCode, body)
	}

	// Two Authorization headers: which one counts would be a guess.
	two := http.Header{"Authorization": {"Bearer " + w.tk.viewer, "Bearer " + w.tk.admin}}
	if res, e, _ := send("GET", "/tokens", "", two); res.StatusCode != 400 || !strings.Contains(e.Message, "Authorization") {
		t.Errorf("two Authorization headers: %d %s", res.StatusCode, e.Message)
	}

	// A method a path does not take.
	for _, c := range []struct{ method, path, allow string }{
		{"POST", "/health", "GET, HEAD"}, {"DELETE", "/pipelines/M", "GET, HEAD"}, {"GET", "/pipelines/M/pause", "POST"},
		{"PUT", "/tokens", "GET, HEAD, POST"},
	} {
		res, e, _ := send(c.method, c.path, "", bearer(w.tk.admin))
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != c.allow || e.ExitCode != 2 {
			t.Errorf("%s %s: %d, Allow %q, want 405 allowing %s: %s", c.method, c.path, res.StatusCode, res.Header.Get("Allow"), c.allow, e.Message)
		}
	}

	// Every answer, public ones and successes included, is no-store and
	// nosniff (send checks): the token's value is in one.
	send("GET", "/openapi.json", "", http.Header{})
	send("GET", "/nothing", "", nil)
	if res, _, body := send("POST", "/tokens", `{"name":"fresh","role":"viewer"}`, nil); res.StatusCode != 201 {
		t.Errorf("a token: %d %s", res.StatusCode, body)
	}

	// A token that does not authenticate: one message, whoever it was.
	var messages []string
	for _, token := range []string{w.tk.expired, w.tk.revoked, "made-up"} {
		res, e, _ := send("GET", "/health", "", bearer(token))
		if res.StatusCode != 401 {
			t.Errorf("a refused token: %d %s", res.StatusCode, e.Message)
		}
		for _, leak := range []string{"old-admin", "gone-admin", time.Now().UTC().Format("2006-01-02")} {
			if strings.Contains(e.Message, leak) {
				t.Errorf("the 401 message describes the token (%s): %s", leak, e.Message)
			}
		}
		messages = append(messages, e.Message)
	}
	if len(slices.Compact(messages)) != 1 {
		t.Errorf("the 401 messages tell the tokens apart: %q", messages)
	}
}
