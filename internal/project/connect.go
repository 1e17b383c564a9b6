package project

import (
	"crypto/tls"
	"maps"
	"time"

	"github.com/etl-craft/etl-craft/internal/authmode"
	"github.com/etl-craft/etl-craft/internal/clientcred"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pemkey"
	"github.com/etl-craft/etl-craft/internal/pgauth"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// EngineOptions maps the Engine profile to the options that open it. The
// password is read from its variable for every new connection; an
// auth_mode key_file login sends none and presents its client certificate
// instead, its key decrypted with the secret when the Engine DB is opened.
func EngineOptions(cfg *config.Config) engine.Options {
	e := cfg.Engine
	kind := engine.Kind(e.Kind)
	busy := time.Duration(e.BusyTimeoutSeconds) * time.Second
	if !kind.Capabilities().Server {
		return engine.Options{Kind: kind, Path: e.SQLitePath, BusyTimeout: busy}
	}
	opts := engine.Options{Kind: kind, Schema: e.Schema, Password: postgresPassword(cfg, e.Auth, e.Host, e.Port), BusyTimeout: busy}
	e.Params, opts.ClientCert = clientCertificate(cfg, e.Auth, e.Params)
	opts.DSN = e.DSN()
	return opts
}

// WarehouseOptions maps the Warehouse and Cloning sections to the options
// that open the warehouse; nil when there is no Warehouse section. The
// secret is read from its variable at each connection.
func WarehouseOptions(cfg *config.Config) *warehouse.Options {
	w := cfg.Warehouse
	if w == nil {
		return nil
	}
	o := &warehouse.Options{
		Kind:        warehouse.Kind(w.Dialect),
		TableFormat: warehouse.TableFormat(w.TableFormat),
		Storage:     warehouse.Storage{ExternalVolume: cfg.Cloning.ExternalVolume, BaseLocation: cfg.Cloning.BaseLocation},
		Path:        w.DuckDBPath,
		MemoryLimit: w.MemoryLimit,
		Host:        w.Host,
		Port:        w.Port,
		Database:    w.Database,
		Params:      w.Params,
		User:        w.User,
		KeyFile:     w.KeyFile,
		Schema:      w.Schema,
		Catalog:     w.Catalog,
		AuthMode:    warehouse.AuthMode(w.AuthMode),
		HTTPPath:    w.HTTPPath,
		Account:     w.Account,
		Warehouse:   w.SnowflakeWarehouse,
		Role:        w.Role,
		RoleARN:     w.RoleARN,
	}
	logins := authmode.Of(w.Dialect)
	switch {
	case logins.PostgresServer:
		o.Password = postgresPassword(cfg, w.Auth, w.Host, w.Port)
	case o.AuthMode == warehouse.AuthOAuth:
		o.Password = clientcred.Client{ID: w.ClientID, Secret: secretOf(cfg, w.SecretVar), TokenURL: w.TokenURL, Scope: w.Scope}.Token()
	default:
		o.Password = secretOf(cfg, w.SecretVar)
	}
	if !logins.KeyPair { // a key pair is the driver's to read, not a certificate
		o.Params, o.ClientCert = clientCertificate(cfg, w.Auth, w.Params)
	}
	return o
}

// clientCertificate returns, for a key_file login, the URL settings params
// without sslkey and sslcert, and the TLS client certificate (cert_file,
// else sslcert, with the key in key_file) that etl-craft reads itself: the
// drivers cannot decrypt every form of key. Other logins get params as
// they are and no certificate.
func clientCertificate(cfg *config.Config, a config.Auth, params map[string]string) (map[string]string, func() (tls.Certificate, error)) {
	if a.AuthMode != pgauth.ModeKeyFile {
		return params, nil
	}
	certFile := a.CertFile
	if certFile == "" {
		certFile = params["sslcert"]
	}
	params = maps.Clone(params)
	delete(params, "sslkey")
	delete(params, "sslcert")
	return params, pemkey.ClientCertificate(a.KeyFile, certFile, secretOf(cfg, a.SecretVar))
}

// postgresPassword returns what a PostgreSQL login of the profile's auth
// sends as its password at each new connection: the secret read from its
// variable, or a token minted from it (see pgauth); nil when none.
func postgresPassword(cfg *config.Config, a config.Auth, host string, port int) func() (string, error) {
	return pgauth.Password(pgauth.Login{Mode: a.AuthMode, Host: host, Port: port, User: a.User, Secret: secretOf(cfg, a.SecretVar),
		ClientID: a.ClientID, TokenURL: a.TokenURL, Scope: a.Scope, Region: a.Region, RoleARN: a.RoleARN})
}

// secretOf returns the function that reads the secret variable v at each
// call; nil when the profile names none.
func secretOf(cfg *config.Config, v string) func() (string, error) {
	if v == "" {
		return nil
	}
	return func() (string, error) { return cfg.Secret(v) }
}
