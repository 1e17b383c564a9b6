package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/textproto"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
	"github.com/wneessen/go-mail/smtp"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Step is a step of a conversation with an SMTP server.
type Step string

// The steps, in the order a conversation takes them.
const (
	// StepConnection is reaching the server: the connection, its greeting
	// and EHLO.
	StepConnection Step = "connection"
	// StepTLS is the TLS handshake, after STARTTLS or at once with ssl.
	StepTLS Step = "TLS"
	// StepAuthentication is the login, and the token it needs.
	StepAuthentication Step = "authentication"
	// StepSender is MAIL FROM.
	StepSender Step = "sender"
	// StepRecipients is RCPT TO, failed when every recipient was refused.
	StepRecipients Step = "recipients"
	// StepMessage is DATA: the server refused the message itself.
	StepMessage Step = "message"
)

// Error is a failed step of a conversation with an SMTP server. Connection,
// TLS and authentication failures carry exit.ConnectionTest; the others
// exit.Handler.
type Error struct {
	// Server is the server's host:port.
	Server string
	// Step is the step that failed.
	Step Step
	// Reply is the server's reply, such as "535 5.7.8 Authentication
	// failed"; empty when the server gave none (the connection failed, the
	// certificate was not trusted).
	Reply string
	// Err is the cause.
	Err error
}

// Error names the server, the step and the reply or cause.
func (e *Error) Error() string {
	why := e.Reply
	if why == "" {
		why = e.Err.Error()
	}
	return fmt.Sprintf("SMTP server %s: %s failed: %s", e.Server, e.Step, why)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// defaultTimeout bounds a conversation whose context has no deadline.
const defaultTimeout = time.Minute

// stepError returns the failure of step as an *Error carrying its exit code.
func (s *Sender) stepError(step Step, err error) error {
	e := &Error{Server: s.addr(), Step: step, Err: err}
	if refused, ok := errors.AsType[refusedError](err); ok {
		e.Reply = refused.Error()
	} else if reply, ok := errors.AsType[*textproto.Error](err); ok {
		e.Reply = replyText(reply)
	}
	code := exit.Handler
	switch step {
	case StepConnection, StepTLS, StepAuthentication:
		code = exit.ConnectionTest
	}
	return &exit.Error{Code: code, Err: e}
}

func (s *Sender) addr() string {
	return net.JoinHostPort(s.settings.Host, strconv.Itoa(s.settings.Port))
}

// conn is a conversation with the SMTP server, ready to send mail.
type conn struct {
	*smtp.Client
	s    *Sender
	ctx  context.Context
	stop func() bool // stops the context's watch of the connection
}

// fail returns the failure of step; when the context has ended, the cause
// is the context's.
func (c *conn) fail(step Step, err error) error {
	if c.ctx.Err() != nil {
		err = context.Cause(c.ctx)
	}
	return c.s.stepError(step, err)
}

// quit ends the conversation politely, then closes the connection.
func (c *conn) quit() {
	c.stop()
	if c.Quit() != nil {
		c.Close()
	}
}

// dial connects to the server and takes the steps up to sending: the
// greeting and EHLO, STARTTLS with tls_mode starttls, and the login. The
// conversation ends by ctx's deadline (or defaultTimeout), or when ctx is
// cancelled.
func (s *Sender) dial(ctx context.Context) (*conn, error) {
	var secret string
	if s.secret != nil {
		var err error
		if secret, err = s.secret(); err != nil {
			return nil, s.stepError(StepAuthentication, err)
		}
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultTimeout)
	}
	dialer := &net.Dialer{Deadline: deadline}
	raw, err := dialer.DialContext(ctx, "tcp", s.addr())
	if err != nil {
		return nil, s.stepError(StepConnection, err)
	}
	raw.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { raw.SetDeadline(time.Now()) })
	talk := &conn{s: s, ctx: ctx, stop: stop}
	fail := func(step Step, err error) (*conn, error) {
		stop()
		raw.Close()
		return nil, talk.fail(step, err)
	}
	nc := raw
	if s.settings.TLSMode == TLSSSL {
		tc := tls.Client(raw, s.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fail(StepTLS, err)
		}
		nc = tc
	}
	c, err := smtp.NewClient(nc, s.settings.Host)
	if err != nil {
		return fail(StepConnection, err)
	}
	if err := c.Hello(helloName()); err != nil {
		return fail(StepConnection, err)
	}
	if s.settings.TLSMode == TLSStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return fail(StepTLS, errors.New("the server does not offer STARTTLS; set tls_mode to ssl or none"))
		}
		// StartTLS says EHLO again over TLS, which runs the handshake.
		if err := c.StartTLS(s.tls); err != nil {
			return fail(StepTLS, err)
		}
	}
	if s.secret != nil {
		if err := s.authenticate(c, secret); err != nil {
			return fail(StepAuthentication, err)
		}
	}
	talk.Client = c
	return talk, nil
}

