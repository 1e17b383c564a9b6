// Package mail sends mail (alerts and SLA emails) over the transport of
// Orchestration.Email: an SMTP server, with tls_mode starttls, ssl or none
// and a password or XOAUTH2 login, or the local sendmail program. go-mail
// writes the messages (MIME, encodings) and speaks SMTP; this package
// decides the envelope, reports which recipients the server refused, and
// names the step of the conversation that failed.
package mail

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"strings"

	gomail "github.com/wneessen/go-mail"

	"github.com/etl-craft/etl-craft/internal/clientcred"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// The transports, auth modes and TLS modes of Orchestration.Email.
const (
	TransportSendmail = "sendmail"

	AuthNone     = "none"
	AuthPassword = "password"
	AuthOAuth    = "oauth"

	TLSNone     = "none"
	TLSStartTLS = "starttls"
	TLSSSL      = "ssl"
)

// MaxSubject is how many characters a subject keeps (see Subject).
const MaxSubject = 200

// Message is one email: a plain-text body, and an HTML alternative of it
// when HTML is set (multipart/alternative).
type Message struct {
	// From is the sender, an address or "Name <address>"; empty sends as the
	// settings' from_address and from_name.
	From string
	// To are the recipients, each an address or "Name <address>".
	To []string
	// Subject is made one line of at most MaxSubject characters (Subject).
	Subject string
	// Text is the plain-text body.
	Text string
	// HTML is the HTML body; empty sends the plain text alone.
	HTML string
}

// Refusal is a recipient the server refused, with its reply.
type Refusal struct {
	// Address is the recipient's address, without its name.
	Address string
	// Reply is the server's reply, such as "550 5.1.1 no such user".
	Reply string
}

// Refused lists refused recipients with the server's replies:
// "gone@example.com (550 5.1.1 no such user), …".
func Refused(refused []Refusal) string {
	out := make([]string, len(refused))
	for i, r := range refused {
		out[i] = r.Address + " (" + r.Reply + ")"
	}
	return strings.Join(out, ", ")
}

// Result is what a Send did.
type Result struct {
	// Subject is the subject as sent (Subject of the message's).
	Subject string
	// Refused lists the recipients the server refused; the others got the
	// message. The sendmail transport refuses none: it reports undeliverable
	// mail to the sender later.
	Refused []Refusal
}

// Sender sends mail over one configured transport. It is safe for
// concurrent use: each Send has a connection of its own.
type Sender struct {
	settings config.Email
	// secret returns the password, or the OAuth access token, of the login;
	// nil when auth_mode is none.
	secret func() (string, error)
	tls    *tls.Config
}

// New returns a sender over the transport of settings. secret returns the
// value of the settings' secret variable (nil when there is none); it is read
// when a connection logs in, and with auth_mode oauth it is the client's
// secret that a client-credentials token is minted with. New fails, as a
// configuration error, when the TLS settings cannot be used: a login
// without TLS (it would send the credentials in clear), or a ca_file that
// cannot be read or holds no certificate.
func New(settings *config.Email, secret func() (string, error)) (*Sender, error) {
	s := &Sender{settings: *settings}
	if s.settings.Transport == TransportSendmail {
		return s, nil
	}
	switch s.settings.AuthMode {
	case "", AuthNone:
	case AuthPassword, AuthOAuth:
		if s.settings.TLSMode == TLSNone {
			return nil, exit.Errorf(exit.Configuration,
				"Orchestration.Email: auth_mode %s sends credentials: use tls_mode starttls or ssl", s.settings.AuthMode)
		}
		if secret == nil {
			return nil, exit.Errorf(exit.Configuration, "Orchestration.Email: auth_mode %s needs secret, the variable holding the secret", s.settings.AuthMode)
		}
		s.secret = secret
		if s.settings.AuthMode == AuthOAuth {
			s.secret = clientcred.Client{ID: s.settings.ClientID, Secret: secret, TokenURL: s.settings.TokenURL, Scope: s.settings.Scope}.Token()
		}
	default:
		return nil, exit.Errorf(exit.Configuration, "Orchestration.Email: auth_mode %s is not none, password or oauth", s.settings.AuthMode)
	}
	if s.settings.TLSMode == TLSNone {
		return s, nil
	}
	s.tls = &tls.Config{ServerName: s.settings.Host, MinVersion: tls.VersionTLS12}
	if s.settings.CAFile != "" {
		pem, err := os.ReadFile(s.settings.CAFile)
		if err != nil {
			return nil, exit.Wrap(exit.Configuration, err, "Orchestration.Email: could not read ca_file")
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, exit.Errorf(exit.Configuration, "Orchestration.Email: ca_file %s holds no PEM certificate", s.settings.CAFile)
		}
		s.tls.RootCAs = pool
	}
	return s, nil
}

// Check tells whether mail can be sent, without sending any: over SMTP it
// connects, says EHLO, starts TLS and logs in as configured, then quits; a
// failure is an *Error naming the step, with the server's reply. With
// sendmail it checks that the program can be run.
func (s *Sender) Check(ctx context.Context) error {
	if s.settings.Transport == TransportSendmail {
		return s.checkSendmail()
	}
	c, err := s.dial(ctx)
	if err != nil {
		return err
	}
	c.quit()
	return nil
}

// Send sends m. Over SMTP, recipients the server refuses are listed in the
// result and the others get the message; when it refuses them all, or a
// step fails, the error is an *Error naming the step.
func (s *Sender) Send(ctx context.Context, m Message) (Result, error) {
	msg, res, err := s.compose(m)
	if err != nil {
		return res, err
	}
	if s.settings.Transport == TransportSendmail {
		return res, s.sendmail(ctx, msg)
	}
	res.Refused, err = s.deliver(ctx, msg)
	return res, err
}

// compose builds the go-mail message of m.
func (s *Sender) compose(m Message) (*gomail.Msg, Result, error) {
	res := Result{Subject: Subject(m.Subject)}
	if len(m.To) == 0 {
		return nil, res, exit.Errorf(exit.Handler, "an email needs at least one recipient")
	}
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	var err error
	if m.From != "" {
		err = msg.From(m.From)
	} else {
		err = msg.FromFormat(s.settings.FromName, s.settings.FromAddress)
	}
	if err != nil {
		return nil, res, exit.Wrap(exit.Handler, err, "the sender of the email is not an address")
	}
	for _, to := range m.To {
		if err := msg.AddTo(to); err != nil {
			return nil, res, exit.Wrap(exit.Handler, err, "the recipient %q is not an address", to)
		}
	}
	msg.SetUserAgent("etl-craft")
	msg.Subject(res.Subject)
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	if m.HTML != "" {
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	}
	return msg, res, nil
}

// Subject returns s as one line of at most MaxSubject characters: each line
// break, with the blanks around it, becomes one space, and blank lines go.
func Subject(s string) string {
	var lines []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	one := []rune(strings.Join(lines, " "))
	if len(one) > MaxSubject {
		one = one[:MaxSubject]
	}
	return string(one)
}
