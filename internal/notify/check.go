package notify

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/etl-craft/etl-craft/internal/config"
)

// Check tells, for doctor, whether the channel can be reached, sending no
// alert: its URL variable holds a usable URL; the host's name resolves
// (DNS); an https host completes a verified TLS handshake; and a Slack
// channel answers a dry request, a POST of a message without text ({}),
// which Slack refuses with 400 and posts nothing, while a URL that is not
// live is answered 403, 404 or 410 with Slack's reason. A Teams workflow
// or a webhook gets no request: any request would run the workflow or reach
// the receiver as an alert. The detail and the error show the URL as
// Redact writes it.
func (n *Notifier) Check(ctx context.Context, name string) (string, error) {
	c, ok := n.settings.Channel(name)
	if !ok {
		return "", fmt.Errorf("%s", n.settings.UnknownChannel(name))
	}
	t, err := n.target(c)
	if err != nil {
		return "", err
	}
	to := Redact(t.url)
	host, port := t.url.Hostname(), t.url.Port()
	addrs, err := net.DefaultResolver.LookupHost(ctx, host)
	if err != nil {
		return "", t.hide(fmt.Errorf("%s %s: DNS: %v", c.Kind, to, err))
	}
	said := []string{fmt.Sprintf("%s resolves (%s)", host, plural(len(addrs), "address"))}
	if t.url.Scheme == "https" {
		if port == "" {
			port = "443"
		}
		tc := t.client.Transport.(*http.Transport).TLSClientConfig.Clone()
		tc.ServerName = host
		d := tls.Dialer{Config: tc}
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
		if err != nil {
			return "", t.hide(fmt.Errorf("%s %s: TLS: %v", c.Kind, to, err))
		}
		version := tls.VersionName(conn.(*tls.Conn).ConnectionState().Version)
		conn.Close()
		said = append(said, "its certificate is verified ("+version+")")
	} else {
		said = append(said, "http to this machine, without TLS")
	}
	if c.Kind == config.ChannelSlack {
		dry, err := t.dry(ctx)
		if err != nil {
			return "", fmt.Errorf("%s %s: %w", c.Kind, to, err)
		}
		said = append(said, dry)
	} else {
		said = append(said, "no request is sent: it would deliver an alert")
	}
	return c.Kind + " " + to + ": " + strings.Join(said, ", "), nil
}

// dry posts Slack a message without text: a live URL refuses it with 400.
func (t *target) dry(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url.String(), bytes.NewReader([]byte("{}")))
	if err != nil {
		return "", fmt.Errorf("could not make the dry request")
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("User-Agent", "etl-craft")
	resp, err := t.client.Do(req)
	if err != nil {
		return "", t.hide(fmt.Errorf("the dry request got no answer: %w", unwrapURL(err)))
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	answered := fmt.Sprintf("%d %s%s", resp.StatusCode, http.StatusText(resp.StatusCode), quote(reply))
	switch {
	case resp.StatusCode == http.StatusBadRequest:
		return "a dry request without text was refused as Slack refuses one (" + answered + "): the URL is live", nil
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return "a dry request without text was answered " + answered + ", which Slack does not answer: check that the URL is Slack's", nil
	}
	return "", t.hide(fmt.Errorf("the dry request was answered %s: the URL is not a live Slack webhook (revoked, or its channel archived or deleted)", answered))
}
