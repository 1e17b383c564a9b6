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
	// inFlight and peak count the requests being answered, now and at
	// most.
	inFlight, peak int
	// hold, when set, is how many requests must be in flight before any is
	// answered; release is closed once they are.
	hold    int
	release chan struct{}
}

// HoldUntil makes the receiver hold its answers until n requests are in
// flight at once, or a minute has passed, then answer them all; the
// requests after those are answered at once. It shows that n deliveries
// run at the same time (see Peak).
func (r *Receiver) HoldUntil(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.hold, r.release = n, make(chan struct{})
}

// Peak is the most requests the receiver has been answering at once.
func (r *Receiver) Peak() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.peak
}

// Start starts a receiver over http, closed at the end of the test.
func Start(t testing.TB, script ...Reply) *Receiver {
	r := &Receiver{script: script, got: make(chan struct{}, 1), release: released()}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// StartTLS starts a receiver over https, with a certificate of its own
// (CAFile writes it for a channel's ca_file).
func StartTLS(t testing.TB, script ...Reply) *Receiver {
	r := &Receiver{script: script, got: make(chan struct{}, 1), release: released()}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// released is a closed channel: no hold.
func released() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

func (r *Receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.requests = append(r.requests, Request{Path: req.URL.RequestURI(), Header: req.Header.Clone(), Body: body})
	a := Reply{Status: http.StatusOK, Body: "ok"}
	if len(r.script) > 0 {
		a, r.script = r.script[0], r.script[1:]
	}
	r.inFlight++
	r.peak = max(r.peak, r.inFlight)
	release := r.release
	if r.hold > 0 && r.inFlight >= r.hold {
		close(r.release)
		r.hold = 0
	}
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
	}()
	select {
	case <-release:
	case <-time.After(time.Minute):
	case <-req.Context().Done():
	}
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
