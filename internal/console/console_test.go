package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// signinForm opens the sign-in page with a client of its own and returns
// the client and the form's value.
func signinForm(t *testing.T, base string) (*http.Client, string) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(base + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := regexp.MustCompile(`name="form" value="([^"]+)"`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("the sign-in page has no form value:\n%s", b)
	}
	return client, m[1]
}

// A sign-in checks the token as the API does and keeps a session in an
// HttpOnly, SameSite=Strict cookie (Secure behind a TLS proxy); the
// Engine DB keeps the session's hash, never the cookie's value or the
// token; the sign-in and the sign-out are recorded; after a sign-out the
// cookie leads to the sign-in page.
func TestSignInKeepsASessionNotTheToken(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		o := newOps(t, e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}, "")
		token := o.Token("vic", "viewer")
		s := o.StartServer()

		// Without a session every page leads to the sign-in form, and back.
		client, value := signinForm(t, s.API)
		res, err := client.Get(s.API + "/runs/1")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin?next=%2Fruns%2F1" {
			t.Errorf("a page without a session: %d %s", res.StatusCode, res.Header.Get("Location"))
		}

		post := func(client *http.Client, values url.Values, header ...string) (*http.Response, string) {
			req, _ := http.NewRequest(http.MethodPost, s.API+"/signin", strings.NewReader(values.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return res, string(b)
		}
		// A wrong token, a form value of another browser: refused, with
		// nothing stored or recorded.
		if res, body := post(client, form("form", value, "token", token+"x")); res.StatusCode != http.StatusUnauthorized ||
			!strings.Contains(body, "the API token is not valid") {
			t.Errorf("a wrong token: %d\n%s", res.StatusCode, body)
		}
		other, _ := signinForm(t, s.API)
		if res, body := post(other, form("form", value, "token", token)); res.StatusCode != http.StatusForbidden {
			t.Errorf("another browser's form value: %d\n%s", res.StatusCode, body)
		}
		if n := e2e.Count(t, o.db, "SELECT COUNT(*) FROM CONSOLE_SESSIONS"); n != 0 || o.actions("console sign-in", "vic") != 0 {
			t.Errorf("refused sign-ins left %d session(s)", n)
		}

		// The right token: a session, and a sign-in recorded as vic.
		client, value = signinForm(t, s.API)
		res, _ = post(client, form("form", value, "token", token, "next", "//evil.example/x"))
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/pipelines" {
			t.Errorf("signing in: %d %s (a next of another site must not be followed)", res.StatusCode, res.Header.Get("Location"))
		}
		var cookie *http.Cookie
		for _, c := range res.Cookies() {
			if c.Name == "etl_craft_session" {
				cookie = c
			}
		}
		if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Secure || cookie.Path != "/" {
			t.Fatalf("the session cookie: %+v", cookie)
		}
		stored := e2e.Scalar(t, o.db, "SELECT SESSION_SHA256 FROM CONSOLE_SESSIONS")
		if stored == cookie.Value || strings.Contains(stored, token) || len(stored) != 64 {
			t.Errorf("CONSOLE_SESSIONS keeps %q for the cookie %q", stored, cookie.Value)
		}
		if o.actions("console sign-in", "vic") != 1 {
			t.Error("the sign-in is not recorded as vic")
		}
		c := e2e.SignIn(t, s.API, token)
		// Pages allow only the console's own script and style, inline none,
		// and may not be framed.
		res = c.Open("/pipelines")
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self';") ||
			strings.Contains(csp, "unsafe") || res.Header.Get("X-Frame-Options") != "DENY" || res.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("the pages' security headers: %q", res.Header)
		}
		for _, page := range []string{"/pipelines", "/server", "/search?q=SALES"} {
			if code, body := c.Get(page); code != http.StatusOK || strings.Contains(body, token) {
				t.Errorf("%s: %d (or it shows the token)", page, code)
			}
		}
		// Behind a TLS proxy the cookie is Secure.
		client, value = signinForm(t, s.API)
		if res, _ := post(client, form("form", value, "token", token), "X-Forwarded-Proto", "https"); !strings.Contains(
			strings.Join(res.Header.Values("Set-Cookie"), "\n"), "; Secure") {
			t.Errorf("over TLS the cookies are not Secure: %q", res.Header.Values("Set-Cookie"))
		}

		// Signing out ends the session and is recorded.
		before := e2e.Count(t, o.db, "SELECT COUNT(*) FROM CONSOLE_SESSIONS")
		if status, location, body := c.Post("/signout", c.CSRF(), nil); status != http.StatusSeeOther || location != "/signin" {
			t.Fatalf("signing out: %d %s\n%s", status, location, body)
		}
		if after := e2e.Count(t, o.db, "SELECT COUNT(*) FROM CONSOLE_SESSIONS"); after != before-1 || o.actions("console sign-out", "vic") != 1 {
			t.Errorf("signing out left %d of %d session(s)", after, before)
		}
		if code, _ := c.Get("/pipelines"); code != http.StatusUnauthorized {
			t.Errorf("the signed-out cookie opens a page: %d", code)
		}
	})
}

