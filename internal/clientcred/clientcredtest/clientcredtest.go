// Package clientcredtest is an OAuth token endpoint for tests: it grants
// one access token to one client's credentials and records what it was
// asked.
package clientcredtest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Server is a token endpoint serving the client-credentials grant.
type Server struct {
	// URL is the endpoint's token_url.
	URL string

	mu     sync.Mutex
	asked  int
	scopes []string
}

// New starts an endpoint, closed when the test ends, that grants token to
// clientID with secret (sent as HTTP basic auth or in the form) and refuses
// everything else with invalid_client.
func New(t testing.TB, clientID, secret, token string) *Server {
	s := &Server{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		s.asked++
		s.scopes = append(s.scopes, r.PostForm.Get("scope"))
		s.mu.Unlock()
		id, sec, ok := r.BasicAuth()
		if !ok {
			id, sec = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("grant_type") != "client_credentials" || id != clientID || sec != secret {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, token)
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Asked returns how many grants were asked for, and the scope of each.
func (s *Server) Asked() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked, append([]string(nil), s.scopes...)
}
