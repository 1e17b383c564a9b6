package email_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"slices"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/email"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// The tests record task runs of pipeline P in a SQLite Engine DB as the run
// engine would, then run the alert task of P, which sends to a real SMTP
// server on loopback. P has SQL tasks extract and load, an alert on_failure
// watching extract through a FAILURE dependency and load through ALWAYS,
// and another alert, other, whose outcome never counts.

const from = "etl@example.com"

type env struct {
	t          *testing.T
	db         *engine.DB
	b          *pipelinetest.Builder
	srv        *mailtest.Server
	pipelineID int64
	runID      int64
	enforceSLA bool
	logs       bytes.Buffer
}

func newEnv(t *testing.T, o mailtest.Options) *env {
	t.Helper()
	e := &env{t: t, db: pipelinetest.DB(t, engine.SQLite), srv: mailtest.Start(t, o)}
	e.b = pipelinetest.New(t, e.db)
	e.pipelineID = e.b.Pipeline("P", "FULL")
	e.b.Task("P", "extract", pipeline.HandlerSQL, nil)
	e.b.Task("P", "load", pipeline.HandlerSQL, nil)
	e.b.Task("P", "on_failure", pipeline.HandlerEmailAlert, nil)
	e.b.Task("P", "other", pipeline.HandlerEmailAlert, nil)
	e.b.Dep("P", "load", "P", "extract", pipeline.Success)
	e.b.Dep("P", "on_failure", "P", "extract", pipeline.Failure)
	e.b.Dep("P", "on_failure", "P", "load", pipeline.Always)
	e.runID = e.newRun("P", "IN-PROGRESS")
	e.taskRun("other", "FAILED", 1, "an alert's failure does not count", -1)
	return e
}

