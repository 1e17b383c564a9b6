// Package pgauth gives a PostgreSQL login (the Engine DB, or a PostgreSQL
// warehouse) the password its auth_mode logs in with: the profile's secret
// itself, an OAuth client-credentials token, or an AWS RDS IAM token; and
// presents a key_file login's client certificate.
package pgauth

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	rdsauth "github.com/aws/aws-sdk-go-v2/feature/rds/auth"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/etl-craft/etl-craft/internal/clientcred"
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
}

// requestTimeout bounds one token request.
const requestTimeout = 30 * time.Second

// Password returns the function every new connection calls for its
// password (nil when the login sends none, as a key_file login: its secret
// is the key's passphrase, see pemkey.ClientCertificate). Tokens are minted
// as connections need them: an oauth token is reused until it expires, an
// RDS IAM token (valid 15 minutes) is built for each connection. A mode this
// build cannot log in with fails every connection with a configuration
// error that names it.
func Password(l Login) func() (string, error) {
	switch l.Mode {
	case ModeKeyFile:
		return nil
	case "", ModePassword, ModeToken:
		return l.Secret
	case ModeOAuth:
		return clientcred.Client{ID: l.ClientID, Secret: l.Secret, TokenURL: l.TokenURL, Scope: l.Scope}.Token()
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

// PresentCertificate makes every TLS attempt of the connection settings
// cfg present the client certificate cert returns (see ClientCertificate);
// settings without TLS cannot, which is a configuration error.
func PresentCertificate(cfg *pgconn.Config, cert func() (tls.Certificate, error)) error {
	if cfg.TLSConfig == nil {
		return exit.Errorf(exit.Configuration,
			"a client-certificate login (auth_mode key_file) needs SSL: set sslmode=require, verify-ca or verify-full in jdbc_url")
	}
	c, err := cert()
	if err != nil {
		return err
	}
	cfg.TLSConfig.Certificates = []tls.Certificate{c}
	for _, fb := range cfg.Fallbacks {
		if fb.TLSConfig != nil {
			fb.TLSConfig.Certificates = []tls.Certificate{c}
		}
	}
	return nil
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
