package clientcred

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// A client-credentials grant is asked for once, with the client's id,
// secret and scopes, and its token reused; a refused grant is a
// configuration error naming the endpoint and the client, never the secret.
func TestToken(t *testing.T) {
	var asked atomic.Int32
	var scope string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		r.ParseForm()
		id, secret, ok := r.BasicAuth()
		if !ok {
			id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
		}
		w.Header().Set("Content-Type", "application/json")
		if r.PostForm.Get("grant_type") != "client_credentials" || id != "etl-craft" || secret != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		scope = r.PostForm.Get("scope")
		fmt.Fprint(w, `{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`)
	}))
	defer srv.Close()
	reads := 0
	c := Client{ID: "etl-craft", TokenURL: srv.URL, Scope: "all-apis, sql",
		Secret: func() (string, error) { reads++; return "s3cret", nil }}
	token := c.Token()
	for range 3 {
		if tok, err := token(); err != nil || tok != "tok-1" {
			t.Fatalf("token %q, %v", tok, err)
		}
	}
	if asked.Load() != 1 || reads != 1 || scope != "all-apis sql" {
		t.Fatalf("%d grants, %d secret reads, scope %q", asked.Load(), reads, scope)
	}

	c.Secret = func() (string, error) { return "wr0ng", nil }
	_, err := c.Token()()
	if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), "could not get an OAuth token from "+srv.URL+" for client etl-craft") ||
		strings.Contains(err.Error(), "wr0ng") {
		t.Fatalf("refused grant: %v", err)
	}
	if _, err := (Client{ID: "etl-craft", TokenURL: srv.URL}).Token()(); !exit.Is(err, exit.Configuration) {
		t.Fatalf("no secret: %v", err)
	}
}