// newRun records a run of the pipeline with the status and returns its id.
func (e *env) newRun(code, status string) int64 {
	e.t.Helper()
	e.b.Exec("INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_DATE) VALUES ($1, $2, '2026-03-01')", e.b.PipelineID(code), status)
	var id int64
	if err := e.db.QueryRowContext(context.Background(), "SELECT MAX(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG").Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// taskRun records a task run of P's task under the run; rows < 0 leaves
// ROWS_WRITTEN NULL, an empty message ERROR_MESSAGE.
func (e *env) taskRun(code, status string, attempts int, message string, rows int64) {
	e.t.Helper()
	var msg, written any
	if message != "" {
		msg = message
	}
	if rows >= 0 {
		written = rows
	}
	e.b.Exec(`INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS, ATTEMPT_COUNT, ERROR_MESSAGE, ROWS_WRITTEN)
		VALUES ($1, $2, $3, $4, $5, $6)`, e.b.TaskID("P", code), e.runID, status, attempts, msg, written)
}

// params are an alert's usual parameters with the changes (an empty value
// removes one).
func params(changes ...string) map[string]string {
	p := map[string]string{
		"EMAIL_TO":      "ops@example.com|Data Team <team@example.com>",
		"EMAIL_SUBJECT": "[$$status] $$pipeline_code run $$pipeline_run_id",
		"EMAIL_BODY":    "Alert $$task_code of pipeline $$pipeline_id.\n$$error_message",
	}
	for i := 0; i+1 < len(changes); i += 2 {
		if changes[i+1] == "" {
			delete(p, changes[i])
		} else {
			p[changes[i]] = changes[i+1]
		}
	}
	return p
}

// alert runs one attempt of on_failure with the parameters.
func (e *env) alert(p map[string]string) (handler.Result, error) {
	settings := e.srv.Settings(from)
	h := email.New(e.db, email.Options{Mail: func() (*mail.Sender, error) { return mail.New(settings, nil) }, EnforceSLA: e.enforceSLA})
	return h.Run(context.Background(), &handler.Task{
		PipelineID: e.pipelineID, PipelineRunID: e.runID, TaskRunID: 999, AttemptNumber: 1,
		PipelineCode: "P", TaskCode: "on_failure", RefreshType: "FULL", Params: p,
		Log: slog.New(slog.NewTextHandler(&e.logs, nil)),
	})
}

// mustAlert runs the alert, which must succeed.
func (e *env) mustAlert(p map[string]string) handler.Result {
	e.t.Helper()
	r, err := e.alert(p)
	if err != nil {
		e.t.Fatalf("alert: %v\n%s", err, e.logs.String())
	}
	return r
}

// received is a message the server accepted, parsed, with LF line ends.
type received struct {
	mailtest.Message
	header     netmail.Header
	subject    string
	text, html string
}

// only returns the one message the server accepted.
func (e *env) only() received {
	e.t.Helper()
	msgs := e.srv.Messages()
	if len(msgs) != 1 {
		e.t.Fatalf("%d messages, want 1", len(msgs))
	}
	return parse(e.t, msgs[0])
}

// parse reads a message, which must have a plain and an HTML part.
func parse(t *testing.T, m mailtest.Message) received {
	t.Helper()
	p := mailtest.Parse(t, m.Data)
	if p.Text == "" || p.HTML == "" {
		t.Fatalf("a part is missing:\n%s", m.Data)
	}
	lf := strings.NewReplacer("\r\n", "\n")
	return received{Message: m, header: p.Header, subject: p.Subject, text: lf.Replace(p.Text), html: lf.Replace(p.HTML)}
}

// reported returns the value the result reported under the name.
func reported(r handler.Result, name string) string {
	for _, v := range r.Reported {
		if v.Name == name {
			return v.Value
		}
	}
	return ""
}

func TestTheEmailSummarisesTheRunAsTextAndHTML(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mailtest.Options{})
	e.taskRun("extract", "FAILED", 1, "Catalog Error: <raw> does not exist\nLINE 1", -1)
	e.taskRun("load", "SKIPPED", 1, "", -1)
	res := e.mustAlert(params())
	m := e.only()
	if m.From != from || !slices.Equal(m.To, []string{"ops@example.com", "team@example.com"}) {
		t.Fatalf("envelope %s → %v", m.From, m.To)
	}
	if got := m.header.Get("From"); got != "<"+from+">" && got != from {
		t.Errorf("From %q", got)
	}
	if got := m.header.Get("To"); !strings.Contains(got, "<ops@example.com>") || !strings.Contains(got, `"Data Team" <team@example.com>`) {
		t.Errorf("To %q", got)
	}
	if m.header.Get("Date") == "" || m.header.Get("Message-ID") == "" || m.header.Get("User-Agent") != "etl-craft" {
		t.Errorf("headers %v", m.header)
	}
	wantSubject := fmt.Sprintf("[FAILED] P run %d", e.runID)
	if m.subject != wantSubject || reported(res, "EMAIL_SUBJECT") != wantSubject {
		t.Errorf("subject %q, reported %q", m.subject, reported(res, "EMAIL_SUBJECT"))
	}
	wantBody := fmt.Sprintf("Alert on_failure of pipeline %d.\nextract: Catalog Error: <raw> does not exist\nLINE 1\n\n", e.pipelineID)
	if !strings.HasPrefix(m.text, wantBody) {
		t.Errorf("text body:\n%s", m.text)
	}
	for _, want := range []string{
		fmt.Sprintf("Pipeline P, run %d (manual:", e.runID), ", run date 2026-03-01, started ", "): FAILED\n",
		"\nTASK     HANDLER      STATUS   ATTEMPTS  ROWS WRITTEN\n" +
			"extract  SQL          FAILED   1\n" +
			"other    EMAIL_ALERT  FAILED   1\n" +
			"load     SQL          SKIPPED  1\n\n",
		"Errors:\n  extract: Catalog Error: <raw> does not exist\n    LINE 1\n",
	} {
		if !strings.Contains(m.text, want) {
			t.Errorf("text lacks %q:\n%s", want, m.text)
		}
	}
	if strings.Contains(m.text, "on_failure  EMAIL_ALERT") {
		t.Errorf("the alert lists itself:\n%s", m.text)
	}
	for _, want := range []string{
		"<p>Alert on_failure of pipeline ", "extract: Catalog Error: &lt;raw&gt; does not exist<br>\nLINE 1</p>",
		"<th>TASK</th><th>HANDLER</th><th>STATUS</th><th>ATTEMPTS</th><th>ROWS WRITTEN</th><th>ERROR</th>",
		`<td style="white-space: pre-wrap">extract</td><td style="white-space: pre-wrap">SQL</td><td style="white-space: pre-wrap">FAILED</td>`,
		"Catalog Error: &lt;raw&gt; does not exist\nLINE 1</td>",
	} {
		if !strings.Contains(m.html, want) {
			t.Errorf("HTML lacks %q:\n%s", want, m.html)
		}
	}
	if reported(res, "EMAIL_OUTCOME") != "FAILED" || reported(res, "EMAIL_SENT") != "Y" ||
		reported(res, "EMAIL_TO") != "ops@example.com|Data Team <team@example.com>" || reported(res, "EMAIL_WARNING") != "" {
		t.Errorf("reported %v", res.Reported)
	}
}