// A token revoked or expired after signing in ends its sessions at their
// next request: the page leads to the sign-in form.
func TestARevokedOrExpiredTokenEndsItsSessions(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		o := newOps(t, e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}, "")
		revoked, expiring := o.Token("gone", "operator"), o.Token("brief", "admin")
		s := o.StartServer()
		a, b := e2e.SignIn(t, s.API, revoked), e2e.SignIn(t, s.API, expiring)
		o.OK("token", "revoke", "--token-id", e2e.Scalar(t, o.db, "SELECT TOKEN_ID FROM CFG_API_TOKENS WHERE NAME = 'gone'"))
		if code, _ := a.Get("/pipelines"); code != http.StatusUnauthorized {
			t.Errorf("a revoked token's session: %d", code)
		}
		if status, _, _ := a.Post("/pipelines/SALES/pause", "x", form("reason", "after the revoke")); status != http.StatusForbidden {
			t.Errorf("a revoked token's session posts: %d", status)
		}
		err := o.db.Tx(actor.With(context.Background(), actor.Actor{Name: "tester", Kind: actor.Human}), func(tx *engine.Tx) error {
			_, err := tx.ExecContext(context.Background(), "UPDATE CFG_API_TOKENS SET EXPIRES_AT = $1 WHERE NAME = 'brief'",
				tx.TimeArg(time.Now().Add(-time.Second)))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if code, _ := b.Get("/tokens"); code != http.StatusUnauthorized {
			t.Errorf("an expired token's session: %d", code)
		}
	})
}

// Every state change is refused (403), changing and recording nothing,
// without a session, without the session's CSRF token, with another
// session's, or for a viewer; text that is no free text is refused (400).
// An operator's change with the token is made, and recorded as the
// console's.
func TestStateChangesNeedTheSessionsCSRFTokenAndTheRole(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		o := newOps(t, e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}, "")
		viewerToken, operatorToken := o.Token("vic", "viewer"), o.Token("olga", "operator")
		s := o.StartServer()
		viewer, operator := e2e.SignIn(t, s.API, viewerToken), e2e.SignIn(t, s.API, operatorToken)
		paused := func() int { return e2e.Count(t, o.db, "SELECT COUNT(*) FROM AUD_PIPELINE_PAUSES") }
		recorded := func() int {
			return e2e.Count(t, o.db, "SELECT COUNT(*) FROM AUD_ACTIONS WHERE COMMAND LIKE 'console %' AND COMMAND NOT LIKE 'console sign-%'")
		}
		for _, c := range []struct {
			name   string
			client *e2e.Console
			csrf   string
			reason string
			status int
		}{
			{"a viewer", viewer, viewer.CSRF(), "a viewer tries", http.StatusForbidden},
			{"no CSRF token", operator, "", "forged", http.StatusForbidden},
			{"another session's CSRF token", operator, viewer.CSRF(), "forged", http.StatusForbidden},
			{"a control character", operator, operator.CSRF(), "stop\x1b[2J", http.StatusBadRequest},
			{"too long a reason", operator, operator.CSRF(), strings.Repeat("x", 4001), http.StatusBadRequest},
		} {
			if status, _, body := c.client.Post("/pipelines/SALES/pause", c.csrf, form("reason", c.reason)); status != c.status {
				t.Errorf("%s: %d, want %d\n%s", c.name, status, c.status, body)
			}
		}
		if paused() != 0 || recorded() != 0 {
			t.Fatalf("refused requests paused %d time(s) and recorded %d action(s)", paused(), recorded())
		}
		// A backfill of two dates runs them, oldest first, and the page
		// follows what is left.
		page := operator.Act("/pipelines/SALES/backfill", form("first", "2026-01-01", "last", "2026-01-02", "reason", "late data"))
		if strings.Contains(page, "Refused") || o.actions("console backfill", "olga") != 1 {
			t.Errorf("the backfill:\n%s", page)
		}
		e2e.WaitFor(t, o.db, 2, "SELECT COUNT(*) FROM AUD_PIPELINES_RUN_LOG WHERE BACKFILL = 'Y' AND STATUS = $1", records.RunSuccess)
		// The page an action leads to says what it did, even when the page
		// the action left fetched itself meanwhile (it was live).
		status, location, _ := operator.Post("/pipelines/SALES/pause", operator.CSRF(), form("reason", "holiday freeze"))
		if _, live := operator.Live(location); status != http.StatusSeeOther || strings.Contains(live, "SALES: paused") {
			t.Errorf("the pause: %d; the live fetch of %s took its message", status, location)
		}
		_, page = operator.Get(location)
		if !strings.Contains(page, "SALES: paused") || paused() != 1 || o.actions("console pause", "olga") != 1 {
			t.Errorf("the operator's pause: %d pause(s), %d recorded\n%s", paused(), o.actions("console pause", "olga"), page)
		}
		// A refusal of the domain reads as the API's, on the page.
		page = operator.Act("/pipelines/SALES/pause", form("reason", "again"))
		if !strings.Contains(page, "Refused: SALES is already paused by olga (HUMAN)") {
			t.Errorf("pausing twice:\n%s", page)
		}
	})
}

