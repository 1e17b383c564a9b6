package email_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/handler"
	"github.com/etl-craft/etl-craft/internal/handler/email"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
	"github.com/etl-craft/etl-craft/internal/notify"
	"github.com/etl-craft/etl-craft/internal/notify/notifytest"
	"github.com/etl-craft/etl-craft/internal/report"
)

// channels are a Slack channel data-team and a webhook pager, each with its
// receiver, for the alert of env.
type channels struct {
	slack, hook *notifytest.Receiver
	notifier    *notify.Notifier
}

func newChannels(t *testing.T, slack, hook []notifytest.Reply) *channels {
	c := &channels{slack: notifytest.Start(t, slack...), hook: notifytest.Start(t, hook...)}
	vars := map[string]string{"SLACK_URL": c.slack.URL + "/services/T/B/x", "PAGER_URL": c.hook.URL + "/alerts"}
	c.notifier = notify.New(config.Notifications{TimeoutSeconds: 5, Retries: 1, Channels: []config.Channel{
		{Name: "data-team", Kind: config.ChannelSlack, URLVar: "SLACK_URL"},
		{Name: "pager", Kind: config.ChannelWebhook, URLVar: "PAGER_URL"},
	}}, func(v string) (string, error) { return vars[v], nil }).WithBackoff(time.Millisecond)
	return c
}

// alertWith runs on_failure with the channels, and the mail server as its
// Email settings unless noMail.
func (e *env) alertWith(c *channels, noMail bool, p map[string]string) (handler.Result, error) {
	o := email.Options{Channels: c.notifier, RunPage: func(id int64) string { return "https://etl.example.com/runs/" + strconv.FormatInt(id, 10) }}
	if !noMail {
		settings := e.srv.Settings(from)
		o.Mail = func() (*mail.Sender, error) { return mail.New(settings, nil) }
	}
	return email.New(e.db, o).Run(context.Background(), &handler.Task{
		PipelineID: e.pipelineID, PipelineRunID: e.runID, TaskRunID: 999, AttemptNumber: 1,
		PipelineCode: "P", TaskCode: "on_failure", RefreshType: "FULL", Params: p,
		Log: slog.New(slog.NewTextHandler(&e.logs, nil)),
	})
}

// An alert naming channels besides recipients says the same thing
// everywhere: the Slack header is the email's subject, the webhook's text is
// the email's plain text, and both link to the run's page.
func TestChannelsGetWhatTheEmailSays(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mailtest.Options{})
	e.taskRun("extract", "FAILED", 1, "Catalog Error: <raw> does not exist", -1)
	c := newChannels(t, nil, nil)
	res, err := e.alertWith(c, false, params("NOTIFY_CHANNELS", "data-team | pager"))
	if err != nil {
		t.Fatalf("%v\n%s", err, e.logs.String())
	}
	m := e.only()
	var slack struct {
		Blocks []struct {
			Text *struct{ Text string }
		}
	}
	if err := json.Unmarshal(c.slack.WaitFor(t, 1)[0].Body, &slack); err != nil || slack.Blocks[0].Text.Text != m.subject {
		t.Errorf("the Slack header is not the email's subject %q: %v %s", m.subject, err, c.slack.Got()[0].Body)
	}
	var doc report.Notification
	if err := json.Unmarshal(c.hook.WaitFor(t, 1)[0].Body, &doc); err != nil || doc.Text != m.text || doc.Subject != m.subject {
		t.Errorf("the webhook's text is not the email's (%v):\n%s\n---\n%s", err, doc.Text, m.text)
	}
	if link := "https://etl.example.com/runs/" + strconv.FormatInt(e.runID, 10); !strings.Contains(m.text, "\nConsole: "+link+"\n") ||
		!strings.Contains(string(c.slack.Got()[0].Body), link+"|Open run") || *doc.ConsoleURL != link {
		t.Errorf("the run's page is not linked:\n%s", m.text)
	}
	if reported(res, "NOTIFY_CHANNELS") != "data-team|pager" || reported(res, "EMAIL_SENT") != "Y" || reported(res, "NOTIFY_WARNING") != "" {
		t.Errorf("reported %v", res.Reported)
	}
	for _, want := range []string{`msg="delivered to the channel" channel=data-team kind=slack`, `msg="delivered to the channel" channel=pager kind=webhook`} {
		if !strings.Contains(e.logs.String(), want) {
			t.Errorf("the attempt log lacks %q:\n%s", want, e.logs.String())
		}
	}
}

