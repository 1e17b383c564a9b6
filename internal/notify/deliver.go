package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/etl-craft/etl-craft/internal/alert"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// The headers of a delivery besides Content-Type.
const (
	// HeaderDelivery carries DeliveryID.
	HeaderDelivery = "X-Etl-Craft-Delivery"
	// HeaderEvent carries the alert's event (run_alert, sla_breach).
	HeaderEvent = "X-Etl-Craft-Event"
	// HeaderTimestamp is when a signed request was made, in Unix seconds.
	HeaderTimestamp = "X-Etl-Craft-Timestamp"
	// HeaderSignature is "v1=" and the hex HMAC-SHA256, keyed with the
	// signing secret, of the timestamp, ".", and the body.
	HeaderSignature = "X-Etl-Craft-Signature"
)

// maxReply is how much of a channel's answer a message quotes.
const maxReply = 200

// target is a channel ready to post to: its URL and signing secret read,
// and its HTTP client.
type target struct {
	config.Channel
	url     *url.URL
	signing string
	client  *http.Client
}

// target reads the channel's URL and signing secret and builds its client:
// the timeout of Notifications, the channel's ca_file, and no redirect
// followed (a redirect would take the alert, and a URL that is a secret,
// elsewhere).
func (n *Notifier) target(c config.Channel) (*target, error) {
	raw, err := n.secret(c.URLVar)
	if err != nil {
		return nil, err
	}
	u, err := config.WebhookURL(raw)
	if err != nil {
		return nil, exit.Errorf(exit.Configuration, "the variable %s holds no usable URL: %v", c.URLVar, err)
	}
	t := &target{Channel: c, url: u}
	if c.SigningSecretVar != "" {
		if t.signing, err = n.secret(c.SigningSecretVar); err != nil {
			return nil, err
		}
	}
	tc, err := tlsConfig(c)
	if err != nil {
		return nil, err
	}
	t.client = &http.Client{
		Timeout:       time.Duration(n.settings.TimeoutSeconds) * time.Second,
		Transport:     &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tc, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return t, nil
}

// tlsConfig trusts the channel's ca_file, else the system's CAs.
func tlsConfig(c config.Channel) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if c.CAFile == "" {
		return tc, nil
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "Notifications.Channels.%s: could not read ca_file", c.Name)
	}
	tc.RootCAs = x509.NewCertPool()
	if !tc.RootCAs.AppendCertsFromPEM(pem) {
		return nil, exit.Errorf(exit.Configuration, "Notifications.Channels.%s: ca_file %s holds no PEM certificate", c.Name, c.CAFile)
	}
	return tc, nil
}

// answer is what one try got.
type answer struct {
	status int
	// retryAfter is the Retry-After asked for; set is false without one.
	retryAfter time.Duration
	hasAfter   bool
	// err is why the try failed: no answer, or an answer that is not 2xx.
	err error
	// again is set when the failure may pass: no answer, 429 or 5xx.
	again bool
}

// deliver sends m to the channel name, trying again as Notifications.Retries
// allows.
func (n *Notifier) deliver(ctx context.Context, log *slog.Logger, m *alert.Message, name string) Delivery {
	c, ok := n.settings.Channel(name)
	d := Delivery{Channel: name, Kind: c.Kind}
	if !ok {
		d.Err = exit.Errorf(exit.Metadata, "%s", n.settings.UnknownChannel(name))
		return d
	}
	t, err := n.target(c)
	if err == nil {
		var body []byte
		if body, err = n.render(t, m); err == nil {
			return n.post(ctx, log, t, m, body)
		}
	}
	d.Err = err
	log.Warn("could not send to the channel", "channel", name, "kind", c.Kind, "error", err)
	return d
}

// render writes m in the channel's format.
func (n *Notifier) render(t *target, m *alert.Message) ([]byte, error) {
	switch t.Kind {
	case config.ChannelSlack:
		return Slack(m)
	case config.ChannelTeams:
		return Teams(m)
	}
	return Webhook(m, t.Name, n.now())
}

