// Package pgauth gives a PostgreSQL login (the Engine DB, or a PostgreSQL
// warehouse) the password its auth_mode logs in with: the profile's secret
// itself, an OAuth client-credentials token, or an AWS RDS IAM token; and a
// key_file login the passphrase of its client key.
package pgauth

import (
	"context"
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
	// KeyFile is the key_file login's client key, an absolute path.
	KeyFile string
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
// is the key's passphrase, see KeyPassphrase). Tokens are minted as
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

// KeyPassphrase returns the function that reads the passphrase unlocking a
// key_file login's client key, for the driver's sslpassword setting; nil
// for the other modes, or without a secret. The passphrase is checked
// against KeyFile first, so that a wrong one fails with a configuration
// error that names the file, never the passphrase; so does an encrypted
// PKCS#8 key, which the driver cannot decrypt.
func KeyPassphrase(l Login) func() (string, error) {
	if l.Mode != ModeKeyFile || l.Secret == nil {
		return nil
	}
	return func() (string, error) {
		pass, err := l.Secret()
		if err != nil {
			return "", err
		}
		return pass, checkKey(l.KeyFile, pass)
	}
}

// checkKey fails when pass does not decrypt the PEM key in path. A key
// that is not encrypted is left to the driver, which reads it itself.
func checkKey(path, pass string) error {
	buf, err := os.ReadFile(path)
	if err != nil {
		return exit.Wrap(exit.Configuration, err, "could not read key_file %s", path)
	}
	block, _ := pem.Decode(buf)
	if block != nil && block.Type == "ENCRYPTED PRIVATE KEY" {
		return exit.Errorf(exit.Configuration,
			"key_file %s is an encrypted PKCS#8 key, which etl-craft's PostgreSQL driver (pgx) cannot decrypt: "+
				"convert it to a traditional encrypted PEM key (openssl pkey -in %[1]s -traditional -aes256 -out <new file>)", path)
	}
	if block == nil || !x509.IsEncryptedPEMBlock(block) {
		return nil
	}
	// A wrong passphrase may leave padding that looks right: the result
	// must also parse as a key.
	der, err := x509.DecryptPEMBlock(block, []byte(pass))
	if err != nil || !isKey(der) {
		return exit.Errorf(exit.Configuration,
			"could not decrypt key_file %s with the profile's secret: the passphrase is wrong or the key is damaged", path)
	}
	return nil
}

// isKey reports whether der is a private key in a form TLS accepts.
func isKey(der []byte) bool {
	if _, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return true
	}
	if _, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		return true
	}
	_, err := x509.ParseECPrivateKey(der)
	return err == nil
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
