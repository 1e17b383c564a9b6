package warehouse

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
)

// The protocol tests of the HTTP warehouses (Trino, Databricks, Snowflake)
// run each client against a local TLS server that speaks the service's
// documented protocol and records what it received.

// record keeps what a server received; drivers call from many goroutines.
type record[T any] struct {
	mu    sync.Mutex
	items []T
}

// add records v and returns how many items there are now.
func (r *record[T]) add(v T) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
	return len(r.items)
}

// all returns a copy of the items so far.
func (r *record[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.items...)
}

// tlsServer serves h over TLS until the test ends.
type tlsServer struct {
	*httptest.Server
	host string
	port int
}

func serveTLS(t *testing.T, h http.HandlerFunc) tlsServer {
	return serveTLSWith(t, h, tls.NoClientCert)
}

// serveTLSWith serves h over TLS, asking clients for certificates as auth
// says, until the test ends.
func serveTLSWith(t *testing.T, h http.HandlerFunc, auth tls.ClientAuthType) tlsServer {
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{ClientAuth: auth}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	return tlsServer{Server: srv, host: u.Hostname(), port: port}
}
