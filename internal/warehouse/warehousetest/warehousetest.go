// Package warehousetest gives tests the options of real warehouses: a
// PostgreSQL test database as a warehouse.
package warehousetest

import (
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// PostgresOptions returns the warehouse options of a PostgreSQL test
// database URL (such as enginetest.NewPGDatabase returns), with the
// profile schema; the password is handed over only through Password.
func PostgresOptions(t testing.TB, rawURL, schema string) warehouse.Options {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	params := map[string]string{}
	for k, v := range u.Query() {
		params[k] = v[0]
	}
	return warehouse.Options{
		Kind: warehouse.Postgres, Host: u.Hostname(), Port: port, Database: strings.TrimPrefix(u.Path, "/"),
		User: u.User.Username(), Params: params, Schema: schema,
		AuthMode: warehouse.AuthPassword, Password: func() (string, error) { return pw, nil },
	}
}
