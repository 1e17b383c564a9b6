package cli_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/notify/notifytest"
	"github.com/etl-craft/etl-craft/internal/report"
)

// channelSecret is the secret part of every channel URL of these tests:
// nothing the binary prints, logs or records may show it.
const channelSecret = "/services/T0SECRET/B0SECRET/ch4nn3lT0k3n"

// hookSigning is the webhook's signing secret.
const hookSigning = "whsec-9d8c7b6a5f4e3d2c"

// alertChannels are the receivers of the three kinds of channel.
type alertChannels struct {
	slack, teams, hook *notifytest.Receiver
}

// withChannels adds a Notifications section naming the receivers, their
// URLs and signing secret given as variables, and returns them. Slack is
// reached over https with its own CA as ca_file.
func withChannels(t *testing.T, p *e2e.Project, hook []notifytest.Reply, settings string) alertChannels {
	t.Helper()
	c := alertChannels{slack: notifytest.StartTLS(t), teams: notifytest.Start(t), hook: notifytest.Start(t, hook...)}
	p.Write("craft-connector.yml", p.Config()+fmt.Sprintf(`Notifications:
%s  Channels:
    data-team:
      kind: slack
      url: SLACK_URL
      ca_file: %s
    oncall:
      kind: teams
      url: TEAMS_URL
    pager:
      kind: webhook
      url: PAGER_URL
      signing_secret: PAGER_SIGNING_SECRET
`, settings, c.slack.CAFile(t)))
	p.Env = append(p.Env, "SLACK_URL="+c.slack.URL+channelSecret, "TEAMS_URL="+c.teams.URL+channelSecret,
		"PAGER_URL="+c.hook.URL+channelSecret, "PAGER_SIGNING_SECRET="+hookSigning)
	return c
}

// verified decodes a webhook request after checking its signature as a
// receiver would, with crypto/hmac.
func verified(t *testing.T, req notifytest.Request) report.Notification {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(hookSigning))
	mac.Write([]byte(req.Header.Get("X-Etl-Craft-Timestamp") + "."))
	mac.Write(req.Body)
	if got, want := req.Header.Get("X-Etl-Craft-Signature"), "v1="+hex.EncodeToString(mac.Sum(nil)); !hmac.Equal([]byte(got), []byte(want)) {
		t.Fatalf("signature %q, want %q", got, want)
	}
	var doc report.Notification
	if err := json.Unmarshal(req.Body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// noSecret fails the test when any text shows a channel URL's secret part
// or the signing secret.
func noSecret(t *testing.T, where string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, channelSecret) || strings.Contains(s, "T0SECRET") || strings.Contains(s, hookSigning) {
			t.Errorf("%s shows a secret:\n%s", where, s)
		}
	}
}

