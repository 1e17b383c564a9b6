package console_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The console in headless Chromium against a real server, on SQLite +
// DuckDB and PostgreSQL + PostgreSQL: a viewer reads and may not act; an
// operator triggers, reruns, cancels, pauses, resumes and marks, watching
// the open page follow; text with markup stays text; an admin makes and
// revokes a token; a revoked token's page goes to the sign-in form. The
// SQLite run takes the screenshots of docs/console.md and compares them,
// loosely, with those there.
func TestTheConsoleInABrowser(t *testing.T) {
	t.Parallel()
	for _, pair := range []e2e.Pair{e2e.SQLiteDuckDB, e2e.PostgresPostgres} {
		t.Run(pair.String(), func(t *testing.T) {
			t.Parallel()
			if pair.Engine == engine.Postgres {
				enginetest.AdminURL(t)
			}
			consoleInABrowser(t, pair, pair == e2e.SQLiteDuckDB)
		})
	}
}

// tab is a browser tab on a server's console.
type tab struct {
	t        *testing.T
	ctx      context.Context
	base     string
	problems func() []string
	dialogs  *atomic.Int32
	shots    bool
	// forged counts the forged requests refused.
	forged int
}

// newTab opens a browser of 1280 × 800, counting the dialogs its pages
// open (and closing them).
func newTab(t *testing.T, base string, shots bool) *tab {
	ctx, problems := e2e.Browser(t, 1280, 800)
	b := &tab{t: t, ctx: ctx, base: base, problems: problems, dialogs: &atomic.Int32{}, shots: shots}
	e2e.Do(t, ctx, chromedp.Navigate("about:blank"))
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			b.dialogs.Add(1)
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return b
}

