package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/clientcred/clientcredtest"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
)

// withEmail writes the Orchestration.Email block of the SMTP server srv,
// with the login lines auth (indented four spaces).
func withEmail(p *e2e.Project, srv *mailtest.Server, auth string) {
	p.T.Helper()
	block := fmt.Sprintf("  Email:\n    host: %s\n    port: %d\n    from_address: etl@example.com\n    tls_mode: starttls\n    ca_file: %s\n%s",
		srv.Host, srv.Port, srv.CAFile, auth)
	yml := p.Config()
	p.Write("craft-connector.yml", strings.Replace(yml, "Orchestration:\n  Mode: local\n", "Orchestration:\n  Mode: local\n"+block, 1))
}

// doctor logs in to the SMTP relay without sending anything, and a refused
// login fails the Email relay check naming the authentication step and the
// server's reply.
func TestDoctorEmailCheck(t *testing.T) {
	srv := mailtest.Start(t, mailtest.Options{TLS: "starttls", User: "etl", Password: "pw"})
	p := newProject(t, engine.SQLite, "")
	withEmail(p, srv, "    auth_mode: password\n    user: etl\n    secret: MAIL_SECRET\n")
	p.Env = append(p.Env, "MAIL_SECRET=pw")
	p.OK("setup")
	before := srv.Logins()
	r := p.OK("doctor")
	lines := checkLines(r.Stdout)
	relay := fmt.Sprintf("%s:%d", srv.Host, srv.Port)
	if lines["Email secret"] != "[OK  ] Email secret: resolved from MAIL_SECRET\n" ||
		lines["Email TLS"] != "[OK  ] Email TLS: tls_mode=starttls, ca_file="+srv.CAFile+"\n" ||
		lines["Email relay"] != "[OK  ] Email relay: "+relay+" answers\n" || lines["Email auth"] != "" {
		t.Fatalf("doctor:\n%s", r.Stdout)
	}
	if srv.Logins() != before+1 || len(srv.Messages()) != 0 {
		t.Fatalf("doctor logged in %d times and sent %d messages; want one login, no message", srv.Logins()-before, len(srv.Messages()))
	}

	r = p.Run([]string{"MAIL_SECRET=wrong"}, "doctor")
	want := "[FAIL] Email relay: SMTP server " + relay + ": authentication failed: 535 5.7.8 Authentication credentials invalid\n"
	if r.Code != 1 || checkLines(r.Stdout)["Email relay"] != want || !strings.HasSuffix(r.Stdout, " 1 failed\n") {
		t.Fatalf("exit %d, want 1 with %q:\n%s", r.Code, want, r.Stdout)
	}
}

// With auth_mode oauth, doctor logs in with XOAUTH2 and a token from
// token_url, and still warns that oauth is unverified against a live relay.
func TestDoctorEmailOAuth(t *testing.T) {
	tokens := clientcredtest.New(t, "etl-craft", "s3cret", "tok-1")
	srv := mailtest.Start(t, mailtest.Options{TLS: "starttls", User: "etl@example.com", Token: "tok-1"})
	p := newProject(t, engine.SQLite, "")
	withEmail(p, srv, fmt.Sprintf("    auth_mode: oauth\n    user: etl@example.com\n    client_id: etl-craft\n    token_url: %s\n    secret: MAIL_SECRET\n", tokens.URL))
	p.Env = append(p.Env, "MAIL_SECRET=s3cret")
	p.OK("setup")
	r := p.OK("doctor")
	lines := checkLines(r.Stdout)
	if !strings.HasPrefix(lines["Email auth"], "[WARN]") || !strings.HasPrefix(lines["Email relay"], "[OK  ]") {
		t.Fatalf("doctor:\n%s", r.Stdout)
	}
	if asked, _ := tokens.Asked(); asked == 0 {
		t.Fatal("doctor asked token_url for no token")
	}
}
