package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/clientcred/clientcredtest"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/mail/mailtest"
)

// withEmail writes the Orchestration.Email block of the SMTP server srv,
// with the login lines auth (indented four spaces).
func (p *project) withEmail(srv *mailtest.Server, auth string) {
	p.t.Helper()
	block := fmt.Sprintf("  Email:\n    host: %s\n    port: %d\n    from_address: etl@example.com\n    tls_mode: starttls\n    ca_file: %s\n%s",
		srv.Host, srv.Port, srv.CAFile, auth)
	yml := readFile(p.t, p.dir+"/craft-connector.yml")
	p.write("craft-connector.yml", strings.Replace(yml, "Orchestration:\n  Mode: local\n", "Orchestration:\n  Mode: local\n"+block, 1))
}

// doctor logs in to the SMTP relay without sending anything, and a refused
// login fails the Email relay check naming the authentication step and the
// server's reply.
func TestDoctorEmailCheck(t *testing.T) {
	srv := mailtest.Start(t, mailtest.Options{TLS: "starttls", User: "etl", Password: "pw"})
	p := newProject(t, engine.SQLite, "")
	p.withEmail(srv, "    auth_mode: password\n    user: etl\n    secret: MAIL_SECRET\n")
	p.env = append(p.env, "MAIL_SECRET=pw")
	p.ok("setup")
	before := srv.Logins()
	r := p.ok("doctor")
	lines := checkLines(r.stdout)
	relay := fmt.Sprintf("%s:%d", srv.Host, srv.Port)
	if lines["Email secret"] != "[OK  ] Email secret: resolved from MAIL_SECRET\n" ||
		lines["Email TLS"] != "[OK  ] Email TLS: tls_mode=starttls, ca_file="+srv.CAFile+"\n" ||
		lines["Email relay"] != "[OK  ] Email relay: "+relay+" answers\n" || lines["Email auth"] != "" {
		t.Fatalf("doctor:\n%s", r.stdout)
	}
	if srv.Logins() != before+1 || len(srv.Messages()) != 0 {
		t.Fatalf("doctor logged in %d times and sent %d messages; want one login, no message", srv.Logins()-before, len(srv.Messages()))
	}

	r = p.run([]string{"MAIL_SECRET=wrong"}, "doctor")
	want := "[FAIL] Email relay: SMTP server " + relay + ": authentication failed: 535 5.7.8 Authentication credentials invalid\n"
	if r.code != 1 || checkLines(r.stdout)["Email relay"] != want || !strings.HasSuffix(r.stdout, " 1 failed\n") {
		t.Fatalf("exit %d, want 1 with %q:\n%s", r.code, want, r.stdout)
	}
}

// With auth_mode oauth, doctor logs in with XOAUTH2 and a token from
// token_url, and still warns that oauth is unverified against a live relay.
func TestDoctorEmailOAuth(t *testing.T) {
	tokens := clientcredtest.New(t, "etl-craft", "s3cret", "tok-1")
	srv := mailtest.Start(t, mailtest.Options{TLS: "starttls", User: "etl@example.com", Token: "tok-1"})
	p := newProject(t, engine.SQLite, "")
	p.withEmail(srv, fmt.Sprintf("    auth_mode: oauth\n    user: etl@example.com\n    client_id: etl-craft\n    token_url: %s\n    secret: MAIL_SECRET\n", tokens.URL))
	p.env = append(p.env, "MAIL_SECRET=s3cret")
	p.ok("setup")
	r := p.ok("doctor")
	lines := checkLines(r.stdout)
	if !strings.HasPrefix(lines["Email auth"], "[WARN]") || !strings.HasPrefix(lines["Email relay"], "[OK  ]") {
		t.Fatalf("doctor:\n%s", r.stdout)
	}
	if asked, _ := tokens.Asked(); asked == 0 {
		t.Fatal("doctor asked token_url for no token")
	}
}
