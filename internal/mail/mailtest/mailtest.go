// Package mailtest is an SMTP server on loopback for tests (emersion's
// go-smtp): plain, STARTTLS or implicit TLS with a throwaway certificate,
// PLAIN, LOGIN and XOAUTH2 logins, refused recipients, and a record of every
// message it accepted, which Parse reads back.
package mailtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/etl-craft/etl-craft/internal/config"
)

// Options shape a Server. The zero value is a plain server without login
// that accepts every recipient.
type Options struct {
	// TLS is "none" (the default), "starttls" (STARTTLS offered, and
	// required before a login) or "ssl" (TLS from the first byte).
	TLS string
	// User logs in with Password (PLAIN or LOGIN), or with Token (XOAUTH2);
	// empty offers no login.
	User, Password, Token string
	// Mechanisms, when set, are the only login mechanisms offered (of PLAIN,
	// LOGIN and XOAUTH2).
	Mechanisms []string
	// Refuse are recipients refused with "550 5.1.1 no such user here".
	Refuse []string
}

// Message is a message the server accepted.
type Message struct {
	// From and To are the envelope's sender and accepted recipients.
	From string
	To   []string
	// Data is the message as received (headers and body).
	Data []byte
	// User and Mechanism are the session's login; empty without one.
	User, Mechanism string
	// TLS tells whether the session was encrypted.
	TLS bool
}

// Server is a running SMTP server; it stops when the test ends.
type Server struct {
	// Host and Port are its address (Host is 127.0.0.1).
	Host string
	Port int
	// CAFile is the PEM file of the certificate it presents, to trust as
	// ca_file; empty with TLS none.
	CAFile string

	opts     Options
	mu       sync.Mutex
	messages []Message
	logins   int
}

// Start starts a server on a free loopback port.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	if o.TLS == "" {
		o.TLS = "none"
	}
	s := &Server{Host: "127.0.0.1", opts: o}
	srv := smtp.NewServer(smtp.BackendFunc(s.newSession))
	srv.Domain = "mailtest.local"
	srv.ReadTimeout, srv.WriteTimeout = 30*time.Second, 30*time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.TLS != "none" {
		cert, pemFile := certificate(t)
		s.CAFile = pemFile
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		if o.TLS == "ssl" {
			l = tls.NewListener(l, srv.TLSConfig)
		}
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(l) }()
	// Closing the listener too ends Serve even when Close ran before Serve
	// had taken the listener, which Close alone would miss.
	t.Cleanup(func() { srv.Close(); l.Close(); <-done })
	return s
}

// Settings returns Orchestration.Email settings that reach the server with
// its TLS mode, trusting its certificate, sending as from, without login;
// set AuthMode and the login's fields for one.
func (s *Server) Settings(from string) *config.Email {
	return &config.Email{Transport: "smtp", Host: s.Host, Port: s.Port, FromAddress: from,
		AuthMode: "none", TLSMode: s.opts.TLS, CAFile: s.CAFile}
}

// Messages returns the messages accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.messages)
}

// Logins returns how many sessions logged in.
func (s *Server) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// newSession starts the session of one connection.
func (s *Server) newSession(c *smtp.Conn) (smtp.Session, error) {
	_, encrypted := c.TLSConnectionState()
	return &session{srv: s, msg: Message{TLS: encrypted}, conn: c}, nil
}

// session is one connection's conversation.
type session struct {
	srv  *Server
	conn *smtp.Conn
	msg  Message
}

var (
	errNoSuchUser = &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user here"}
	errBadLogin   = &smtp.SMTPError{Code: 535, EnhancedCode: smtp.EnhancedCode{5, 7, 8}, Message: "Authentication credentials invalid"}
)

// AuthMechanisms lists the logins offered (smtp.AuthSession).
func (ss *session) AuthMechanisms() []string {
	o := ss.srv.opts
	if o.User == "" {
		return nil
	}
	var mechs []string
	if o.Password != "" {
		mechs = append(mechs, sasl.Plain, sasl.Login)
	}
	if o.Token != "" {
		mechs = append(mechs, "XOAUTH2")
	}
	if o.Mechanisms != nil {
		mechs = slices.DeleteFunc(mechs, func(m string) bool { return !slices.Contains(o.Mechanisms, m) })
	}
	return mechs
}

