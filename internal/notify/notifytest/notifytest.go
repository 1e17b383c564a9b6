// Package notifytest runs the receivers of alert channels in tests: real
// HTTP servers on loopback that record every request and answer as a test
// scripts them, as Slack, Teams or a webhook receiver would.
package notifytest

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted answer.
type Reply struct {
	Status int
	Header map[string]string
	Body   string
	// Wait holds the answer back this long.
	Wait time.Duration
}

// Request is one request a receiver got.
type Request struct {
	// Path is the path and query the request was sent to.
	Path   string
	Header http.Header
	Body   []byte
}

// Receiver records each request and answers with its script, then 200 "ok"
// once the script is used up.
type Receiver struct {
	*httptest.Server
	mu       sync.Mutex
	script   []Reply
	requests []Request
	// got is signalled on each request.
	got chan struct{}
}

// Start starts a receiver over http, closed at the end of the test.
func Start(t testing.TB, script ...Reply) *Receiver {
	r := &Receiver{script: script, got: make(chan struct{}, 1)}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// StartTLS starts a receiver over https, with a certificate of its own
// (CAFile writes it for a channel's ca_file).
func StartTLS(t testing.TB, script ...Reply) *Receiver {
	r := &Receiver{script: script, got: make(chan struct{}, 1)}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, Request{Path: req.URL.RequestURI(), Header: req.Header.Clone(), Body: body})
	a := Reply{Status: http.StatusOK, Body: "ok"}
	if len(r.script) > 0 {
		a, r.script = r.script[0], r.script[1:]
	}
	r.mu.Unlock()
	select {
	case r.got <- struct{}{}:
	default:
	}
	if a.Wait > 0 {
		select {
		case <-time.After(a.Wait):
		case <-req.Context().Done():
		}
	}
	for k, v := range a.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.Status)
	io.WriteString(w, a.Body)
}

// Script adds answers to the end of the script.
func (r *Receiver) Script(replies ...Reply) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.script = append(r.script, replies...)
}

// Got returns the requests so far.
func (r *Receiver) Got() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// WaitFor waits until the receiver has got n requests, failing the test
// after a minute.
func (r *Receiver) WaitFor(t testing.TB, n int) []Request {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		if got := r.Got(); len(got) >= n {
			return got
		}
		select {
		case <-r.got:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("the receiver got %d requests, not %d, in a minute", len(r.Got()), n)
		}
	}
}

// CAFile writes a TLS receiver's certificate as a CA file and returns its
// path.
func (r *Receiver) CAFile(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