func TestEachOutcomeAndItsOverrides(t *testing.T) {
	t.Parallel()
	overrides := []string{
		"EMAIL_SUBJECT_SUCCESS", "all good: $$pipeline_code",
		"EMAIL_BODY_FAILED", "broken: $$error_message",
		"EMAIL_SUBJECT_COMPLETED_WITH_ERRORS", "$$status for $$task_code",
	}
	cases := []struct {
		name     string
		record   func(e *env)
		enforce  bool
		outcome  string
		subject  string
		bodyHead string
	}{
		{"success", func(e *env) {
			e.taskRun("extract", "SUCCESS", 1, "", 3)
			e.taskRun("load", "SUCCESS", 1, "", 5)
		}, false, "SUCCESS", "all good: P", "Alert on_failure of pipeline "},
		{"failed", func(e *env) {
			e.taskRun("extract", "FAILED", 2, "boom", -1)
			e.taskRun("load", "SKIPPED", 1, "", -1)
		}, false, "FAILED", "[FAILED] P run ", "broken: extract: boom\n"},
		{"cancelled", func(e *env) {
			e.taskRun("extract", "SUCCESS", 1, "", 3)
			e.taskRun("load", "CANCELLED", 1, "cancelled by ops", -1)
		}, false, "FAILED", "[FAILED] P run ", "broken: \n"},
		{"skipped", func(e *env) {
			e.taskRun("extract", "SUCCESS", 1, "", 0)
			e.taskRun("load", "SKIPPED", 1, "", -1)
		}, false, "COMPLETED_WITH_ERRORS", "COMPLETED_WITH_ERRORS for on_failure", "Alert "},
		{"retried", func(e *env) {
			e.taskRun("extract", "SUCCESS", 2, "", 3)
			e.taskRun("load", "SUCCESS", 1, "", 3)
		}, false, "COMPLETED_WITH_ERRORS", "COMPLETED_WITH_ERRORS for on_failure", "Alert "},
		{"succeeded with a message", func(e *env) {
			e.taskRun("extract", "SUCCESS", 1, "a warning", 3)
			e.taskRun("load", "SUCCESS", 1, "", 3)
		}, false, "COMPLETED_WITH_ERRORS", "COMPLETED_WITH_ERRORS for on_failure", "Alert "},
		{"a watcher with nothing to watch", func(e *env) {
			// cleanup runs only when extract fails, and after_cleanup after
			// it: both skipped, because extract did not fail.
			e.b.Task("P", "cleanup", pipeline.HandlerSQL, nil)
			e.b.Task("P", "after_cleanup", pipeline.HandlerSQL, nil)
			e.b.Dep("P", "cleanup", "P", "extract", pipeline.Failure)
			e.b.Dep("P", "after_cleanup", "P", "cleanup", pipeline.Success)
			e.taskRun("extract", "SUCCESS", 1, "", 3)
			e.taskRun("load", "SUCCESS", 1, "", 3)
			e.taskRun("cleanup", "SKIPPED", 0, "not run: its dependencies can never be met: upstream extract ended SUCCESS, which does not satisfy a FAILURE dependency", -1)
			e.taskRun("after_cleanup", "SKIPPED", 0, "not run: its dependencies can never be met: upstream cleanup ended SKIPPED, which does not satisfy a SUCCESS dependency", -1)
		}, false, "SUCCESS", "all good: P", "Alert "},
		{"a watcher of another pipeline's task too, skipped", func(e *env) {
			// Its gate may be why it was skipped: that counts.
			e.b.Pipeline("UP", "FULL")
			e.b.Task("UP", "u", pipeline.HandlerSQL, nil)
			e.b.Task("P", "cleanup", pipeline.HandlerSQL, nil)
			e.b.Dep("P", "cleanup", "P", "extract", pipeline.Failure)
			e.b.Dep("P", "cleanup", "UP", "u", pipeline.Success)
			e.taskRun("extract", "SUCCESS", 1, "", 3)
			e.taskRun("load", "SUCCESS", 1, "", 3)
			e.taskRun("cleanup", "SKIPPED", 0, "", -1)
		}, false, "COMPLETED_WITH_ERRORS", "COMPLETED_WITH_ERRORS for on_failure", "Alert "},
		{"skipped because a HAS_DATA dependency was not met", func(e *env) {
			e.b.Task("P", "publish", pipeline.HandlerSQL, nil)
			e.b.Dep("P", "publish", "P", "load", pipeline.HasData)
			e.taskRun("extract", "SUCCESS", 1, "", 3)
			e.taskRun("load", "SUCCESS", 1, "", 0)
			e.taskRun("publish", "SKIPPED", 0, "not run: its dependencies can never be met: upstream load ended SUCCESS with no rows written, which does not satisfy a HAS_DATA dependency", -1)
		}, false, "COMPLETED_WITH_ERRORS", "COMPLETED_WITH_ERRORS for on_failure", "Alert "},
		{"unfinished", func(e *env) {
			e.taskRun("extract", "IN-PROGRESS", 1, "", -1)
		}, false, "COMPLETED_WITH_ERRORS", "COMPLETED_WITH_ERRORS for on_failure", "Alert "},
		{"SLA breached, enforced", func(e *env) {
			e.taskRun("extract", "SUCCESS", 1, "", 3)
			e.taskRun("load", "SUCCESS", 1, "", 3)
			e.b.Exec("UPDATE AUD_PIPELINES_RUN_LOG SET SLA_STATUS = 'BREACHED' WHERE PIPELINE_RUN_ID = $1", e.runID)
		}, true, "COMPLETED_WITH_ERRORS", "COMPLETED_WITH_ERRORS for on_failure", "Alert "},
		{"SLA breached, not enforced", func(e *env) {
			e.taskRun("extract", "SUCCESS", 1, "", 3)
			e.taskRun("load", "SUCCESS", 1, "", 3)
			e.b.Exec("UPDATE AUD_PIPELINES_RUN_LOG SET SLA_STATUS = 'BREACHED' WHERE PIPELINE_RUN_ID = $1", e.runID)
		}, false, "SUCCESS", "all good: P", "Alert "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, mailtest.Options{})
			e.enforceSLA = c.enforce
			c.record(e)
			res := e.mustAlert(params(overrides...))
			m := e.only()
			if reported(res, "EMAIL_OUTCOME") != c.outcome || !strings.HasPrefix(m.subject, c.subject) ||
				!strings.HasPrefix(m.text, c.bodyHead) || !strings.Contains(m.text, "): "+c.outcome+"\n") {
				t.Fatalf("outcome %s, subject %q, text:\n%s", reported(res, "EMAIL_OUTCOME"), m.subject, m.text)
			}
			// The other alert's failure is not the run's error, and neither
			// is a watcher's having had nothing to watch.
			if strings.Contains(m.text, "an alert's failure does not count") || strings.Contains(m.html, "an alert's failure does not count") ||
				strings.Contains(m.text, "does not satisfy a FAILURE dependency") || strings.Contains(m.html, "does not satisfy a FAILURE dependency") {
				t.Errorf("errors that are not the run's are listed:\n%s", m.text)
			}
		})
	}
}