// A change that cannot be recorded in AUD_ACTIONS first is not made: while
// another process holds the Engine DB's write lock past the busy timeout,
// the page says so and nothing changes.
func TestAChangeThatCannotBeRecordedIsNotMade(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		o := newOps(t, e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}, "")
		o.EditConfig("    schema: ", "    busy_timeout_seconds: 1\n    schema: ")
		token := o.Token("olga", "operator")
		s := o.StartServer()
		c := e2e.SignIn(t, s.API, token)
		csrf := c.CSRF()
		release := enginetest.HoldWriteLock(t, o.Engine)
		status, location, _ := c.Post("/pipelines/SALES/pause", csrf, form("reason", "while locked"))
		release()
		_, page := c.Get(location)
		if status != http.StatusSeeOther || !strings.Contains(page, "not carried out, because it could not be recorded in AUD_ACTIONS first") {
			t.Errorf("a change while the Engine DB is locked: %d\n%s", status, page)
		}
		if n := e2e.Count(t, o.db, "SELECT COUNT(*) FROM AUD_PIPELINE_PAUSES"); n != 0 || o.actions("console pause", "olga") != 0 {
			t.Errorf("the change that could not be recorded was made: %d pause(s)", n)
		}
	})
}

// Stored text (an error message, a log, a reason, a name) is shown as text:
// its markup escaped, its control characters written as escapes.
func TestStoredTextIsShownAsText(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		o := newOps(t, e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}, "")
		token := o.Token("olga", "operator")
		s := o.StartServer()
		id := s.Trigger(token, "BROKEN")
		o.ended(id)
		o.OK("pause", "--pipeline_code", "SLOW", "--reason", `<b onmouseover=alert(3)>bold</b>`)
		c := e2e.SignIn(t, s.API, token)
		attempt := e2e.Scalar(t, o.db, `SELECT a.ATTEMPT_ID FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
			WHERE tr.PIPELINE_RUN_ID = $1 AND a.STATUS = 'FAILED'`, id)
		for _, page := range []string{"/runs/" + strconv.FormatInt(id, 10), "/attempts/" + attempt, "/server", "/pipelines", "/pipelines/SLOW"} {
			_, body := c.Get(page)
			for _, raw := range []string{"<script>alert", "<img src=x", "<b onmouseover"} {
				if strings.Contains(body, raw) {
					t.Errorf("%s holds the markup %q unescaped", page, raw)
				}
			}
		}
		// The pipelines page filters by state and by text; the search finds
		// pipelines, tasks and runs.
		listed := func(path string) []string {
			_, body := c.Get(path)
			var codes []string
			for _, m := range regexp.MustCompile(`<tr data-pipeline="([^"]+)"`).FindAllStringSubmatch(body, -1) {
				codes = append(codes, m[1])
			}
			return codes
		}
		for path, want := range map[string]string{"/pipelines": "BROKEN SALES SLOW", "/pipelines?status=failed": "BROKEN",
			"/pipelines?status=paused": "SLOW", "/pipelines?status=never": "SALES SLOW", "/pipelines?text=sal": "SALES",
			"/pipelines?status=paused&text=sal": ""} {
			if got := strings.Join(listed(path), " "); got != want {
				t.Errorf("%s lists %q, want %q", path, got, want)
			}
		}
		for q, want := range map[string]string{"slo": `<a href="/pipelines/SLOW">SLOW</a>`, "hostil": `<a href="/pipelines/BROKEN">BROKEN</a> › hostile`,
			strconv.FormatInt(id, 10): fmt.Sprintf(`<a href="/runs/%d">run %d</a> of BROKEN`, id, id)} {
			if _, body := c.Get("/search?q=" + url.QueryEscape(q)); !strings.Contains(body, want) {
				t.Errorf("searching %q does not find %s", q, want)
			}
		}

		// The log writes the script's lines quoted: its quotes escaped.
		logged := strings.ReplaceAll(hostile, `"`, `\"`)
		_, body := c.Get("/attempts/" + attempt)
		if !strings.Contains(body, html.EscapeString("checking the input: "+logged)) {
			t.Errorf("the log does not show the hostile line as text:\n%s", body)
		}
		if code, log := c.Get("/attempts/" + attempt + "/log?download=1"); code != http.StatusOK || !strings.Contains(log, logged) {
			t.Errorf("the downloaded log: %d\n%s", code, log)
		}
	})
}

