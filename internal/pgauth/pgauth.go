// Package pgauth gives a PostgreSQL login (the Engine DB, or a PostgreSQL
// warehouse) the password its auth_mode logs in with: the profile's secret
// itself, an OAuth client-credentials token, or an AWS RDS IAM token.
package pgauth

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	rdsauth "github.com/aws/aws-sdk-go-v2/feature/rds/auth"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// The auth modes of a PostgreSQL profile.
const (
	ModePassword = "password" // the secret is the password
	ModeToken    = "token"    // a stored bearer token, sent as the password
	ModeKeyFile  = "key_file" // a client certificate; the secret unlocks its key
	ModeOAuth    = "oauth"    // a client-credentials token from token_url
	ModeSSO      = "sso"      // libpq's interactive OAuth device flow
	ModeSTS      = "sts"      // an AWS RDS IAM token
)

// Login is how one PostgreSQL profile logs in.
type Login struct {
	// Mode is the profile's auth_mode; empty means password.
	Mode string
	// Host and Port are the server's address (an RDS IAM token names it).
	Host string
	Port int
	// User is the login role.
	User string
	// Secret returns the secret variable's value; nil when the profile has
	// none.
	Secret func() (string, error)
	// ClientID, TokenURL and Scope are the oauth client's settings.
	ClientID, TokenURL, Scope string
	// Region and RoleARN are the sts settings: the RDS region, and the
	// role to assume first (optional).
	Region, RoleARN string
	// HTTPClient, when set, is the client oauth tokens are requested with.
	HTTPClient *http.Client
}

// requestTimeout bounds one token request.
const requestTimeout = 30 * time.Second

// Password returns the function every new connection calls for its
// password (nil when the login sends none). Tokens are minted as
// connections need them: an oauth token is reused until it expires, an RDS
// IAM token (valid 15 minutes) is built for each connection. A mode this
// build cannot log in with fails every connection with a configuration
// error that names it.
func Password(l Login) func() (string, error) {
	switch l.Mode {
	case "", ModePassword, ModeToken, ModeKeyFile:
		return l.Secret
	case ModeOAuth:
		return l.oauth()
	case ModeSTS:
		return l.rdsIAM()
	}
	err := exit.Errorf(exit.Configuration, "auth_mode %s is not a PostgreSQL auth mode: use password, token, key_file, oauth or sts", l.Mode)
	if l.Mode == ModeSSO {
		err = exit.Errorf(exit.Configuration,
			"auth_mode sso is libpq's interactive OAuth device flow, which etl-craft's PostgreSQL driver (pgx) does not have: "+
				"use auth_mode oauth (a client-credentials token), token or password")
	}
	return func() (string, error) { return "", err }
}

// oauth returns a password function that answers with the access token of
// an OAuth client-credentials grant at TokenURL, the secret being the
// client's secret. The secret is read when the first connection needs a
// token.
func (l Login) oauth() func() (string, error) {
	var mu sync.Mutex
	var src oauth2.TokenSource // keeps its token until it expires
	return func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if src == nil {
			if l.Secret == nil {
				return "", exit.Errorf(exit.Configuration, "auth_mode oauth needs the client's secret: set the profile's secret")
			}
			secret, err := l.Secret()
			if err != nil {
				return "", err
			}
			cc := &clientcredentials.Config{ClientID: l.ClientID, ClientSecret: secret, TokenURL: l.TokenURL}
			if l.Scope != "" {
				cc.Scopes = strings.Fields(strings.ReplaceAll(l.Scope, ",", " "))
			}
			src = cc.TokenSource(context.WithValue(context.Background(), oauth2.HTTPClient, httpClient(l.HTTPClient)))
		}
		tok, err := src.Token()
		if err != nil {
			return "", fmt.Errorf("could not get an OAuth token from %s for client %s: %w", l.TokenURL, l.ClientID, err)
		}
		return tok.AccessToken, nil
	}
}

// httpClient returns c, or a client with the request timeout.
func httpClient(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{Timeout: requestTimeout}
}

// rdsIAM returns a password function that builds an AWS RDS IAM
// authentication token for the login, signed with the AWS credentials the
// environment provides (variables, shared files, instance roles), after
// assuming RoleARN when it is set.
func (l Login) rdsIAM() func() (string, error) {
	return func() (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(l.Region))
		if err != nil {
			return "", fmt.Errorf("could not load the AWS credentials for an RDS IAM token: %w", err)
		}
		creds := cfg.Credentials
		if l.RoleARN != "" {
			creds = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(sts.NewFromConfig(cfg), l.RoleARN))
		}
		endpoint := net.JoinHostPort(l.Host, strconv.Itoa(l.Port))
		tok, err := rdsauth.BuildAuthToken(ctx, endpoint, l.Region, l.User, creds)
		if err != nil {
			return "", fmt.Errorf("could not build an RDS IAM token for %s@%s in %s: %w", l.User, endpoint, l.Region, err)
		}
		return tok, nil
	}
}