func TestTheSubjectIsOneLineOfAtMost200Characters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mailtest.Options{})
	e.taskRun("extract", "FAILED", 1, "first line\nsecond line", -1)
	long := strings.Repeat("é", 250)
	res := e.mustAlert(params("EMAIL_SUBJECT", "$$status:\n  $$error_message\n\n"+long))
	m := e.only()
	want := "FAILED: extract: first line second line " + strings.Repeat("é", 200-len("FAILED: extract: first line second line "))
	if m.subject != want || len([]rune(m.subject)) != mail.MaxSubject || reported(res, "EMAIL_SUBJECT") != want {
		t.Fatalf("subject %q (%d characters)", m.subject, len([]rune(m.subject)))
	}
}

func TestEmailOnStatusSendsOnlyOnTheListedOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mailtest.Options{})
	e.taskRun("extract", "SUCCESS", 1, "", 1)
	e.taskRun("load", "SUCCESS", 1, "", 1)
	res := e.mustAlert(params("EMAIL_ON_STATUS", "FAILED|COMPLETED_WITH_ERRORS"))
	if n := len(e.srv.Messages()); n != 0 {
		t.Fatalf("%d messages sent on SUCCESS", n)
	}
	if reported(res, "EMAIL_OUTCOME") != "SUCCESS" ||
		reported(res, "EMAIL_SENT") != "N (the outcome SUCCESS is not in EMAIL_ON_STATUS FAILED|COMPLETED_WITH_ERRORS)" {
		t.Fatalf("reported %v", res.Reported)
	}
	e.mustAlert(params("EMAIL_ON_STATUS", "failed | success"))
	if m := e.only(); !strings.HasPrefix(m.subject, "[SUCCESS] P run") {
		t.Fatalf("subject %q", m.subject)
	}
}