// Auth checks a login (smtp.AuthSession).
func (ss *session) Auth(mech string) (sasl.Server, error) {
	o := ss.srv.opts
	check := func(user string, ok bool) error {
		if user != o.User || !ok {
			return errBadLogin
		}
		ss.msg.User, ss.msg.Mechanism = user, mech
		ss.srv.mu.Lock()
		ss.srv.logins++
		ss.srv.mu.Unlock()
		return nil
	}
	switch mech {
	case sasl.Plain:
		return sasl.NewPlainServer(func(_, user, password string) error { return check(user, password == o.Password) }), nil
	case sasl.Login:
		return &loginServer{check: func(user, password string) error { return check(user, password == o.Password) }}, nil
	case "XOAUTH2":
		return xoauth2Server(func(user, token string) error { return check(user, token == o.Token) }), nil
	}
	return nil, smtp.ErrAuthUnsupported
}

// Mail starts a message (smtp.Session).
func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	ss.msg.From = from
	return nil
}

// Rcpt accepts or refuses a recipient (smtp.Session).
func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if slices.Contains(ss.srv.opts.Refuse, to) {
		return errNoSuchUser
	}
	ss.msg.To = append(ss.msg.To, to)
	return nil
}

// Data records the message (smtp.Session).
func (ss *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := ss.msg
	m.Data = b
	ss.srv.mu.Lock()
	ss.srv.messages = append(ss.srv.messages, m)
	ss.srv.mu.Unlock()
	ss.Reset()
	return nil
}

// Reset forgets the message under way, keeping the login (smtp.Session).
func (ss *session) Reset() {
	_, encrypted := ss.conn.TLSConnectionState()
	ss.msg = Message{User: ss.msg.User, Mechanism: ss.msg.Mechanism, TLS: encrypted}
}

// Logout ends the session (smtp.Session).
func (ss *session) Logout() error { return nil }

// loginServer is the server side of the LOGIN mechanism: it asks for the
// user name, then the password.
type loginServer struct {
	check func(user, password string) error
	user  *string
}

// Next answers one step of LOGIN (sasl.Server).
func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	switch {
	case response == nil && l.user == nil:
		return []byte("Username:"), false, nil
	case l.user == nil:
		u := string(response)
		l.user = &u
		return []byte("Password:"), false, nil
	}
	return nil, true, l.check(*l.user, string(response))
}

// xoauth2Server is the server side of XOAUTH2: one response,
// "user=U\x01auth=Bearer T\x01\x01".
type xoauth2Server func(user, token string) error

// Next checks the response (sasl.Server).
func (x xoauth2Server) Next(response []byte) ([]byte, bool, error) {
	if response == nil {
		return []byte{}, false, nil
	}
	var user, token string
	for _, f := range bytes.Split(response, []byte{1}) {
		k, v, _ := strings.Cut(string(f), "=")
		switch k {
		case "user":
			user = v
		case "auth":
			token, _ = strings.CutPrefix(v, "Bearer ")
		}
	}
	if user == "" || token == "" {
		return nil, true, errors.New("malformed XOAUTH2 response")
	}
	return nil, true, x(user, token)
}

// Parsed is a message read back with net/mail and mime/multipart: its
// headers, its decoded subject, and its plain-text and HTML parts as sent
// (quoted-printable decoded, CRLF line ends kept).
type Parsed struct {
	Header     mail.Header
	Subject    string
	Text, HTML string
}

// Parse reads a message as the server received it (Message.Data); a
// message that is not multipart/alternative is all Text.
func Parse(t testing.TB, data []byte) Parsed {
	t.Helper()
	m, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%v in\n%s", err, data)
	}
	p := Parsed{Header: m.Header}
	if p.Subject, err = new(mime.WordDecoder).DecodeHeader(m.Header.Get("Subject")); err != nil {
		t.Fatal(err)
	}
	mt, params, err := mime.ParseMediaType(m.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	if mt != "multipart/alternative" {
		body, _ := io.ReadAll(m.Body)
		p.Text = string(body)
		return p
	}
	r := multipart.NewReader(m.Body, params["boundary"])
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(part) // quoted-printable is decoded by NextPart
		ct, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		switch ct {
		case "text/plain":
			p.Text = string(body)
		case "text/html":
			p.HTML = string(body)
		default:
			t.Fatalf("unexpected part %s", ct)
		}
	}
	return p
}

// certificate makes a throwaway self-signed certificate for 127.0.0.1 and
// localhost, and writes it to a PEM file.
func certificate(t testing.TB) (tls.Certificate, string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mailtest"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "mailtest-ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, file
}
