package notify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/notify/notifytest"
)

// Check resolves the host, verifies TLS against the channel's ca_file and,
// for Slack only, makes the dry request; no detail or error shows the URL's
// secret part.
func TestCheckAChannelWithoutSendingAnAlert(t *testing.T) {
	t.Parallel()
	live := notifytest.StartTLS(t, notifytest.Reply{Status: 400, Body: "no_text"})
	revoked := notifytest.Start(t, notifytest.Reply{Status: 404, Body: "no_service"})
	teams := notifytest.StartTLS(t)
	untrusted := notifytest.StartTLS(t)
	n, vars := notifier(3,
		channel{name: "live", kind: config.ChannelSlack, r: live, caFile: live.CAFile(t)},
		channel{name: "revoked", kind: config.ChannelSlack, r: revoked},
		channel{name: "teams", kind: config.ChannelTeams, r: teams, caFile: teams.CAFile(t)},
		channel{name: "untrusted", kind: config.ChannelWebhook, r: untrusted},
	)
	check := func(name string) (string, error) {
		t.Helper()
		detail, err := n.Check(context.Background(), name)
		if strings.Contains(detail, secretPath) || (err != nil && strings.Contains(err.Error(), secretPath)) {
			t.Errorf("%s: the check shows the URL: %q %v", name, detail, err)
		}
		return detail, err
	}

	detail, err := check("live")
	if err != nil || !strings.HasPrefix(detail, "slack "+live.URL+"/…: 127.0.0.1 resolves (1 address), its certificate is verified (TLS 1.3), ") ||
		!strings.HasSuffix(detail, "a dry request without text was refused as Slack refuses one (400 Bad Request: no_text): the URL is live") {
		t.Errorf("live: %q %v", detail, err)
	}
	if got := live.Got(); len(got) != 1 || string(got[0].Body) != "{}" {
		t.Errorf("the dry request: %+v", got)
	}
	if _, err := check("revoked"); err == nil || !strings.Contains(err.Error(),
		"the dry request was answered 404 Not Found: no_service: the URL is not a live Slack webhook") {
		t.Errorf("revoked: %v", err)
	}
	detail, err = check("teams")
	if err != nil || !strings.HasSuffix(detail, "its certificate is verified (TLS 1.3), no request is sent: it would deliver an alert") || len(teams.Got()) != 0 {
		t.Errorf("teams: %q %v, %d requests", detail, err, len(teams.Got()))
	}
	if _, err := check("untrusted"); err == nil || !strings.Contains(err.Error(), "webhook "+untrusted.URL+"/…: TLS: ") ||
		!strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted: %v", err)
	}
	delete(vars, "LIVE_URL")
	if _, err := check("live"); err == nil || !strings.Contains(err.Error(), "secret 'LIVE_URL' not found") {
		t.Errorf("without its variable: %v", err)
	}
	vars["LIVE_URL"] = "http://hooks.slack.com" + secretPath
	if _, err := check("live"); err == nil || !strings.Contains(err.Error(), "the variable LIVE_URL holds no usable URL: it is http to a host other than this machine") {
		t.Errorf("an http URL: %v", err)
	}
	if _, err := check("nope"); err == nil || !strings.Contains(err.Error(), "no channel is named nope") {
		t.Errorf("an unknown channel: %v", err)
	}
}
