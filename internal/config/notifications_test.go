package config

import (
	"reflect"
	"strings"
	"testing"
)

const slackSecret = "https://hooks.slack.com/services/T0/B0/sEcReTtOkEnXyZ"

func TestNotifications(t *testing.T) {
	setenv(t, map[string]string{
		"SLACK_URL": slackSecret, "TEAMS_URL": "https://prod-1.westus.logic.azure.com/workflows/x?sig=abc123secret",
		"HOOK_URL": "http://127.0.0.1:9000/alerts", "HOOK_SIGNING_SECRET": "whsec-1234567890",
		"HOOK_PROD_URL": "https://hooks.example.com/prod", "CONSOLE": "https://etl.example.com/console/",
	})
	cfg := mustLoad(t, minimal)
	if n := cfg.Notifications; len(n.Channels) != 0 || n.TimeoutSeconds != DefaultNotifyTimeoutSeconds || n.Retries != DefaultNotifyRetries {
		t.Fatalf("without the section: %+v", n)
	}
	cfg = mustLoad(t, minimal+`Notifications:
  Console_url: CONSOLE
  Timeout_seconds: 5
  Retries: 0
  Sla_channels: [data-team, pager]
  Channels:
    data-team:
      kind: slack
      url: SLACK_URL
    oncall:
      kind: Teams
      url: TEAMS_URL
    pager:
      kind: webhook
      url: HOOK_URL
      signing_secret: HOOK_SIGNING_SECRET
      ca_file: certs/ca.pem
`)
	want := Notifications{Profile: "dev", ConsoleURL: "https://etl.example.com/console", TimeoutSeconds: 5, Retries: 0,
		SLAChannels: []string{"data-team", "pager"}, Channels: []Channel{
			{Name: "data-team", Kind: ChannelSlack, URLVar: "SLACK_URL"},
			{Name: "oncall", Kind: ChannelTeams, URLVar: "TEAMS_URL"},
			{Name: "pager", Kind: ChannelWebhook, URLVar: "HOOK_URL", SigningSecretVar: "HOOK_SIGNING_SECRET",
				CAFile: cfg.ProjectDir + "/certs/ca.pem"},
		}}
	if !reflect.DeepEqual(cfg.Notifications, want) {
		t.Fatalf("Notifications\n%+v\nwant\n%+v", cfg.Notifications, want)
	}

	// A profile block's Channels replace the section's as a whole, and a
	// profile's own variable wins.
	cfg = mustLoad(t, minimal+`Notifications:
  Profile: prod
  Channels:
    data-team: {kind: slack, url: SLACK_URL}
  prod:
    Channels:
      pager: {kind: webhook, url: HOOK_URL}
`)
	if got := cfg.Notifications.Channels; len(got) != 1 || got[0].Name != "pager" || got[0].URLVar != "HOOK_PROD_URL" {
		t.Fatalf("prod channels %+v", got)
	}

	errs := []errorCase{
		{"a URL written in clear", "  Channels:\n    a:\n      kind: slack\n      url: https://hooks.slack.com/services/T/B/x\n",
			":14: Notifications.Channels.a.url: must be the name of a variable holding the secret, not the secret itself"},
		{"an unset variable", "  Channels:\n    a: {kind: slack, url: SLAKC_URL}\n",
			":12: Notifications.Channels.a.url: names the secret variable 'SLAKC_DEV_URL' or 'SLAKC_URL', which is not set in the environment source; did you mean SLACK_URL?"},
		{"no url", "  Channels:\n    a: {kind: slack}\n", ":12: Notifications.Channels.a: needs url"},
		{"no kind", "  Channels:\n    a: {url: SLACK_URL}\n", "Notifications.Channels.a: needs kind: one of slack, teams, webhook"},
		{"an unknown kind", "  Channels:\n    a: {kind: discord, url: SLACK_URL}\n", "Notifications.Channels.a.kind: must be one of slack, teams, webhook; got 'discord'"},
		{"a mistyped key", "  Channels:\n    a: {kind: webhook, url: HOOK_URL, signing_secrt: HOOK_SIGNING_SECRET}\n",
			"Notifications.Channels.a: unknown key 'signing_secrt' (did you mean signing_secret?)"},
		{"a signing secret on slack", "  Channels:\n    a: {kind: slack, url: SLACK_URL, signing_secret: HOOK_SIGNING_SECRET}\n",
			"Notifications.Channels.a.signing_secret: applies only to kind webhook"},
		{"a signing secret in clear", "  Channels:\n    a: {kind: webhook, url: HOOK_URL, signing_secret: 'not a name'}\n",
			"Notifications.Channels.a.signing_secret: must be the name of a variable"},
		{"a bad channel name", "  Channels:\n    'a b': {kind: slack, url: SLACK_URL}\n", "Notifications.Channels.a b: is not a channel name"},
		{"a channel that is no mapping", "  Channels:\n    a: slack\n", "Notifications.Channels.a: must be a mapping"},
		{"an unknown SLA channel", "  Sla_channels: data-teem\n  Channels:\n    data-team: {kind: slack, url: SLACK_URL}\n",
			":11: Notifications.Sla_channels: names no channel is named data-teem in Notifications.Channels (data-team); did you mean data-team?"},
		{"a bad console URL", "  Console_url: etl.example.com\n", ":11: Notifications.Console_url: must be the console's address"},
		{"a timeout of 0", "  Timeout_seconds: 0\n", "Notifications.Timeout_seconds: must be a whole number from 1 to 300"},
		{"too many retries", "  Retries: 11\n", "Notifications.Retries: must be a whole number from 0 to 10"},
		{"an unknown key", "  Retires: 2\n", "Notifications: unknown key 'Retires' (did you mean Retries?)"},
	}
	checkErrors(t, func(body string) string { return minimal + "Notifications:\n" + body }, errs)
}

// A URL variable whose value is no usable URL is refused at load, and the
// message never shows the URL.
func TestChannelURLsAreCheckedWithoutShowingThem(t *testing.T) {
	cases := map[string]string{
		"http://hooks.slack.com/services/T/B/sEcReTtOkEnXyZ":   "it is http to a host other than this machine: use https",
		"ftp://hooks.slack.com/services/T/B/sEcReTtOkEnXyZ":    "its scheme is not https",
		"hooks.slack.com/services/T/B/sEcReTtOkEnXyZ":          "it has no host",
		"https://hooks.slack.com/services/sEcReTtOkEnXyZ#frag": "it has a #fragment",
	}
	for value, want := range cases {
		t.Run(want, func(t *testing.T) {
			t.Setenv("SLACK_URL", value)
			_, _, err := loadYAML(t, minimal+"Notifications:\n  Channels:\n    a: {kind: slack, url: SLACK_URL}\n")
			wantConfigError(t, err, ":12: Notifications.Channels.a.url: the variable SLACK_URL holds no usable URL: "+want)
			if err != nil && strings.Contains(err.Error(), "sEcReTtOkEnXyZ") {
				t.Errorf("the error shows the URL: %v", err)
			}
		})
	}
	for _, ok := range []string{"https://hooks.slack.com/services/T/B/x", "http://127.0.0.1:8080/hook", "http://[::1]:9/x", "http://localhost/x"} {
		if _, err := WebhookURL(ok); err != nil {
			t.Errorf("WebhookURL(%q): %v", ok, err)
		}
	}
}