func TestRefusedRecipients(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mailtest.Options{Refuse: []string{"gone@example.com", "left@example.com"}})
	e.taskRun("extract", "SUCCESS", 1, "", 1)
	e.taskRun("load", "SUCCESS", 1, "", 1)
	res := e.mustAlert(params("EMAIL_TO", "ops@example.com|Gone <gone@example.com>"))
	if m := e.only(); !slices.Equal(m.To, []string{"ops@example.com"}) {
		t.Fatalf("delivered to %v", m.To)
	}
	if w := reported(res, "EMAIL_WARNING"); !strings.HasPrefix(w, "the server refused gone@example.com (550") ||
		reported(res, "EMAIL_TO") != "ops@example.com" || reported(res, "EMAIL_SENT") != "Y" {
		t.Fatalf("reported %v", res.Reported)
	}
	if !strings.Contains(e.logs.String(), "level=WARN msg=\"the server refused gone@example.com") {
		t.Fatalf("attempt log:\n%s", e.logs.String())
	}

	_, err := e.alert(params("EMAIL_TO", "gone@example.com|left@example.com"))
	if err == nil || exit.CodeOf(err) != exit.Handler || !strings.Contains(err.Error(), "on_failure could not send its email") ||
		!strings.Contains(err.Error(), "gone@example.com") {
		t.Fatalf("every recipient refused: %v", err)
	}
	if n := len(e.srv.Messages()); n != 1 {
		t.Fatalf("%d messages, want only the first", n)
	}
}

func TestTheDigestOfLatestRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mailtest.Options{})
	e.taskRun("extract", "SUCCESS", 1, "", 1)
	e.taskRun("load", "SUCCESS", 1, "", 1)
	e.b.Pipeline("Q", "FULL")
	e.b.Pipeline("R", "FULL")
	e.newRun("Q", "FAILED")
	q := e.newRun("Q", "SUCCESS")
	e.b.Exec("UPDATE AUD_PIPELINES_RUN_LOG SET END_DATE = START_DATE, SLA_STATUS = 'MET' WHERE PIPELINE_RUN_ID = $1", q)

	e.mustAlert(params("EMAIL_BODY", "", "EMAIL_PIPELINES", "ALL"))
	m := e.only()
	for _, want := range []string{
		"Latest runs:\nPIPELINE  RUN  STATUS       STARTED", fmt.Sprintf("\nP         %d    IN-PROGRESS  ", e.runID),
		fmt.Sprintf("\nQ         %d    SUCCESS      ", q), " UTC  MET\n", "\nR: never ran\n",
	} {
		if !strings.Contains(m.text, want) {
			t.Errorf("text lacks %q:\n%s", want, m.text)
		}
	}
	if !strings.HasPrefix(m.text, "Pipeline P, run ") || !strings.Contains(m.html, "<th>PIPELINE</th>") {
		t.Errorf("without EMAIL_BODY:\n%s\n%s", m.text, m.html)
	}

	e2 := newEnv(t, mailtest.Options{})
	e2.b.Pipeline("Q", "FULL")
	e2.mustAlert(params("EMAIL_PIPELINES", "Q|NOPE"))
	m = e2.only()
	if !strings.Contains(m.text, "\nQ: never ran\nNOPE: no active pipeline has this code\n") || strings.Contains(m.text, "\nP  ") {
		t.Errorf("listed pipelines:\n%s", m.text)
	}
}

func TestCheckNamesMissingAndUnknownParameters(t *testing.T) {
	t.Parallel()
	h := email.New(nil, email.Options{})
	failures, _ := h.Check(&handler.Task{Params: params("EMAIL_TO", "ops@example.com|not an address")})
	if !slices.Equal(failures, []string{`EMAIL_TO lists "not an address", which is not an address or Name <address>`}) {
		t.Errorf("a bad address: %q", failures)
	}
	failures, warnings := h.Check(&handler.Task{Params: map[string]string{"EMAIL_ON_STATUS": "FAILED|BROKEN", "EMAIL_SUBJECT_FAIL": "x"}})
	want := []string{"EMAIL_TO or NOTIFY_CHANNELS is required: the recipients, or the channels of Notifications, separated by |", "EMAIL_SUBJECT is required",
		"EMAIL_BODY is required unless EMAIL_PIPELINES asks for a digest",
		`EMAIL_ON_STATUS lists "BROKEN", which is not an outcome (FAILED|COMPLETED_WITH_ERRORS|SUCCESS)`}
	if !slices.Equal(failures, want) {
		t.Errorf("failures %q", failures)
	}
	if !slices.Equal(warnings, []string{"EMAIL_SUBJECT_FAIL is not an override of any outcome " +
		"(EMAIL_SUBJECT_FAILED|COMPLETED_WITH_ERRORS|SUCCESS): it is never used"}) {
		t.Errorf("warnings %q", warnings)
	}
	failures, warnings = h.Check(&handler.Task{Params: params("EMAIL_BODY", "", "EMAIL_PIPELINES", "ALL")})
	if len(failures)+len(warnings) != 0 {
		t.Errorf("a digest without a body: %q %q", failures, warnings)
	}
	_, err := h.Run(context.Background(), &handler.Task{TaskCode: "a", Params: map[string]string{}})
	if exit.CodeOf(err) != exit.Metadata || !strings.Contains(err.Error(), "the EMAIL_ALERT task a: EMAIL_TO or NOTIFY_CHANNELS is required") {
		t.Errorf("run without parameters: %v", err)
	}
}

func TestAnUnusableSenderFailsTheAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mailtest.Options{})
	h := email.New(e.db, email.Options{Mail: func() (*mail.Sender, error) {
		return nil, exit.Errorf(exit.Configuration, "sending email needs Orchestration.Email")
	}})
	_, err := h.Run(context.Background(), &handler.Task{PipelineID: e.pipelineID, PipelineRunID: e.runID,
		PipelineCode: "P", TaskCode: "on_failure", Params: params()})
	if exit.CodeOf(err) != exit.Configuration || handler.Retryable(err) {
		t.Fatalf("%v", err)
	}
}
