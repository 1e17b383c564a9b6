// Package authmode is the one table of how etl-craft logs in to each kind
// of database: the auth modes a profile may name and the profile fields
// each needs, the modes etl-craft logs in with itself, the modes verified
// against a live service, and the facts of a kind's logins. config reads
// profiles with it, warehouse.Open refuses a mode it cannot log in with,
// project builds the login, doctor warns about modes not verified, and
// clone asks whether a warehouse may be the Engine DB's own database.
package authmode

import (
	"slices"
	"sort"
)

// Mode is one auth_mode of a kind of database.
type Mode struct {
	// Name is the auth_mode value, such as password or key_file.
	Name string
	// Needs are the profile fields the mode needs besides auth_mode.
	Needs []string
	// Profile is set when a profile may name the mode.
	Profile bool
	// Login is set when etl-craft logs in with the mode itself; a warehouse
	// opened with any other is refused.
	Login bool
	// Verified is set when the mode has been checked against a live
	// service; doctor warns about the others.
	Verified bool
}

// Kind is how etl-craft logs in to one kind of database.
type Kind struct {
	// Modes are the kind's auth modes. The first Login mode is the default
	// of warehouse options that name none.
	Modes []Mode
	// PostgresServer is set for a PostgreSQL server: its logins are
	// PostgreSQL logins, whose password pgauth makes at each connection,
	// and a warehouse of this kind may be the Engine DB's own database.
	PostgresServer bool
	// KeyPair is set when key_file is a private key the driver signs with
	// (Snowflake's key pair) rather than a TLS client certificate.
	KeyPair bool
}

// DuckDBIceberg is the kind of a DuckDB warehouse over an Iceberg REST
// catalog, whose profile takes credentials of its own.
const DuckDBIceberg = "duckdb_iceberg"

// kinds are the kinds of database by name: the Engine DB's (sqlite,
// postgres) and the warehouses' (the Warehouse dialects and DuckDBIceberg).
var kinds = map[string]Kind{
	"sqlite": {Modes: []Mode{{Name: "none", Login: true, Verified: true}}},
	"postgres": {PostgresServer: true, Modes: []Mode{
		{Name: "password", Needs: []string{"user", "secret"}, Profile: true, Login: true, Verified: true},
		{Name: "token", Needs: []string{"user", "secret"}, Profile: true, Login: true},
		{Name: "oauth", Needs: []string{"user", "client_id", "secret", "token_url"}, Profile: true, Login: true},
		{Name: "sts", Needs: []string{"user", "region"}, Profile: true, Login: true},
		{Name: "key_file", Needs: []string{"user", "key_file", "secret"}, Profile: true, Login: true, Verified: true},
		{Name: "none", Login: true},
		{Name: "sso", Needs: []string{"user", "issuer", "client_id"}, Profile: true},
	}},
	"duckdb": {Modes: []Mode{{Name: "none", Profile: true, Login: true, Verified: true}}},
	DuckDBIceberg: {Modes: []Mode{
		{Name: "none", Profile: true},
		{Name: "token", Needs: []string{"secret"}, Profile: true},
		{Name: "oauth", Needs: []string{"client_id", "secret", "token_url"}, Profile: true},
	}},
	"trino": {Modes: []Mode{
		{Name: "none", Profile: true, Login: true, Verified: true},
		{Name: "password", Needs: []string{"user", "secret"}, Profile: true, Login: true},
		{Name: "token", Needs: []string{"secret"}, Profile: true, Login: true},
		{Name: "oauth", Needs: []string{"client_id", "secret", "token_url"}, Profile: true, Login: true},
		{Name: "key_file", Needs: []string{"key_file", "cert_file"}, Profile: true, Login: true},
		{Name: "sso", Profile: true},
	}},
	"databricks": {Modes: []Mode{
		{Name: "token", Needs: []string{"secret"}, Profile: true, Login: true, Verified: true},
		{Name: "oauth", Needs: []string{"client_id", "secret"}, Profile: true, Login: true},
		{Name: "sso", Profile: true},
	}},
	"snowflake": {KeyPair: true, Modes: []Mode{
		{Name: "password", Needs: []string{"user", "secret"}, Profile: true, Login: true, Verified: true},
		{Name: "token", Needs: []string{"user", "secret"}, Profile: true, Login: true, Verified: true},
		{Name: "oauth", Needs: []string{"client_id", "secret", "token_url"}, Profile: true, Login: true},
		{Name: "key_file", Needs: []string{"user", "key_file", "secret"}, Profile: true, Login: true},
		{Name: "sts", Profile: true, Login: true},
		{Name: "sso", Needs: []string{"user"}, Profile: true},
	}},
}

// Of returns the logins of a kind of database, by its name (an Engine kind,
// a Warehouse dialect or DuckDBIceberg); an unknown kind has no modes.
func Of(kind string) Kind { return kinds[kind] }

// Mode returns the kind's mode of that name.
func (k Kind) Mode(name string) (Mode, bool) {
	i := slices.IndexFunc(k.Modes, func(m Mode) bool { return m.Name == name })
	if i < 0 {
		return Mode{}, false
	}
	return k.Modes[i], true
}

// Profile returns the names of the modes a profile may name, sorted.
func (k Kind) Profile() []string {
	var out []string
	for _, m := range k.Modes {
		if m.Profile {
			out = append(out, m.Name)
		}
	}
	sort.Strings(out)
	return out
}

// Logins returns the names of the modes etl-craft logs in with, default
// first.
func (k Kind) Logins() []string {
	var out []string
	for _, m := range k.Modes {
		if m.Login {
			out = append(out, m.Name)
		}
	}
	return out
}

// Verified reports whether the mode of that name has been checked against
// a live service.
func (k Kind) Verified(name string) bool {
	m, ok := k.Mode(name)
	return ok && m.Verified
}

// Needs returns the profile fields the mode of that name needs besides
// auth_mode.
func (k Kind) Needs(name string) []string {
	m, _ := k.Mode(name)
	return m.Needs
}
