package clientcred

import (
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/clientcred/clientcredtest"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// A client-credentials grant is asked for once, with the client's id,
// secret and scopes, and its token reused; a refused grant is a
// configuration error naming the endpoint and the client, never the secret.
func TestToken(t *testing.T) {
	srv := clientcredtest.New(t, "etl-craft", "s3cret", "tok-1")
	reads := 0
	c := Client{ID: "etl-craft", TokenURL: srv.URL, Scope: "all-apis, sql",
		Secret: func() (string, error) { reads++; return "s3cret", nil }}
	token := c.Token()
	for range 3 {
		if tok, err := token(); err != nil || tok != "tok-1" {
			t.Fatalf("token %q, %v", tok, err)
		}
	}
	if asked, scopes := srv.Asked(); asked != 1 || reads != 1 || scopes[0] != "all-apis sql" {
		t.Fatalf("%d grants, %d secret reads, scopes %q", asked, reads, scopes)
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