// The event stream tells an open page which tables changed, and its first
// event the version a page must show; a change made elsewhere (the command
// line) comes through. A server stopping ends the streams at once: with a
// stream open, it still stops within its (long) grace.
func TestTheEventStreamTellsAPageWhatChanged(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		o := newOps(t, e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}, "  Shutdown_grace_seconds: 600\n")
		token := o.Token("vic", "viewer")
		s := o.StartServer()
		c := e2e.SignIn(t, s.API, token)
		stream := openStream(t, c, "/events")
		if ev := stream.next(t); ev.name != "hello" || ev.data["version"] == "" {
			t.Fatalf("the first event: %+v", ev)
		}
		o.OK("pause", "--pipeline_code", "SALES", "--reason", "from the command line")
		for {
			ev := stream.next(t)
			if ev.name == "change" && strings.Contains(ev.raw, `"pauses"`) {
				break
			}
		}
		if code := s.Stop(); code != 0 {
			t.Errorf("the server stopped with %d", code)
		}
	})
}

// stream reads a text/event-stream.
type stream struct {
	events chan event
}

// event is one event of a stream: its name, its data as written and
// decoded.
type event struct {
	name, raw string
	data      map[string]any
}

// openStream opens the path's event stream with the session.
func openStream(t *testing.T, c *e2e.Console, path string) *stream {
	t.Helper()
	res := c.Open(path)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%s: %d %s", path, res.StatusCode, res.Header.Get("Content-Type"))
	}
	s := &stream{events: make(chan event, 64)}
	go func() {
		defer close(s.events)
		r := bufio.NewReader(res.Body)
		var ev event
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "" && ev.name != "":
				json.Unmarshal([]byte(ev.raw), &ev.data)
				s.events <- ev
				ev = event{}
			case strings.HasPrefix(line, "event: "):
				ev.name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.raw = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return s
}

// next returns the stream's next event, failing the test when none comes
// within e2e.Patience or the stream ends.
func (s *stream) next(t *testing.T) event {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(e2e.Patience):
		t.Fatal("no event came")
	}
	return event{}
}

// A server killed with kill -9 while a page's stream is open loses no
// session: the Engine DB keeps them, so the next server on it takes the
// same cookie and CSRF token, its stream starts at a version of its own
// (which makes an open page fetch itself once), and an action made there
// is recorded as the session's token.
func TestSessionsOutliveAKilledServer(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		o := newOps(t, e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}, "")
		token := o.Token("olga", "operator")
		first := o.StartServer()
		c := e2e.SignIn(t, first.API, token)
		csrf := c.CSRF()
		stream := openStream(t, c, "/events")
		hello := stream.next(t)
		first.Kill()
		for range stream.events {
		}

		second := o.StartServer()
		c.Base = second.API
		if code, _ := c.Get("/pipelines"); code != http.StatusOK {
			t.Fatalf("the session on the next server: %d", code)
		}
		again := openStream(t, c, "/events").next(t)
		if again.name != "hello" || again.data["version"] == hello.data["version"] {
			t.Errorf("the next server's stream starts with %+v, the killed one's with %+v", again, hello)
		}
		status, location, body := c.Post("/pipelines/SALES/pause", csrf, form("reason", "after the crash"))
		if status != http.StatusSeeOther || location != "/pipelines/SALES" {
			t.Fatalf("a pause with the session's CSRF token on the next server: %d %s\n%s", status, location, body)
		}
		if n := e2e.Count(t, o.db, "SELECT COUNT(*) FROM AUD_PIPELINE_PAUSES"); n != 1 || o.actions("console pause", "olga") != 1 {
			t.Errorf("the pause after the crash: %d pause(s), %d recorded", n, o.actions("console pause", "olga"))
		}
	})
}
