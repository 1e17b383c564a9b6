// Package pgauth gives a PostgreSQL login (the Engine DB, or a PostgreSQL
// warehouse) the password its auth_mode logs in with: the profile's secret
// itself, an OAuth client-credentials token, or an AWS RDS IAM token; and a
// key_file login its TLS client certificate.
package pgauth

import (
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	rdsauth "github.com/aws/aws-sdk-go-v2/feature/rds/auth"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/etl-craft/etl-craft/internal/clientcred"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pemkey"
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
	// KeyFile and CertFile are the key_file login's client key and
	// certificate, absolute paths.
	KeyFile, CertFile string
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
// is the key's passphrase, see ClientCertificate). Tokens are minted as
// connections need them: an oauth token is reused until it expires, an RDS
// IAM token (valid 15 minutes) is built for each connection. A mode this
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

// ClientCertificate returns the function that reads a key_file login's
// TLS client certificate: the certificate chain in CertFile with the key in
// KeyFile, decrypted with the secret when it is encrypted (see pemkey); nil
// for the other modes. Every failure is a configuration error that names
// the file and never the passphrase.
func ClientCertificate(l Login) func() (tls.Certificate, error) {
	if l.Mode != ModeKeyFile {
		return nil
	}
	return func() (tls.Certificate, error) {
		var pass string
		if l.Secret != nil {
			var err error
			if pass, err = l.Secret(); err != nil {
				return tls.Certificate{}, err
			}
		}
		key, err := pemkey.Read(l.KeyFile, pass)
		if err != nil {
			return tls.Certificate{}, err
		}
		if l.CertFile == "" {
			return tls.Certificate{}, exit.Errorf(exit.Configuration,
				"auth_mode key_file needs the client certificate: set cert_file (or sslcert in jdbc_url)")
		}
		buf, err := os.ReadFile(l.CertFile)
		if err != nil {
			return tls.Certificate{}, exit.Wrap(exit.Configuration, err, "could not read cert_file %s", l.CertFile)
		}
		var cert tls.Certificate
		for block, rest := pem.Decode(buf); block != nil; block, rest = pem.Decode(rest) {
			if block.Type == "CERTIFICATE" {
				cert.Certificate = append(cert.Certificate, block.Bytes)
			}
		}
		if len(cert.Certificate) == 0 {
			return tls.Certificate{}, exit.Errorf(exit.Configuration, "cert_file %s holds no PEM certificate", l.CertFile)
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			return tls.Certificate{}, exit.Wrap(exit.Configuration, err, "cert_file %s holds no valid certificate", l.CertFile)
		}
		if pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !pub.Equal(leaf.PublicKey) {
			return tls.Certificate{}, exit.Errorf(exit.Configuration,
				"cert_file %s is not the certificate of the key in key_file %s", l.CertFile, l.KeyFile)
		}
		cert.PrivateKey, cert.Leaf = key, leaf
		return cert, nil
	}
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
