package warehouse

import (
	"context"
	"crypto/tls"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/trinodb/trino-go-client/trino"
)

// trinoServer returns the coordinator's address: https when the URL settings
// ask for SSL or a secret is sent (Trino takes passwords only over TLS).
func trinoServer(opts Options, user, password string) string {
	port := opts.Port
	if port == 0 {
		port = 8080
	}
	scheme := "http"
	if opts.AuthMode != AuthNone || strings.EqualFold(opts.Params["SSL"], "true") || strings.EqualFold(opts.Params["ssl"], "true") {
		scheme = "https"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(opts.Host, strconv.Itoa(port))}
	switch {
	case password != "":
		u.User = url.UserPassword(user, password)
	case user != "":
		u.User = url.User(user)
	}
	return u.String()
}

// trinoConfig is the client configuration of one connection. A token is
// sent as the access token (Authorization: Bearer), a password with the
// user over TLS; every session uses the UTC time zone.
func trinoConfig(opts Options, secret string) *trino.Config {
	user := opts.User
	if user == "" {
		user = "etl-craft"
	}
	cfg := &trino.Config{
		Source:     "etl-craft",
		Catalog:    opts.Catalog,
		Schema:     opts.Schema,
		TimeZone:   "UTC",
		HTTPClient: opts.HTTPClient,
	}
	switch opts.AuthMode {
	case AuthPassword:
		cfg.ServerURI = trinoServer(opts, user, secret)
	case AuthToken, AuthOAuth:
		cfg.ServerURI = trinoServer(opts, user, "")
		cfg.AccessToken = secret
	default:
		cfg.ServerURI = trinoServer(opts, user, "")
	}
	return cfg
}

func openTrino(d Dialect, opts Options) (Warehouse, error) {
	if err := required(Trino,
		[2]string{"a host", opts.Host}, [2]string{"a catalog", opts.Catalog}, [2]string{"a schema", opts.Schema}); err != nil {
		return nil, err
	}
	if opts.ClientCert != nil {
		client, err := clientCertClient(opts.HTTPClient, opts.ClientCert)
		if err != nil {
			return nil, err
		}
		opts.HTTPClient = client
	}
	c := secretConnector{opts: opts, drv: &trino.Driver{}, connect: func(ctx context.Context, secret string) (driver.Conn, error) {
		conn, err := trino.NewConnector(trinoConfig(opts, secret))
		if err != nil {
			return nil, err
		}
		return conn.Connect(ctx)
	}}
	return &sqlWarehouse{
		Dialect: d,
		db:      sql.OpenDB(c),
		catalog: opts.Catalog,
		desc:    "trino:" + trinoServer(opts, opts.User, "") + "/" + opts.Catalog + "/" + opts.Schema,
	}, nil
}

// CheckTrinoCatalog checks that the catalog of a Trino warehouse exists and
// is served by Trino's Iceberg connector, which every table etl-craft writes
// there needs. It answers nil for any other warehouse.
func CheckTrinoCatalog(ctx context.Context, w Warehouse) error {
	sw, ok := w.(*sqlWarehouse)
	if !ok {
		return nil
	}
	if _, ok := sw.Dialect.(trinoDialect); !ok {
		return nil
	}
	rows, err := sw.db.QueryContext(ctx, "SELECT connector_name FROM system.metadata.catalogs WHERE catalog_name = ?", sw.catalog)
	if err != nil {
		return fmt.Errorf("could not look up the catalog %s: %w", sw.catalog, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return fmt.Errorf("could not look up the catalog %s: %w", sw.catalog, err)
		}
		return fmt.Errorf("the catalog %s does not exist in Trino: name an Iceberg catalog in the Warehouse settings", sw.catalog)
	}
	var connector string
	if err := rows.Scan(&connector); err != nil {
		return fmt.Errorf("could not look up the catalog %s: %w", sw.catalog, err)
	}
	if connector != "iceberg" {
		return fmt.Errorf("the catalog %s uses Trino's %s connector: etl-craft writes Iceberg tables, so name a catalog of the iceberg connector",
			sw.catalog, connector)
	}
	return nil
}

// clientCertClient returns an HTTP client like c (nil: the default one)
// whose TLS connections present the client certificate cert returns.
func clientCertClient(c *http.Client, cert func() (tls.Certificate, error)) (*http.Client, error) {
	crt, err := cert()
	if err != nil {
		return nil, err
	}
	base := http.DefaultTransport
	out := &http.Client{}
	if c != nil {
		*out = *c
		if c.Transport != nil {
			base = c.Transport
		}
	}
	t, ok := base.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("the HTTP transport is a %T, which cannot present a client certificate", base)
	}
	t = t.Clone()
	if t.TLSClientConfig == nil {
		t.TLSClientConfig = &tls.Config{}
	}
	t.TLSClientConfig.Certificates = []tls.Certificate{crt}
	out.Transport = t
	return out, nil
}
