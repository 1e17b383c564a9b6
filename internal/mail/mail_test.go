package mail_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/etl-craft/etl-craft/internal/clientcred/clientcredtest"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
)

func secret(v string) func() (string, error) { return func() (string, error) { return v, nil } }

func newSender(t *testing.T, settings *config.Email, secret func() (string, error)) *mail.Sender {
	t.Helper()
	s, err := mail.New(settings, secret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// passwordServer is a STARTTLS server where etl logs in with pw.
func passwordServer(t *testing.T, o mailtest.Options) (*mailtest.Server, *config.Email) {
	o.User, o.Password = "etl", "pw"
	srv := mailtest.Start(t, o)
	e := srv.Settings("etl@example.com")
	e.AuthMode, e.User, e.SecretVar = "password", "etl", "MAIL_SECRET"
	return srv, e
}

// A message goes out as multipart/alternative with its plain and HTML
// parts, the configured sender, every recipient in To and the envelope, and
// its subject on one line of at most 200 characters.
func TestMailSendWritesTheMessage(t *testing.T) {
	srv, e := passwordServer(t, mailtest.Options{TLS: "starttls"})
	e.FromName = "ETL Craft"
	long := "Run 42 of SALES_MART\r\n  ended FAILED\n\n" + strings.Repeat("é", 250)
	res, err := newSender(t, e, secret("pw")).Send(context.Background(), mail.Message{
		To:      []string{"Ann Analyst <ann@example.com>", "bob@example.com"},
		Subject: long,
		Text:    "Run 42 failed.\nTask load: 3 rows.",
		HTML:    "<p>Run 42 <b>failed</b> — see the table.</p>",
	})
	if err != nil || len(res.Refused) != 0 {
		t.Fatalf("send: %+v, %v", res, err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages", len(msgs))
	}
	m := msgs[0]
	if m.From != "etl@example.com" || strings.Join(m.To, ",") != "ann@example.com,bob@example.com" ||
		!m.TLS || m.User != "etl" || m.Mechanism != "PLAIN" {
		t.Fatalf("envelope %+v", m)
	}
	p := mailtest.Parse(t, m.Data)
	want := "Run 42 of SALES_MART ended FAILED " + strings.Repeat("é", 200-len("Run 42 of SALES_MART ended FAILED "))
	if p.Subject != want || utf8.RuneCountInString(p.Subject) != mail.MaxSubject || res.Subject != want {
		t.Fatalf("subject %q (result %q), want %q", p.Subject, res.Subject, want)
	}
	from, _ := p.Header.AddressList("From")
	to, _ := p.Header.AddressList("To")
	if len(from) != 1 || from[0].Name != "ETL Craft" || from[0].Address != "etl@example.com" ||
		len(to) != 2 || to[0].Name != "Ann Analyst" || to[0].Address != "ann@example.com" || to[1].Address != "bob@example.com" {
		t.Fatalf("From %v, To %v", from, to)
	}
	if p.Header.Get("Date") == "" || p.Header.Get("Message-Id") == "" || p.Header.Get("User-Agent") != "etl-craft" {
		t.Fatalf("headers %v", p.Header)
	}
	if p.Text != "Run 42 failed.\r\nTask load: 3 rows." || p.HTML != "<p>Run 42 <b>failed</b> — see the table.</p>" {
		t.Fatalf("text %q, html %q", p.Text, p.HTML)
	}

	// Without HTML the message is plain text alone; a From of the message's
	// own replaces the configured sender.
	if _, err := newSender(t, e, secret("pw")).Send(context.Background(),
		mail.Message{From: "SLA <sla@example.com>", To: []string{"ann@example.com"}, Subject: "SLA", Text: "late"}); err != nil {
		t.Fatal(err)
	}
	m = srv.Messages()[1]
	p = mailtest.Parse(t, m.Data)
	from, _ = p.Header.AddressList("From")
	if m.From != "sla@example.com" || from[0].Name != "SLA" || strings.TrimRight(p.Text, "\r\n") != "late" || p.HTML != "" ||
		!strings.HasPrefix(p.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("plain message from %q: %v\n%q", m.From, p.Header, p.Text)
	}
}

func TestMailSubject(t *testing.T) {
	cases := map[string]string{
		"Daily load":                  "Daily load",
		"  one\r\ntwo\rthree\n four ": "one two three four",
		"a\n\n\n  \nb":                "a b",
		strings.Repeat("x", 201):      strings.Repeat("x", 200),
		strings.Repeat("ü", 300):      strings.Repeat("ü", 200),
	}
	for in, want := range cases {
		if got := mail.Subject(in); got != want {
			t.Errorf("Subject(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every tls_mode reaches its server: none in clear, starttls and ssl
// encrypted, trusting ca_file.
func TestMailTLSModes(t *testing.T) {
	for _, mode := range []string{"none", "starttls", "ssl"} {
		t.Run(mode, func(t *testing.T) {
			srv := mailtest.Start(t, mailtest.Options{TLS: mode})
			s := newSender(t, srv.Settings("etl@example.com"), nil)
			if err := s.Check(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Send(context.Background(), mail.Message{To: []string{"ann@example.com"}, Subject: mode, Text: "hi"}); err != nil {
				t.Fatal(err)
			}
			if m := srv.Messages(); len(m) != 1 || m[0].TLS != (mode != "none") {
				t.Fatalf("messages %+v", m)
			}
		})
	}
}

// Refused recipients are listed and the others get the message; when all
// are refused, the send fails at the recipients step with each reply.
func TestMailRecipientRefusal(t *testing.T) {
	srv, e := passwordServer(t, mailtest.Options{TLS: "ssl", Refuse: []string{"bob@example.com", "carl@example.com"}})
	s := newSender(t, e, secret("pw"))
	res, err := s.Send(context.Background(), mail.Message{To: []string{"ann@example.com", "bob@example.com"}, Subject: "s", Text: "t"})
	if err != nil || len(res.Refused) != 1 || res.Refused[0] != (mail.Refusal{Address: "bob@example.com", Reply: "550 5.1.1 no such user here"}) {
		t.Fatalf("partial refusal: %+v, %v", res, err)
	}
	if m := srv.Messages(); len(m) != 1 || strings.Join(m[0].To, ",") != "ann@example.com" {
		t.Fatalf("messages %+v", m)
	}

	res, err = s.Send(context.Background(), mail.Message{To: []string{"bob@example.com", "Carl <carl@example.com>"}, Subject: "s", Text: "t"})
	me, ok := errors.AsType[*mail.Error](err)
	if !ok || me.Step != mail.StepRecipients || !exit.Is(err, exit.Handler) || len(res.Refused) != 2 ||
		me.Reply != "bob@example.com: 550 5.1.1 no such user here; carl@example.com: 550 5.1.1 no such user here" {
		t.Fatalf("total refusal: %+v, %v", res, err)
	}
	if len(srv.Messages()) != 1 {
		t.Fatal("a message went out with every recipient refused")
	}
}

// Check logs in without sending; each failure names its step, and the
// server's reply when there is one.
func TestMailCheckNamesTheFailingStep(t *testing.T) {
	t.Run("ok", func(t *testing.T) {
		srv, e := passwordServer(t, mailtest.Options{TLS: "starttls"})
		if err := newSender(t, e, secret("pw")).Check(context.Background()); err != nil {
			t.Fatal(err)
		}
		if srv.Logins() != 1 || len(srv.Messages()) != 0 {
			t.Fatalf("%d logins, %d messages", srv.Logins(), len(srv.Messages()))
		}
	})
	t.Run("LOGIN when PLAIN is not offered", func(t *testing.T) {
		srv, e := passwordServer(t, mailtest.Options{TLS: "ssl", Mechanisms: []string{"LOGIN"}})
		s := newSender(t, e, secret("pw"))
		if _, err := s.Send(context.Background(), mail.Message{To: []string{"ann@example.com"}, Subject: "s", Text: "t"}); err != nil {
			t.Fatal(err)
		}
		if m := srv.Messages(); len(m) != 1 || m[0].Mechanism != "LOGIN" {
			t.Fatalf("messages %+v", m)
		}
	})

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close()
	plain := mailtest.Start(t, mailtest.Options{})
	failures := []struct {
		name   string
		server func() (*config.Email, string)
		step   mail.Step
		reply  string
		text   string
	}{
		{"connection refused", func() (*config.Email, string) {
			e := plain.Settings("etl@example.com")
			e.Port = closed
			return e, ""
		}, mail.StepConnection, "", "connection refused"},
		{"untrusted certificate", func() (*config.Email, string) {
			e := mailtest.Start(t, mailtest.Options{TLS: "starttls"}).Settings("etl@example.com")
			e.CAFile = ""
			return e, ""
		}, mail.StepTLS, "", "certificate"},
		{"ssl against a plain server", func() (*config.Email, string) {
			e := plain.Settings("etl@example.com")
			e.TLSMode = "ssl"
			return e, ""
		}, mail.StepTLS, "", ""},
		{"no STARTTLS offered", func() (*config.Email, string) {
			e := plain.Settings("etl@example.com")
			e.TLSMode = "starttls"
			return e, ""
		}, mail.StepTLS, "", "the server does not offer STARTTLS"},
		{"wrong password", func() (*config.Email, string) {
			_, e := passwordServer(t, mailtest.Options{TLS: "starttls"})
			return e, "wrong"
		}, mail.StepAuthentication, "535 5.7.8 Authentication credentials invalid", "authentication failed: 535 5.7.8 Authentication credentials invalid"},
		{"no login offered", func() (*config.Email, string) {
			e := mailtest.Start(t, mailtest.Options{TLS: "ssl"}).Settings("etl@example.com")
			e.AuthMode, e.User = "password", "etl"
			return e, "pw"
		}, mail.StepAuthentication, "", "the server offers no login"},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			e, pw := f.server()
			var sec func() (string, error)
			if pw != "" {
				sec = secret(pw)
			}
			err := newSender(t, e, sec).Check(context.Background())
			t.Log(err)
			me, ok := errors.AsType[*mail.Error](err)
			if !ok || me.Step != f.step || me.Reply != f.reply || !exit.Is(err, exit.ConnectionTest) ||
				!strings.Contains(err.Error(), f.text) || !strings.HasPrefix(err.Error(), "SMTP server 127.0.0.1:") {
				t.Fatalf("got %v (%+v), want step %s, reply %q", err, me, f.step, f.reply)
			}
		})
	}
}

// auth_mode oauth logs in with XOAUTH2 and a client-credentials token from
// token_url; a refused grant or a refused token fails authentication.
func TestMailXOAUTH2(t *testing.T) {
	tokens := clientcredtest.New(t, "etl-craft", "s3cret", "tok-1")
	srv := mailtest.Start(t, mailtest.Options{TLS: "starttls", User: "etl@example.com", Token: "tok-1"})
	e := srv.Settings("etl@example.com")
	e.AuthMode, e.User, e.ClientID, e.TokenURL, e.Scope, e.SecretVar = "oauth", "etl@example.com", "etl-craft", tokens.URL, "smtp", "MAIL_SECRET"
	s := newSender(t, e, secret("s3cret"))
	for range 2 {
		if _, err := s.Send(context.Background(), mail.Message{To: []string{"ann@example.com"}, Subject: "s", Text: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if m := srv.Messages(); len(m) != 2 || m[0].Mechanism != "XOAUTH2" || m[0].User != "etl@example.com" {
		t.Fatalf("messages %+v", m)
	}
	if asked, scopes := tokens.Asked(); asked != 1 || scopes[0] != "smtp" {
		t.Fatalf("%d grants, scopes %q: the token is reused until it expires", asked, scopes)
	}

	err := newSender(t, e, secret("wr0ng")).Check(context.Background())
	if me, ok := errors.AsType[*mail.Error](err); !ok || me.Step != mail.StepAuthentication ||
		!strings.Contains(err.Error(), "could not get an OAuth token from "+tokens.URL) || strings.Contains(err.Error(), "wr0ng") {
		t.Fatalf("refused grant: %v", err)
	}
	other := mailtest.Start(t, mailtest.Options{TLS: "ssl", User: "etl@example.com", Token: "tok-2"})
	e2 := *e
	e2.Port, e2.TLSMode, e2.CAFile = other.Port, "ssl", other.CAFile
	err = newSender(t, &e2, secret("s3cret")).Check(context.Background())
	if me, ok := errors.AsType[*mail.Error](err); !ok || me.Step != mail.StepAuthentication || me.Reply != "535 5.7.8 Authentication credentials invalid" {
		t.Fatalf("refused token: %v", err)
	}
}

// New refuses a login without TLS and a ca_file it cannot use.
func TestMailNewRefusesUnusableTLSSettings(t *testing.T) {
	srv := mailtest.Start(t, mailtest.Options{})
	e := srv.Settings("etl@example.com")
	e.AuthMode, e.User = "password", "etl"
	if _, err := mail.New(e, secret("pw")); !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), "use tls_mode starttls or ssl") {
		t.Fatalf("login without TLS: %v", err)
	}
	e.TLSMode, e.CAFile = "starttls", filepath.Join(t.TempDir(), "missing.pem")
	if _, err := mail.New(e, secret("pw")); !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), "ca_file") {
		t.Fatalf("missing ca_file: %v", err)
	}
	os.WriteFile(e.CAFile, []byte("not a certificate"), 0o600)
	if _, err := mail.New(e, secret("pw")); !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Fatalf("empty ca_file: %v", err)
	}
}

// With transport sendmail the message is piped to the program, which reads
// the recipients from the headers.
func TestMailSendmail(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "sent.eml")
	prog := filepath.Join(dir, "sendmail")
	os.WriteFile(prog, []byte("#!/bin/sh\necho \"$@\" > "+out+".args\ncat > "+out+"\n"), 0o755)
	e := &config.Email{Transport: "sendmail", FromAddress: "etl@example.com", SendmailPath: prog}
	s := newSender(t, e, nil)
	if err := s.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	res, err := s.Send(context.Background(), mail.Message{To: []string{"ann@example.com"}, Subject: "a\nb", Text: "body", HTML: "<p>body</p>"})
	if err != nil || len(res.Refused) != 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	data, _ := os.ReadFile(out)
	args, _ := os.ReadFile(out + ".args")
	p := mailtest.Parse(t, data)
	if p.Subject != "a b" || p.Header.Get("To") != "<ann@example.com>" || p.Text != "body" || p.HTML != "<p>body</p>" ||
		strings.TrimSpace(string(args)) != "-oi -t" {
		t.Fatalf("args %q, header %v, text %q, html %q", args, p.Header, p.Text, p.HTML)
	}

	os.Chmod(prog, 0o644)
	if err := s.Check(context.Background()); err == nil || err.Error() != "sendmail at "+prog+" is not executable" {
		t.Fatalf("not executable: %v", err)
	}
	e.SendmailPath = filepath.Join(dir, "missing")
	if _, err := newSender(t, e, nil).Send(context.Background(), mail.Message{To: []string{"a@b.c"}, Text: "x"}); err == nil ||
		err.Error() != "sendmail at "+e.SendmailPath+" does not exist" {
		t.Fatalf("missing: %v", err)
	}
}

// A server that never answers holds the conversation no longer than the
// context allows.
func TestMailSilentServerEndsWithTheContext(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	e := &config.Email{Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port, FromAddress: "etl@example.com", AuthMode: "none", TLSMode: "none"}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	err = newSender(t, e, nil).Check(ctx)
	if me, ok := errors.AsType[*mail.Error](err); !ok || me.Step != mail.StepConnection || !errors.Is(err, context.Canceled) {
		t.Fatalf("silent server: %v", err)
	}
}
