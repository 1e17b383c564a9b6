package config

import (
	"errors"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/etl-craft/etl-craft/internal/suggest"
)

// The settings of the Notifications section, and of one of its channels.
var (
	notificationsKeys = []string{"Console_url", "Timeout_seconds", "Retries", "Sla_channels", "Channels"}
	channelKeys       = []string{"kind", "url", "signing_secret", "ca_file"}
)

// The kinds of channel.
const (
	ChannelSlack   = "slack"
	ChannelTeams   = "teams"
	ChannelWebhook = "webhook"
)

// The bounds of the Notifications settings.
const (
	DefaultNotifyTimeoutSeconds = 10
	MaxNotifyTimeoutSeconds     = 300
	DefaultNotifyRetries        = 3
	MaxNotifyRetries            = 10
)

// Notifications are the chat and webhook channels alerts may go to, and
// how they are delivered.
type Notifications struct {
	// Profile is the selected profile, "" when none is selected.
	Profile string
	// ConsoleURL is the console's address as its readers reach it, without
	// a trailing slash; "" when not set.
	ConsoleURL string
	// TimeoutSeconds limits one request to a channel.
	TimeoutSeconds int
	// Retries is how many more times a delivery is tried after a 429, a 5xx
	// or no answer.
	Retries int
	// SLAChannels are the channels of SLA breaches for pipelines that name
	// none (PIPELINE_PARAMETERS.NOTIFY_CHANNELS).
	SLAChannels []string
	// Channels are the channels, in the order the file writes them.
	Channels []Channel
}

// Channel is one named destination of alerts. Its URL, and a webhook's
// signing secret, are secrets: only the names of their variables are kept.
type Channel struct {
	Name string
	// Kind is slack, teams or webhook.
	Kind string
	// URLVar names the variable holding the URL.
	URLVar string
	// SigningSecretVar names the variable holding a webhook's signing
	// secret; "" sends the webhook unsigned.
	SigningSecretVar string
	// CAFile is an absolute path; "" means the system's trusted CAs.
	CAFile string
}

// Channel returns the channel of that name.
func (n Notifications) Channel(name string) (Channel, bool) {
	i := slices.IndexFunc(n.Channels, func(c Channel) bool { return c.Name == name })
	if i < 0 {
		return Channel{}, false
	}
	return n.Channels[i], true
}

// Names returns the channels' names in file order.
func (n Notifications) Names() []string {
	out := make([]string, len(n.Channels))
	for i, c := range n.Channels {
		out[i] = c.Name
	}
	return out
}

// UnknownChannel describes a name no channel has, for messages: "no channel
// is named X in Notifications.Channels; did you mean Y?".
func (n Notifications) UnknownChannel(name string) string {
	if len(n.Channels) == 0 {
		return "no channel is named " + name + ": craft-connector.yml has no Notifications.Channels"
	}
	return "no channel is named " + name + " in Notifications.Channels (" + strings.Join(n.Names(), ", ") + ")" +
		suggest.DidYouMean(name, n.Names())
}

var channelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// notifications reads the optional Notifications section.
func (l *loader) notifications(cfg *Config, top *mapping) error {
	cfg.Notifications = Notifications{TimeoutSeconds: DefaultNotifyTimeoutSeconds, Retries: DefaultNotifyRetries}
	s, err := l.optionalSection(top, "Notifications", notificationsKeys, "Channels")
	if err != nil || s == nil {
		return err
	}
	f := s.fields
	n := Notifications{Profile: s.profile}
	console, err := f.get("Console_url")
	if err != nil {
		return err
	}
	if console.set {
		if n.ConsoleURL, err = consoleURL(console.text); err != nil {
			return l.bad(console, "%v; got '%s'", err, console.text)
		}
	}
	if n.TimeoutSeconds, err = f.number("Timeout_seconds", DefaultNotifyTimeoutSeconds, 1, MaxNotifyTimeoutSeconds); err != nil {
		return err
	}
	if n.Retries, err = f.number("Retries", DefaultNotifyRetries, 0, MaxNotifyRetries); err != nil {
		return err
	}
	channels, err := f.sub("Channels")
	if err != nil {
		return err
	}
	if channels != nil {
		for _, e := range channels.m.entries {
			c, err := l.channel(channels, e)
			if err != nil {
				return err
			}
			n.Channels = append(n.Channels, c)
		}
	}
	if n.SLAChannels, err = f.list("Sla_channels"); err != nil {
		return err
	}
	for _, name := range n.SLAChannels {
		if _, ok := n.Channel(name); !ok {
			v, _ := f.m.get("Sla_channels")
			return l.fail(v.line, v.path, "names %s", n.UnknownChannel(name))
		}
	}
	cfg.Notifications = n
	return nil
}