// open opens a page of the console and waits for its heading.
func (b *tab) open(path string) {
	b.t.Helper()
	e2e.Do(b.t, b.ctx, chromedp.Navigate(b.base+path), chromedp.WaitVisible(chromedp.CSS("h1")))
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *tab, js string) T {
	b.t.Helper()
	return e2e.Eval(b.t, b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
}

// wait waits until the JavaScript expression is true in the page (see
// waitUntil).
func (b *tab) wait(what, js string) {
	b.t.Helper()
	waitUntil(b.t, b.ctx, what, js)
}

// waitUntil waits until the JavaScript expression is true in the tab, for
// at most e2e.Patience, without reloading it. A page that goes away while
// it waits (a form sends the browser on) is waited on in the next. On
// failure it says what the page reads.
func waitUntil(t testing.TB, ctx context.Context, what, js string) {
	t.Helper()
	deadline := time.Now().Add(e2e.Patience)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`location.pathname + "\n" + document.body.innerText`))
			t.Fatalf("waiting until %s (%v), the page reads:\n%s", what, err, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// signIn signs in with the token through the form.
func (b *tab) signIn(token string) {
	b.t.Helper()
	b.open("/signin")
	e2e.Do(b.t, b.ctx, chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")))
	b.wait("signed in", `location.pathname === "/pipelines" && document.readyState === "complete"`)
}

// signOut signs out with the header's button.
func (b *tab) signOut() {
	b.t.Helper()
	e2e.Do(b.t, b.ctx, chromedp.Click(chromedp.CSS(`header form[action="/signout"] button`)))
	b.wait("signed out", `location.pathname === "/signin"`)
}

// submit fills the form's fields (CSS selector, value) and submits it,
// then waits for the page it leads back to.
func (b *tab) submit(formSel string, fields ...string) {
	b.t.Helper()
	var steps []chromedp.Action[chromedp.Void]
	for i := 0; i+1 < len(fields); i += 2 {
		steps = append(steps, chromedp.SetValue(chromedp.CSS(formSel+" "+fields[i]), fields[i+1]))
	}
	steps = append(steps, chromedp.Evaluate[chromedp.Void](`window.__before = true`),
		chromedp.Submit(chromedp.CSS(formSel+" button")))
	e2e.Do(b.t, b.ctx, steps...)
	b.wait("the page after "+formSel, `!window.__before && document.readyState === "complete" && !!document.querySelector("h1")`)
}

// mark sets a marker that a reload would lose.
func (b *tab) mark() { eval[bool](b, `window.__stay = true`) }

// stayed reports whether the page is the one marked.
func (b *tab) stayed() bool { return eval[bool](b, `window.__stay === true`) }

// flash is the page's flash message.
func (b *tab) flash() string {
	return eval[string](b, `(document.querySelector(".flash") || {}).textContent || ""`)
}

// postForms counts the state-changing forms of the page's main part.
func (b *tab) postForms() int {
	return eval[int](b, `document.querySelectorAll('main form[method="post"]').length`)
}

// shot takes the page's screenshot for the docs and compares it loosely
// with the one there.
func (b *tab) shot(name string) {
	b.t.Helper()
	if b.shots {
		e2e.LooksLike(b.t, e2e.Screenshot(b.t, b.ctx, name), name)
	}
}

// fetchStatus posts a form from the page's script, as a forger with the
// page's session would, and returns the answer's status. The browser logs
// each refusal as an error, which unexpected leaves out.
func (b *tab) fetchStatus(path, body string) int {
	status := eval[int](b, fmt.Sprintf(`fetch(%q, {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: %q, redirect: "manual"}).then(r => r.status)`,
		path, body))
	if status == 403 {
		b.forged++
	}
	return status
}

// unexpected is what the pages logged, but for the refusals of the
// forged requests.
func (b *tab) unexpected() []string {
	var out []string
	left := b.forged
	for _, p := range b.problems() {
		if left > 0 && strings.Contains(p, "status of 403 (Forbidden)") {
			left--
			continue
		}
		out = append(out, p)
	}
	return out
}

// csrf is the CSRF token of the page's session.
func (b *tab) csrf() string {
	return eval[string](b, `document.querySelector('input[name="csrf"]').value`)
}

func consoleInABrowser(t *testing.T, pair e2e.Pair, shots bool) {
	o := newOps(t, pair, "")
	viewerToken, operatorToken, adminToken := o.Token("vic", "viewer"), o.Token("olga", "operator"), o.Token("ada", "admin")
	s := o.StartServer()
	broken := s.Trigger(operatorToken, "BROKEN")
	if st := o.ended(broken); st != records.RunFailed {
		t.Fatalf("BROKEN's first run: %s", st)
	}
	if st := o.ended(s.Trigger(operatorToken, "SALES")); st != records.RunSuccess {
		t.Fatalf("SALES's first run: %s", st)
	}
	failed := e2e.Scalar(t, o.db, `SELECT a.ATTEMPT_ID FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
		JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID WHERE tr.PIPELINE_RUN_ID = $1 AND t.TASK_CODE = 'hostile'`, broken)
	brokenRun := "/runs/" + strconv.FormatInt(broken, 10)
	b := newTab(t, s.API, shots)

	// The sign-in form.
	b.open("/signin")
	b.shot("console-signin.png")

	// A viewer sees the pipelines, a pipeline, a run and a log, with no
	// action control.
	b.signIn(viewerToken)
	if got := eval[[]string](b, `[...document.querySelectorAll("#pipelines tbody tr[data-pipeline]")].map(r => r.dataset.pipeline)`); !slices.Equal(got, []string{"BROKEN", "SALES", "SLOW"}) {
		t.Errorf("the pipelines page lists %v", got)
	}
	if n := eval[int](b, `document.querySelectorAll('#pipelines tr[data-pipeline="BROKEN"] a.sq.st-bad').length`); n != 1 {
		t.Errorf("BROKEN's failed run is not a red square with its icon: %d", n)
	}
	checkUsable(b, brokenRun)
	b.shot("console-pipelines.png")
	for _, path := range []string{"/pipelines", "/pipelines/SALES", brokenRun, "/attempts/" + failed, brokenRun + "/tasks/after", "/server"} {
		b.open(path)
		if n := b.postForms(); n != 0 {
			t.Errorf("the viewer sees %d action form(s) on %s", n, path)
		}
	}
	b.open("/pipelines/SALES")
	if rows, nodes := eval[int](b, `document.querySelectorAll("#grid tbody tr").length`), eval[int](b, `document.querySelectorAll("#graph g.node").length`); rows != 3 || nodes != 3 {
		t.Errorf("SALES' grid has %d row(s), its graph %d node(s)", rows, nodes)
	}
	b.shot("console-pipeline.png")

	// Hostile text in an error message and a log is shown as text: no
	// script runs, no image is made, no dialog opens.
	b.open(brokenRun)
	if got := eval[string](b, `document.querySelector('#tasks tr[data-task="hostile"] td.error summary').textContent`); !strings.Contains(got, hostile) {
		t.Errorf("the hostile error reads %q", got)
	}
	b.shot("console-run.png")
	b.open("/attempts/" + failed)
	if got := eval[string](b, `document.getElementById("log").textContent`); !strings.Contains(got, `<img src=x onerror=alert(2)>`) {
		t.Errorf("the log reads %q", got)
	}
	b.shot("console-log.png")
	b.open(brokenRun + "/tasks/hostile")
	b.shot("console-explain.png")
	for _, path := range []string{brokenRun, "/attempts/" + failed, brokenRun + "/tasks/hostile", "/server"} {
		b.open(path)
		if scripts, images := eval[int](b, `document.scripts.length`), eval[int](b, `document.images.length`); scripts != 1 || images != 0 {
			t.Errorf("%s has %d script(s) and %d image(s)", path, scripts, images)
		}
	}
	b.open("/server")
	b.shot("console-server.png")
	if n := b.dialogs.Load(); n != 0 {
		t.Errorf("%d dialog(s) opened", n)
	}

	// A forged POST with the viewer's session and CSRF token is refused,
	// and changes nothing.
	b.open("/pipelines/SALES")
	if status := b.fetchStatus("/pipelines/SALES/pause", "reason=forged&csrf="+b.csrf()); status != 403 {
		t.Errorf("the viewer's forged pause: %d", status)
	}
	if n := e2e.Count(t, o.db, "SELECT COUNT(*) FROM AUD_PIPELINE_PAUSES"); n != 0 || o.actions("console pause", "vic") != 0 {
		t.Errorf("the viewer's forged pause paused %d time(s)", n)
	}
	b.signOut()

	// An operator triggers a run and watches it turn SUCCESS on the page.
	b.signIn(operatorToken)
	b.open("/pipelines/SALES")
	b.submit("#trigger", "#trigger_reason", "from the console")
	if f := b.flash(); !strings.Contains(f, "SALES: pipeline_run_id=") {
		t.Errorf("the trigger's flash: %q", f)
	}
	b.mark()
	b.wait("the new run's column is SUCCESS", `document.querySelectorAll("#grid thead a.sq").length === 2 && !!document.querySelector("#grid thead th:last-child a.sq.st-ok")`)
	if !b.stayed() {
		t.Error("the page reloaded")
	}

	// It reruns the failed task with its downstream, and watches both
	// succeed on the run's page.
	b.open(brokenRun)
	e2e.Do(t, b.ctx, chromedp.Click(chromedp.CSS(`#rerun input[name="with_downstream"]`)))
	b.submit("#rerun", "#rerun_task", "hostile", "#rerun_reason", "fixed the input")
	b.mark()
	b.wait("hostile and after succeed", `!!document.querySelector('#tasks tr[data-task="hostile"] .st-ok') && !!document.querySelector('#tasks tr[data-task="after"] .st-ok')`)
	if !b.stayed() {
		t.Error("the run page reloaded")
	}

	// It follows a running attempt's log as it is written, then cancels
	// a running run.
	slow := s.Trigger(operatorToken, "SLOW")
	e2e.WaitFor(t, o.db, 1, `SELECT COUNT(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
		WHERE tr.PIPELINE_RUN_ID = $1 AND a.STATUS = 'RUNNING'`, slow)
	attempt := e2e.Scalar(t, o.db, `SELECT a.ATTEMPT_ID FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
		WHERE tr.PIPELINE_RUN_ID = $1`, slow)
	b.open("/attempts/" + attempt)
	b.mark()
	b.wait("the log shows the wait", `document.getElementById("log").textContent.includes("waiting for the release")`)
	if err := os.WriteFile(o.release, []byte("go ahead 7"), 0o644); err != nil {
		t.Fatal(err)
	}
	b.wait("the log shows the release", `document.getElementById("log").textContent.includes("released: go ahead 7")`)
	b.wait("the attempt's status is SUCCESS", `!!document.querySelector(".attempt-status .st-ok")`)
	if !b.stayed() {
		t.Error("the log page reloaded")
	}
	o.ended(slow)
	os.Remove(o.release)
	slow = s.Trigger(operatorToken, "SLOW")
	e2e.WaitFor(t, o.db, 1, `SELECT COUNT(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
		WHERE tr.PIPELINE_RUN_ID = $1 AND a.STATUS = 'RUNNING'`, slow)
	b.open("/runs/" + strconv.FormatInt(slow, 10))
	b.submit("#cancel", "#cancel_reason", "not needed today")
	b.mark()
	b.wait("the run is CANCELLED", `!!document.querySelector(".run-status .st-stop")`)
	if st := o.ended(slow); st != records.RunCancelled || !b.stayed() {
		t.Errorf("the cancelled run: %s (the page stayed: %t)", st, b.stayed())
	}

	// It pauses and resumes a pipeline, and marks a task.
	b.open("/pipelines/SALES")
	b.submit("#pause", "#pause_reason", "holiday freeze")
	if f := b.flash(); !strings.Contains(f, "SALES: paused") || eval[int](b, `document.querySelectorAll("#pipeline-head .st-stop").length`) != 1 {
		t.Errorf("the pause: %q", f)
	}
	b.submit("#resume", "#pause_reason", "freeze over")
	if f := b.flash(); !strings.Contains(f, "SALES: resumed") {
		t.Errorf("the resume: %q", f)
	}
	last := e2e.Scalar(t, o.db, "SELECT MAX(r.PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG r JOIN CFG_PIPELINES p ON p.PIPELINE_ID = r.PIPELINE_ID WHERE p.PIPELINE_CODE = 'SALES'")
	b.open("/runs/" + last)
	b.submit("#mark", "#mark_task", "report", "#mark_status", string(records.TaskFailed), "#mark_reason", "the figures are wrong")
	// The server takes the reopened run up at once and runs the marked task
	// again, so the page may already show its next attempt: the flash and
	// the Engine DB's intervention are what say the mark was made.
	if f := b.flash(); !strings.Contains(f, "SALES.report: marked "+string(records.TaskFailed)) {
		t.Errorf("the mark: %q", f)
	}
	if n := e2e.Count(t, o.db, "SELECT count(*) FROM AUD_RUN_INTERVENTIONS WHERE PIPELINE_RUN_ID = $1 AND TO_STATUS = $2", last, records.TaskFailed); n != 1 {
		t.Errorf("the mark left %d intervention(s) on run %s, not 1", n, last)
	}
	for _, verb := range []string{"trigger", "rerun", "cancel", "pause", "resume", "mark"} {
		if n := o.actions("console "+verb, "olga"); n != 1 {
			t.Errorf("console %s recorded %d time(s) as olga", verb, n)
		}
	}

	// A POST without the CSRF token is refused, and changes nothing.
	if status := b.fetchStatus("/pipelines/SALES/pause", "reason=no+token"); status != 403 {
		t.Errorf("a pause without the CSRF token: %d", status)
	}
	if n := e2e.Count(t, o.db, "SELECT COUNT(*) FROM AUD_PIPELINE_PAUSES WHERE RESUMED_AT IS NULL"); n != 0 {
		t.Errorf("the pause without a CSRF token paused SALES")
	}
	b.signOut()

	// An admin makes a token, whose value the page shows once, and revokes
	// it.
	b.signIn(adminToken)
	b.open("/tokens")
	b.submit("#create-token", "#name", "bot-x", "#role", "viewer", "#expires", "30d")
	value := eval[string](b, `document.getElementById("token-value").textContent`)
	if len(value) < 40 || e2e.Count(t, o.db, "SELECT COUNT(*) FROM CFG_API_TOKENS WHERE NAME = 'bot-x'") != 1 {
		t.Errorf("the new token's value: %q", value)
	}
	// The docs' screenshot shows no token's value, not even a test's.
	eval[bool](b, `(e => { e.textContent = e.textContent.replace(/./g, "•"); return true })(document.getElementById("token-value"))`)
	b.shot("console-tokens.png")
	id := e2e.Scalar(t, o.db, "SELECT TOKEN_ID FROM CFG_API_TOKENS WHERE NAME = 'bot-x'")
	b.open("/tokens")
	if strings.Contains(eval[string](b, `document.body.textContent`), value) {
		t.Error("the tokens page shows the value again")
	}
	b.submit(`tr[data-token="` + id + `"] form`)
	if f := b.flash(); !strings.Contains(f, "bot-x") || e2e.Count(t, o.db, "SELECT COUNT(*) FROM CFG_API_TOKENS WHERE NAME = 'bot-x' AND REVOKED_AT IS NOT NULL") != 1 {
		t.Errorf("the revoke: %q", f)
	}
	if o.actions("console token create", "ada") != 1 || o.actions("console token revoke", "ada") != 1 {
		t.Error("the token's creation and revocation are not both recorded as ada")
	}

	// A token revoked while its page is open: the page's next change sends
	// it to the sign-in form.
	b.open("/pipelines")
	b.wait("the page is live", `document.getElementById("live").dataset.state === "on"`)
	o.OK("token", "revoke", "--token-id", e2e.Scalar(t, o.db, "SELECT TOKEN_ID FROM CFG_API_TOKENS WHERE NAME = 'ada'"))
	o.OK("pause", "--pipeline_code", "SLOW", "--reason", "to move the page")
	b.wait("the revoked session's page is at the sign-in form", `location.pathname === "/signin"`)

	if p := b.unexpected(); len(p) > 0 {
		t.Errorf("the pages logged problems:\n%s", strings.Join(p, "\n"))
	}
	if n := b.dialogs.Load(); n != 0 {
		t.Errorf("%d dialog(s) opened", n)
	}
}

// checkUsable checks the page at hand for keyboard use, the run's page
// for the viewer's time zone, and the pipelines at a phone's width.
func checkUsable(b *tab, run string) {
	b.t.Helper()
	// The first Tab reaches the skip link; "/" goes to the search box.
	e2e.Do(b.t, b.ctx, chromedp.KeyEvent("\t"))
	if got := eval[string](b, `document.activeElement.className`); got != "skip" {
		b.t.Errorf("the first Tab focuses %q, not the skip link", got)
	}
	e2e.Do(b.t, b.ctx, chromedp.Evaluate[chromedp.Void](`document.activeElement.blur()`), chromedp.KeyEvent("/"))
	if got := eval[string](b, `document.activeElement.id`); got != "q" {
		b.t.Errorf(`"/" focuses %q, not the search box`, got)
	}
	// Times are written in the viewer's time zone, UTC on hover.
	if _, err := chromedp.Call(b.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Asia/Kolkata"}); err != nil {
		b.t.Fatal(err)
	}
	b.open(run)
	text, title := eval[string](b, `document.querySelector("time").textContent`), eval[string](b, `document.querySelector("time").title`)
	if !strings.Contains(text, "GMT+5:30") || !strings.HasSuffix(title, " UTC") {
		b.t.Errorf("a time reads %q, on hover %q", text, title)
	}
	if _, err := chromedp.Call(b.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "UTC"}); err != nil {
		b.t.Fatal(err)
	}
	// At a phone's width the page does not scroll sideways: its tables
	// scroll in their own box.
	e2e.Do(b.t, b.ctx, chromedp.EmulateViewport(390, 844))
	b.open("/pipelines")
	if wide := eval[int](b, `document.documentElement.scrollWidth`); wide > 390 {
		b.t.Errorf("at 390 pixels the page is %d wide", wide)
	}
	b.shot("console-phone.png")
	e2e.Do(b.t, b.ctx, chromedp.EmulateViewport(1280, 800))
	b.open("/pipelines")
}