// post makes the tries of one delivery.
func (n *Notifier) post(ctx context.Context, log *slog.Logger, t *target, m *alert.Message, body []byte) Delivery {
	d := Delivery{Channel: t.Name, Kind: t.Kind}
	id := DeliveryID(m, t.Name)
	to := Redact(t.url)
	wait := n.backoff
	for {
		d.Tries++
		a := t.try(ctx, body, id, string(m.Event), n.now())
		d.Status, d.Err = a.status, a.err
		if a.err == nil {
			log.Info("delivered to the channel", "channel", t.Name, "kind", t.Kind, "to", to, "status", a.status, "try", d.Tries, "delivery", id)
			return d
		}
		if !a.again || ctx.Err() != nil {
			log.Warn("the channel did not take the alert", "channel", t.Name, "kind", t.Kind, "to", to, "try", d.Tries, "error", a.err)
			return d
		}
		if d.Tries > n.settings.Retries {
			log.Warn("the channel did not take the alert; no tries left", "channel", t.Name, "kind", t.Kind, "to", to,
				"try", d.Tries, "retries", n.settings.Retries, "error", a.err)
			return d
		}
		delay := wait
		if a.hasAfter {
			if a.retryAfter > MaxRetryAfter {
				d.Err = fmt.Errorf("%w; it asks to wait %s (Retry-After), more than the %s a delivery waits", a.err, a.retryAfter, MaxRetryAfter)
				log.Warn("the channel did not take the alert", "channel", t.Name, "kind", t.Kind, "to", to, "try", d.Tries, "error", d.Err)
				return d
			}
			delay = a.retryAfter
		}
		wait = min(2*wait, MaxBackoff)
		log.Warn("the channel did not take the alert; trying again", "channel", t.Name, "kind", t.Kind, "to", to,
			"try", d.Tries, "error", a.err, "after", delay.String(), "retry_after", a.hasAfter)
		select {
		case <-ctx.Done():
			d.Err = fmt.Errorf("%w; stopped before trying again: %w", a.err, context.Cause(ctx))
			return d
		case <-time.After(delay):
		}
	}
}

// try makes one request.
func (t *target) try(ctx context.Context, body []byte, id, event string, now time.Time) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url.String(), bytes.NewReader(body))
	if err != nil {
		return answer{err: errors.New("could not make the request")}
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "etl-craft")
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderEvent, event)
	if t.signing != "" {
		ts := strconv.FormatInt(now.Unix(), 10)
		req.Header.Set(HeaderTimestamp, ts)
		req.Header.Set(HeaderSignature, Sign(t.signing, ts, body))
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return answer{err: t.hide(fmt.Errorf("no answer from %s: %w", Redact(t.url), unwrapURL(err))), again: true}
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	a := answer{status: resp.StatusCode}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return a
	}
	a.err = t.hide(fmt.Errorf("%s answered %d %s%s", Redact(t.url), resp.StatusCode, http.StatusText(resp.StatusCode), quote(reply)))
	a.again = resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		a.err = fmt.Errorf("%w: etl-craft follows no redirect; set the channel's URL to where it leads", a.err)
	}
	a.retryAfter, a.hasAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	return a
}

// Sign is the signature of a webhook's body: "v1=" and the hex HMAC-SHA256,
// keyed with secret, of timestamp, ".", and body.
func Sign(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp + "."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// unwrapURL drops the *url.Error around a client's error, which names the
// whole URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return errors.New("timed out")
		}
		return ue.Err
	}
	return err
}

// hide replaces in err's text the URL, its path and query, and the signing
// secret, should an answer or an error quote them.
func (t *target) hide(err error) error {
	s := err.Error()
	for _, secret := range []string{t.url.String(), t.url.EscapedPath(), t.url.RawQuery, t.signing} {
		if len(secret) >= 8 {
			s = strings.ReplaceAll(s, secret, "…")
		}
	}
	if s == err.Error() {
		return err
	}
	return errors.New(s)
}

// quote is a channel's answer as a message quotes it: ": " and its first
// maxReply characters on one line, control characters dropped; "" for none.
func quote(reply []byte) string {
	s := strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || !unicode.IsPrint(r) && r != ' ' {
			return ' '
		}
		return r
	}, string(reply))), " ")
	if s == "" {
		return ""
	}
	if r := []rune(s); len(r) > maxReply {
		s = string(r[:maxReply]) + "…"
	}
	return ": " + s
}

// Redact writes a channel's URL without its secret parts: the scheme and
// host, and "/…" when it has a path or query.
func Redact(u *url.URL) string {
	s := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		s += "/…"
	}
	return s
}