// Channels instead of recipients need no Email settings. A channel that
// does not take the alert while another does leaves the task SUCCESS with a
// NOTIFY_WARNING; when none takes it, the task fails (exit 15) naming each,
// as a server refusing every recipient does; an email that fails while a
// channel delivers is a warning too.
func TestDeliveryFailuresWarnOrFailAsRefusedRecipientsDo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mailtest.Options{Refuse: []string{"gone@example.com"}})
	bad := notifytest.Reply{Status: 400, Body: "invalid_payload"}

	c := newChannels(t, nil, []notifytest.Reply{bad})
	res, err := e.alertWith(c, true, params("EMAIL_TO", "", "NOTIFY_CHANNELS", "data-team|pager"))
	if err != nil || reported(res, "NOTIFY_CHANNELS") != "data-team" || reported(res, "EMAIL_SENT") != "" ||
		!strings.HasPrefix(reported(res, "NOTIFY_WARNING"), "not delivered to pager (webhook): ") ||
		!strings.Contains(reported(res, "NOTIFY_WARNING"), "answered 400 Bad Request: invalid_payload (1 try)") {
		t.Fatalf("one channel of two: %v %v", err, res.Reported)
	}

	c = newChannels(t, []notifytest.Reply{bad}, []notifytest.Reply{{Status: 503}, {Status: 503}})
	_, err = e.alertWith(c, true, params("EMAIL_TO", "", "NOTIFY_CHANNELS", "data-team|pager"))
	if exit.CodeOf(err) != exit.Handler || !strings.Contains(err.Error(), "the EMAIL_ALERT task on_failure reached none of its recipients and channels") ||
		!strings.Contains(err.Error(), "channel data-team (slack): ") || !strings.Contains(err.Error(), "channel pager (webhook): ") ||
		!strings.Contains(err.Error(), "503 Service Unavailable (2 tries)") {
		t.Fatalf("no channel: %v", err)
	}

	c = newChannels(t, nil, nil)
	res, err = e.alertWith(c, false, params("EMAIL_TO", "gone@example.com", "NOTIFY_CHANNELS", "pager"))
	if err != nil || reported(res, "EMAIL_SENT") != "N" || !strings.Contains(reported(res, "EMAIL_WARNING"), "the email was not sent: ") ||
		reported(res, "NOTIFY_CHANNELS") != "pager" {
		t.Fatalf("every recipient refused, the channel delivered: %v %v", err, res.Reported)
	}
}

// EMAIL_ON_STATUS holds back the channels as it holds back the email, and
// validate names a channel no configuration has.
func TestChannelsFollowTheAlertsRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, mailtest.Options{})
	c := newChannels(t, nil, nil)
	res, err := e.alertWith(c, false, params("NOTIFY_CHANNELS", "pager", "EMAIL_ON_STATUS", "FAILED"))
	if err != nil || !strings.HasPrefix(reported(res, "EMAIL_SENT"), "N (the outcome COMPLETED_WITH_ERRORS is not in") ||
		len(c.hook.Got()) != 0 || len(e.srv.Messages()) != 0 {
		t.Fatalf("%v %v", err, res.Reported)
	}
	h := email.New(nil, email.Options{Channels: c.notifier})
	failures, _ := h.Check(&handler.Task{Params: params("EMAIL_TO", "", "NOTIFY_CHANNELS", "pagr|data-team")})
	if !slices.Equal(failures, []string{"NOTIFY_CHANNELS names no channel is named pagr in Notifications.Channels (data-team, pager); did you mean pager?"}) {
		t.Errorf("failures %q", failures)
	}
	failures, _ = email.New(nil, email.Options{}).Check(&handler.Task{Params: params("NOTIFY_CHANNELS", "pager")})
	if !slices.Equal(failures, []string{"NOTIFY_CHANNELS names no channel is named pager: craft-connector.yml has no Notifications.Channels"}) {
		t.Errorf("without channels: %q", failures)
	}
}
