// Package protocoltest serves the client protocols of the cloud warehouses
// on local TLS servers, for tests: the Databricks SQL Statement Execution
// API and the Trino client protocol. No live Databricks or Trino can be
// reached from the test machines, so these servers stand in for them: each
// checks every request the way the service documents it (authentication,
// the statement's fields, the polling of a statement still running, the
// cancel or kill of one) and answers with the documented JSON, the rows of
// each statement coming from the test's Answerer. They record every
// statement, which golden tests compare with the expected sequence.
package protocoltest

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
)

// Column is a result column: its name and the service's type name.
type Column struct {
	Name string
	Type string
}

// Result is how the server answers one statement.
type Result struct {
	Columns []Column
	Rows    [][]*string
	// Error fails the statement with this message (and ErrorCode).
	Error     string
	ErrorCode string
	// Running keeps the statement running until the client cancels it.
	Running bool
}

// Statement is a statement the server received, with its bound values as
// the client sent them (nil for NULL).
type Statement struct {
	SQL  string
	Args []*string
}

// Answerer answers a statement.
type Answerer func(s Statement) Result

// server is what both protocols share: the TLS server, the answerer and
// the record of statements and cancels.
type server struct {
	srv    *httptest.Server
	answer Answerer

	mu       sync.Mutex
	sent     []Statement
	cancels  []string
	statuses map[string]Result
}

func newServer(t testing.TB, answer Answerer, h func(s *server) http.HandlerFunc) *server {
	s := &server{answer: answer, statuses: map[string]Result{}}
	s.srv = httptest.NewTLSServer(h(s))
	t.Cleanup(s.srv.Close)
	return s
}

// record keeps a statement and returns its number, from 1.
func (s *server) record(st Statement) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, st)
	return len(s.sent)
}

func (s *server) cancelled(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancels = append(s.cancels, id)
}

// Statements returns the statements received so far, in order.
func (s *server) Statements() []Statement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Statement(nil), s.sent...)
}

// Cancels returns the ids of the statements the client cancelled.
func (s *server) Cancels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cancels...)
}

// Client returns an HTTP client that trusts the server.
func (s *server) Client() *http.Client { return s.srv.Client() }

// HostPort returns the server's host and port.
func (s *server) HostPort() (string, int) {
	u, _ := url.Parse(s.srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return u.Hostname(), port
}

// Text returns a pointer to s, for Rows.
func Text(s string) *string { return &s }
