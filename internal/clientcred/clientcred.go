// Package clientcred mints OAuth access tokens with the client-credentials
// grant, for the logins whose auth_mode is oauth: a PostgreSQL role, and
// the Trino, Databricks and Snowflake warehouses.
package clientcred

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Client is an OAuth client of a token endpoint.
type Client struct {
	// ID is the client_id.
	ID string
	// Secret returns the client's secret; nil when the profile has none.
	Secret func() (string, error)
	// TokenURL is the token endpoint.
	TokenURL string
	// Scope lists the scopes asked for, separated by spaces or commas;
	// empty asks for none.
	Scope string
}

// requestTimeout bounds one token request.
const requestTimeout = 30 * time.Second

// Token returns the function that answers with a current access token of
// the client. The secret is read when the first token is asked for; the
// token is kept and reused until it expires. A refused grant is an error
// that names the endpoint and the client, never the secret.
func (c Client) Token() func() (string, error) {
	var mu sync.Mutex
	var src oauth2.TokenSource // keeps its token until it expires
	return func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if src == nil {
			if c.Secret == nil {
				return "", exit.Errorf(exit.Configuration, "auth_mode oauth needs the client's secret: set the profile's secret")
			}
			secret, err := c.Secret()
			if err != nil {
				return "", err
			}
			cc := &clientcredentials.Config{ClientID: c.ID, ClientSecret: secret, TokenURL: c.TokenURL}
			if c.Scope != "" {
				cc.Scopes = strings.Fields(strings.ReplaceAll(c.Scope, ",", " "))
			}
			client := &http.Client{Timeout: requestTimeout}
			src = cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, client))
		}
		tok, err := src.Token()
		if err != nil {
			return "", exit.Wrap(exit.Configuration, err, "could not get an OAuth token from %s for client %s", c.TokenURL, c.ID)
		}
		return tok.AccessToken, nil
	}
}