// An EMAIL_ALERT task naming channels instead of recipients sends one
// message to each through `etl-craft run`: Slack's Block Kit message, the
// Teams card and the signed webhook document say what the run did, with
// the pipeline's hostile description shown as written; the attempt's log
// records each delivery, and nothing shows a URL's secret part.
func TestAnAlertGoesToItsChannelsThroughARun(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	c := withChannels(t, p, nil, "")
	p.OK("setup") // its checks make Slack's dry request
	const description = "Sales *daily* <!channel> <script>alert(1)</script> [x](https://evil.example/)"
	p.Register("0001_sales", e2e.Pipeline("SALES",
		e2e.CreateTable("extract", "main.raw", "SELECT * FROM main.no_such_table"),
		e2e.Task{Code: "report", Handler: "EMAIL_ALERT", Deps: []string{"extract:ALWAYS"}, Params: map[string]string{
			"NOTIFY_CHANNELS": "data-team|oncall|pager", "EMAIL_SUBJECT": "[$$status] $$pipeline_code run $$pipeline_run_id",
			"EMAIL_BODY": "Errors: $$error_message"}},
	)+"UPDATE CFG_PIPELINES SET DESCRIPTION = "+e2e.Quote(description)+" WHERE PIPELINE_CODE = 'SALES';\n")
	r := p.Run(nil, "run", "--pipeline_code", "SALES")
	if r.Code != 1 {
		t.Fatalf("run exited %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
	db := p.DB()
	runID := e2e.Scalar(t, db, "SELECT MAX(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG")
	subject := "[FAILED] SALES run " + runID

	slack := c.slack.WaitFor(t, 2)[1]
	if !strings.Contains(string(slack.Body), `"type":"header","text":{"type":"plain_text","text":"`+subject+`"`) ||
		!strings.Contains(string(slack.Body), `Sales *daily* &lt;!channel&gt; &lt;script&gt;alert(1)&lt;/script&gt;`) ||
		!strings.Contains(string(slack.Body), `"text":"extract","emoji":false},{"type":"plain_text","text":"SQL · FAILED · 1 attempt"`) || slack.Path != channelSecret {
		t.Errorf("Slack got %s %s", slack.Path, slack.Body)
	}
	teams := string(c.teams.WaitFor(t, 1)[0].Body)
	if !strings.Contains(teams, `"contentType":"application/vnd.microsoft.card.adaptive"`) || !strings.Contains(teams, `"text":"`+subject+`"`) ||
		!strings.Contains(teams, `{"type":"TextRun","text":"Sales *daily* <!channel> <script>alert(1)</script> [x](https://evil.example/)","isSubtle":true}`) {
		t.Errorf("Teams got %s", teams)
	}
	doc := verified(t, c.hook.WaitFor(t, 1)[0])
	if doc.Event != "run_alert" || doc.Subject != subject || *doc.Outcome != "FAILED" || doc.Pipeline.Description != description ||
		len(doc.Tasks) != 1 || doc.Tasks[0].Status != "FAILED" || doc.ConsoleURL != nil || !strings.HasPrefix(doc.Body, "Errors: ") {
		t.Errorf("the webhook got %+v", doc)
	}

	log := e2e.Scalar(t, db, `SELECT tr.TASK_LOG FROM AUD_TASK_RUN_LOG tr JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID WHERE t.TASK_CODE = 'report'`)
	if !strings.Contains(log, "NOTIFY_CHANNELS = data-team|oncall|pager") || !strings.Contains(log, "EMAIL_SUBJECT = "+subject) {
		t.Errorf("TASK_LOG:\n%s", log)
	}
	path := e2e.Scalar(t, db, `SELECT a.LOG_PATH FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
		JOIN CFG_TASKS t ON t.TASK_ID = tr.TASK_ID WHERE t.TASK_CODE = 'report'`)
	attemptLog, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range []string{"channel=data-team kind=slack to=" + c.slack.URL + "/… status=200",
		"channel=oncall kind=teams to=" + c.teams.URL + "/… status=200", "channel=pager kind=webhook to=" + c.hook.URL + "/… status=200"} {
		if !strings.Contains(string(attemptLog), ch) {
			t.Errorf("the attempt log lacks %q:\n%s", ch, attemptLog)
		}
	}
	noSecret(t, "the run", r.Stdout, r.Stderr, string(attemptLog), log,
		strings.Join(e2e.QueryRows(t, db, "SELECT coalesce(ERROR_MESSAGE, '') || coalesce(TASK_LOG, '') FROM AUD_TASK_RUN_LOG"), "\n"))
}

// Under Enforce_sla, a run that passes its SLA under `etl-craft server`
// sends its SLA alert to its pipeline's NOTIFY_CHANNELS, else to
// Notifications.Sla_channels, with a link to the run's page in the console
// the server serves; a 503 from the channel is tried again.
func TestSLABreachesGoToChannelsThroughTheServer(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	p.Orchestration("  Enforce_sla: true\n")
	c := withChannels(t, p, []notifytest.Reply{{Status: 503, Body: "busy"}}, "  Sla_channels: [data-team]\n")
	p.OK("setup")
	task := e2e.CreateTable("load", "main.t", "SELECT 1 AS k")
	p.Register("0001_sla", e2e.Pipeline("PAGED", task)+e2e.Pipeline("DEFAULTED", task)+
		`UPDATE CFG_PIPELINES SET SLA_IN_HOURS = 0.0000001;
UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = '{"NOTIFY_CHANNELS": ["pager"]}' WHERE PIPELINE_CODE = 'PAGED';
`)
	token := p.Token("ops", "operator")
	s := p.StartServer()
	paged := s.Trigger(token, "PAGED")
	defaulted := s.Trigger(token, "DEFAULTED")
	e2e.WaitRunsEnded(t, p.DB(), paged, defaulted)

	hook := c.hook.WaitFor(t, 2)
	first, doc := verified(t, hook[0]), verified(t, hook[1])
	if first.DeliveryID != doc.DeliveryID || hook[0].Header.Get("X-Etl-Craft-Delivery") != doc.DeliveryID {
		t.Errorf("the retry is not the same delivery: %s, %s", first.DeliveryID, doc.DeliveryID)
	}
	page := fmt.Sprintf("%s/runs/%d", s.API, paged)
	if doc.Event != "sla_breach" || doc.Run.ID != paged || doc.SLA == nil || doc.SLA.Hours != 0.0000001 ||
		doc.Subject != fmt.Sprintf("SLA breached: PAGED run %d (1e-07 h)", paged) || doc.ConsoleURL == nil || *doc.ConsoleURL != page {
		t.Errorf("the webhook got %+v", doc)
	}
	slack := string(c.slack.WaitFor(t, 2)[1].Body) // after setup's dry request
	if !strings.Contains(slack, fmt.Sprintf("SLA breached: DEFAULTED run %d", defaulted)) ||
		!strings.Contains(slack, fmt.Sprintf("<%s/runs/%d|Open run %d in the console>", s.API, defaulted, defaulted)) {
		t.Errorf("Slack got %s", slack)
	}
	if code := s.Stop(); code != 0 {
		t.Fatalf("the server exited %d", code)
	}
	if len(c.teams.Got()) != 0 || len(c.hook.Got()) != 2 || len(c.slack.Got()) != 2 {
		t.Errorf("requests: teams %d, webhook %d, slack %d", len(c.teams.Got()), len(c.hook.Got()), len(c.slack.Got()))
	}
	for _, want := range []string{`msg="the channel did not take the alert; trying again" channel=pager kind=webhook`,
		`msg="delivered to the channel" channel=pager kind=webhook`, `msg="delivered to the channel" channel=data-team kind=slack`} {
		if !strings.Contains(s.Stderr(), want) {
			t.Errorf("the server's log lacks %q:\n%s", want, s.Stderr())
		}
	}
	noSecret(t, "the server's log", s.Stderr())
}

// validate fails a pipeline whose SLA breaches go to a channel
// Notifications has not (PIPELINE_PARAMETERS.NOTIFY_CHANNELS), naming the
// nearest channel, as it fails an alert task's unknown NOTIFY_CHANNELS.
func TestValidateChecksTheChannelsOfSLABreaches(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	withChannels(t, p, nil, "")
	p.OK("setup")
	p.Register("0001_sla", e2e.Pipeline("PAGED", e2e.CreateTable("load", "main.t", "SELECT 1 AS k"))+
		`UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = '{"NOTIFY_CHANNELS": ["pagr"]}' WHERE PIPELINE_CODE = 'PAGED';
`)
	r := p.Run(nil, "validate")
	want := "[FAIL] PAGED: CFG_PIPELINES.PIPELINE_PARAMETERS of PAGED: NOTIFY_CHANNELS names no channel is named pagr " +
		"in Notifications.Channels (data-team, oncall, pager); did you mean pager?\n"
	if r.Code != 1 || !strings.Contains(r.Stdout, want) {
		t.Errorf("validate exited %d:\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// doctor checks each channel without sending an alert: Slack's URL answers
// a dry request, the others are resolved and reached over TLS only; a
// channel whose variable is not set fails; no line shows a URL's secret
// part.
func TestDoctorChecksEachChannel(t *testing.T) {
	t.Parallel()
	p := newProject(t, engine.SQLite, "")
	c := withChannels(t, p, nil, "  Console_url: https://etl.example.com/\n")
	c.slack.Script(notifytest.Reply{Status: 400, Body: "no_text"}, notifytest.Reply{Status: 400, Body: "no_text"})
	p.OK("setup") // its checks are doctor's
	r := p.OK("doctor")
	lines := checkLines(r.Stdout)
	if !strings.HasPrefix(lines["Channel data-team"], "[OK  ] Channel data-team: slack "+c.slack.URL+"/…: 127.0.0.1 resolves (1 address), its certificate is verified (TLS 1.3), ") ||
		!strings.Contains(lines["Channel data-team"], "(400 Bad Request: no_text): the URL is live") ||
		lines["Channel oncall"] != "[OK  ] Channel oncall: teams "+c.teams.URL+"/…: 127.0.0.1 resolves (1 address), http to this machine, without TLS, no request is sent: it would deliver an alert\n" ||
		!strings.HasPrefix(lines["Channel pager"], "[OK  ] Channel pager: webhook ") ||
		lines["Console link"] != "[OK  ] Console link: alerts link to their run's page in the console, such as https://etl.example.com/runs/42 for run 42\n" {
		t.Errorf("doctor:\n%s", r.Stdout)
	}
	if len(c.teams.Got())+len(c.hook.Got()) != 0 || len(c.slack.Got()) != 2 || string(c.slack.Got()[1].Body) != "{}" {
		t.Errorf("doctor sent teams %d, webhook %d, slack %d requests", len(c.teams.Got()), len(c.hook.Got()), len(c.slack.Got()))
	}
	noSecret(t, "doctor", r.Stdout, r.Stderr)

	// A variable that is not set fails the channel's check alone.
	p.Env = append(p.Env, "PAGER_SIGNING_SECRET=")
	r = p.Run(nil, "doctor")
	if r.Code != 1 || !strings.HasPrefix(checkLines(r.Stdout)["Channel pager"], "[FAIL] Channel pager: secret variable PAGER_SIGNING_SECRET in the environment source is empty") {
		t.Errorf("exit %d:\n%s", r.Code, r.Stdout)
	}
	noSecret(t, "doctor", r.Stdout, r.Stderr)
}
