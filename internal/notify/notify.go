// Package notify delivers alerts (internal/alert) to the channels of
// craft-connector.yml's Notifications section, beside internal/mail:
// Slack incoming webhooks (a Block Kit message), Microsoft Teams workflow
// webhooks (an Adaptive Card) and any webhook (the JSON document
// etl-craft/notification/1, signed with HMAC-SHA256 over a timestamp and the
// body when a signing secret is set). Each format renders the same
// alert.Message, so a Slack message, a Teams card, a webhook document and
// the email say the same thing.
//
// A delivery has a timeout, and is tried again with a growing wait after a
// 429, a 5xx or no answer, waiting as long as a Retry-After asks; any other
// answer is final. URLs and signing secrets are read from the secrets
// source when a delivery starts; no log line or error shows them: a URL is
// written as its scheme and host (Redact).
package notify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/config"
)

// Waits between the tries of a delivery.
const (
	// FirstBackoff is the wait before the first retry when the channel
	// gave no Retry-After; each later one doubles, up to MaxBackoff.
	FirstBackoff = time.Second
	MaxBackoff   = 30 * time.Second
	// MaxRetryAfter is the longest Retry-After a delivery waits for: a
	// channel asking for more ends the delivery, so that an alert task is
	// not held for long (its own RETRIES can send again later).
	MaxRetryAfter = time.Minute
)

// Notifier delivers alerts to the channels of one Notifications section. It
// is safe for concurrent use.
type Notifier struct {
	settings config.Notifications
	// secret reads a variable of the secrets source.
	secret func(variable string) (string, error)
	// backoff is the wait before the first retry without Retry-After.
	backoff time.Duration
	now     func() time.Time
}

// New returns the notifier of the settings; secret reads a variable of the
// secrets source (config.Config.Secret) when a delivery starts.
func New(settings config.Notifications, secret func(variable string) (string, error)) *Notifier {
	return &Notifier{settings: settings, secret: secret, backoff: FirstBackoff, now: time.Now}
}

// WithBackoff returns a copy of n whose first retry without Retry-After
// waits d (tests use a short one).
func (n *Notifier) WithBackoff(d time.Duration) *Notifier {
	c := *n
	c.backoff = d
	return &c
}

// Settings are the notifier's Notifications settings.
func (n *Notifier) Settings() config.Notifications { return n.settings }

// Unknown returns a problem for each name no channel has. A nil Notifier
// has no channels.
func (n *Notifier) Unknown(names []string) []string {
	var settings config.Notifications
	if n != nil {
		settings = n.settings
	}
	var out []string
	for _, name := range names {
		if _, ok := settings.Channel(name); !ok {
			out = append(out, settings.UnknownChannel(name))
		}
	}
	return out
}

// Delivery is what sending one alert to one channel did.
type Delivery struct {
	Channel string
	Kind    string
	// Status is the channel's last HTTP status, 0 when it gave none.
	Status int
	// Tries is how many requests were made.
	Tries int
	// Err is nil when the channel took the alert.
	Err error
}

// String says what the delivery did: "data-team (slack): delivered (200,
// 1 try)" or "oncall (teams): 503 Service Unavailable, 4 tries".
func (d Delivery) String() string {
	tries := strconv.Itoa(d.Tries) + " tries"
	if d.Tries == 1 {
		tries = "1 try"
	}
	if d.Err == nil {
		return fmt.Sprintf("%s (%s): delivered (%d, %s)", d.Channel, d.Kind, d.Status, tries)
	}
	return fmt.Sprintf("%s (%s): %v (%s)", d.Channel, d.Kind, d.Err, tries)
}

// Send delivers m to each channel of names, at once, and returns what each
// delivery did, in the order of names. Each try and its answer go to log.
// An unknown name is a failed delivery.
func (n *Notifier) Send(ctx context.Context, log *slog.Logger, m *alert.Message, names []string) []Delivery {
	out := make([]Delivery, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { out[i] = n.deliver(ctx, log, m, name) })
	}
	wg.Wait()
	return out
}

// DeliveryID is the id of m's delivery to a channel: the same for every
// try and every attempt that sends the same alert to it, so that a receiver
// can drop a copy (see the X-Etl-Craft-Delivery header). It is a hash of
// what the alert says, the link to the console left out (a restarted
// server may serve the console elsewhere).
func DeliveryID(m *alert.Message, channel string) string {
	said := *m
	said.Link = ""
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\x00%s\x00%s", m.Event, m.Run.ID, m.AlertTask, channel, m.Subject, said.Text())
	return hex.EncodeToString(h.Sum(nil))[:32]
}