// channel reads one channel of Notifications.Channels.
func (l *loader) channel(channels *fields, e entry) (Channel, error) {
	if !channelName.MatchString(e.key) {
		return Channel{}, l.fail(e.line, e.path, "is not a channel name: use letters, digits, '_', '.' and '-', starting with a letter or digit, at most 64")
	}
	if !isMapping(e.value) {
		return Channel{}, l.fail(e.line, e.path, "must be a mapping of kind, url and, for a webhook, signing_secret")
	}
	f := &fields{l: l, where: e.path, line: e.line, profile: channels.profile, m: mappingOf(e.value, e.path)}
	if err := f.unknown(channelKeys); err != nil {
		return Channel{}, err
	}
	c := Channel{Name: e.key}
	var err error
	if c.Kind, err = f.choice("kind", "", ChannelSlack, ChannelTeams, ChannelWebhook); err != nil {
		return c, err
	}
	if !f.has("url") {
		return c, l.fail(e.line, e.path, "needs url, the name of the variable holding the channel's URL")
	}
	if c.URLVar, err = f.secret("url"); err != nil {
		return c, err
	}
	if raw, set := l.src.values[c.URLVar]; set && strings.TrimSpace(raw) != "" {
		if _, err := WebhookURL(raw); err != nil {
			u, _ := f.m.get("url")
			return c, l.fail(u.value.Line, u.path, "the variable %s holds no usable URL: %v", c.URLVar, err)
		}
	}
	if f.has("signing_secret") && c.Kind != ChannelWebhook {
		v, _ := f.m.get("signing_secret")
		return c, l.fail(v.line, v.path, "applies only to kind webhook: %s signs nothing", c.Kind)
	}
	if c.SigningSecretVar, err = f.secret("signing_secret"); err != nil {
		return c, err
	}
	c.CAFile, err = f.path("ca_file", "")
	return c, err
}

// WebhookURL reads a channel's URL: an absolute https URL with a host, or
// http to a loopback host (a receiver on this machine), without a fragment.
// Its error never holds the URL, which is a secret.
func WebhookURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, errors.New("it is not a URL")
	}
	switch {
	case u.Host == "" || u.Hostname() == "":
		return nil, errors.New("it has no host: write https://host/path")
	case u.Fragment != "":
		return nil, errors.New("it has a #fragment, which is never sent")
	case u.Scheme == "https":
		return u, nil
	case u.Scheme == "http" && Loopback(u.Hostname()):
		return u, nil
	case u.Scheme == "http":
		return nil, errors.New("it is http to a host other than this machine: use https, so that the URL and the alerts are not sent in clear")
	}
	return nil, errors.New("its scheme is not https")
}

// Loopback reports whether host is localhost or a loopback IP address.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// consoleURL reads Notifications.Console_url: an http or https URL without
// a query or fragment; the trailing slash is dropped.
func consoleURL(text string) (string, error) {
	u, err := url.Parse(text)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", errors.New("must be the console's address as its readers reach it, such as https://etl.example.com, without user, query or fragment")
	}
	return strings.TrimRight(u.String(), "/"), nil
}