// authenticate logs in with the auth mode's mechanism: XOAUTH2 with the
// token; PLAIN with the password, or LOGIN when the server offers that and
// not PLAIN.
func (s *Sender) authenticate(c *smtp.Client, secret string) error {
	ok, offered := c.Extension("AUTH")
	if !ok {
		return errors.New("the server offers no login (no AUTH after EHLO)")
	}
	mechs := strings.Fields(strings.ToUpper(offered))
	var login smtp.Auth
	switch {
	case s.settings.AuthMode == AuthOAuth:
		if !slices.Contains(mechs, string(gomail.SMTPAuthXOAUTH2)) {
			return fmt.Errorf("the server offers AUTH %s, not XOAUTH2", offered)
		}
		login = smtp.XOAuth2Auth(s.settings.User, secret)
	case slices.Contains(mechs, string(gomail.SMTPAuthPlain)):
		login = smtp.PlainAuth("", s.settings.User, secret, s.settings.Host, false)
	case slices.Contains(mechs, string(gomail.SMTPAuthLogin)):
		login = smtp.LoginAuth(s.settings.User, secret, s.settings.Host, false)
	default:
		return fmt.Errorf("the server offers AUTH %s, not PLAIN or LOGIN", offered)
	}
	return c.Auth(login)
}

// helloName is the name the client gives in EHLO: this host's name, or
// localhost when it has none.
func helloName() string {
	if h, err := os.Hostname(); err == nil && h != "" && !strings.ContainsAny(h, " \r\n") {
		return h
	}
	return "localhost"
}

// deliver sends msg over a new conversation and returns the recipients the
// server refused.
func (s *Sender) deliver(ctx context.Context, msg *gomail.Msg) ([]Refusal, error) {
	from, err := msg.GetSender(false)
	if err != nil {
		return nil, exit.Wrap(exit.Handler, err, "the email has no sender")
	}
	rcpts, err := msg.GetRecipients()
	if err != nil {
		return nil, exit.Wrap(exit.Handler, err, "the email has no recipient")
	}
	c, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer c.quit()
	if err := c.Mail(from); err != nil {
		return nil, c.fail(StepSender, err)
	}
	var refused refusedError
	for _, r := range rcpts {
		if err := c.Rcpt(r); err != nil {
			addr := strings.TrimSuffix(strings.TrimPrefix(r, "<"), ">")
			refused = append(refused, Refusal{Address: addr, Reply: replyOf(err)})
		}
	}
	if len(refused) == len(rcpts) {
		return refused, c.fail(StepRecipients, refused)
	}
	w, err := c.Data()
	if err != nil {
		return refused, c.fail(StepMessage, err)
	}
	if _, err := msg.WriteTo(w); err != nil {
		w.Close()
		return refused, c.fail(StepMessage, err)
	}
	if err := w.Close(); err != nil {
		return refused, c.fail(StepMessage, err)
	}
	return refused, nil
}

// replyOf is the server's reply in err, or err's text.
func replyOf(err error) string {
	if reply, ok := errors.AsType[*textproto.Error](err); ok {
		return replyText(reply)
	}
	return err.Error()
}

// replyText is a reply as the server wrote it, such as "550 5.1.1 no such
// user" (textproto.Error quotes the text).
func replyText(reply *textproto.Error) string {
	return fmt.Sprintf("%03d %s", reply.Code, reply.Msg)
}

// refusedError is every recipient refused, each with its reply.
type refusedError []Refusal

func (e refusedError) Error() string {
	parts := make([]string, len(e))
	for i, r := range e {
		parts[i] = r.Address + ": " + r.Reply
	}
	return strings.Join(parts, "; ")
}
