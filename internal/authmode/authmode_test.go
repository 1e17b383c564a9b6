package authmode_test

import (
	"slices"
	"testing"

	"github.com/etl-craft/etl-craft/internal/authmode"
)

// The modes of each kind: what a profile may name (sorted), what etl-craft
// logs in with (the default first), and what was verified live.
func TestModesOfEachKind(t *testing.T) {
	cases := []struct {
		kind              string
		profile, logins   []string
		verified          []string
		postgres, keyPair bool
	}{
		{"sqlite", nil, []string{"none"}, []string{"none"}, false, false},
		{"postgres", []string{"key_file", "oauth", "password", "sso", "sts", "token"},
			[]string{"password", "token", "oauth", "sts", "key_file", "none"}, []string{"password", "key_file"}, true, false},
		{"duckdb", []string{"none"}, []string{"none"}, []string{"none"}, false, false},
		{authmode.DuckDBIceberg, []string{"none", "oauth", "token"}, nil, nil, false, false},
		{"trino", []string{"key_file", "none", "oauth", "password", "sso", "token"},
			[]string{"none", "password", "token", "oauth", "key_file"}, []string{"none"}, false, false},
		{"databricks", []string{"oauth", "sso", "token"}, []string{"token", "oauth"}, []string{"token"}, false, false},
		{"snowflake", []string{"key_file", "oauth", "password", "sso", "sts", "token"},
			[]string{"password", "token", "oauth", "key_file", "sts"}, []string{"password", "token"}, false, true},
	}
	for _, c := range cases {
		k := authmode.Of(c.kind)
		if got := k.Profile(); !slices.Equal(got, c.profile) {
			t.Errorf("%s: a profile may name %v; want %v", c.kind, got, c.profile)
		}
		if got := k.Logins(); !slices.Equal(got, c.logins) {
			t.Errorf("%s: logins %v; want %v", c.kind, got, c.logins)
		}
		for _, m := range k.Modes {
			if want := slices.Contains(c.verified, m.Name); k.Verified(m.Name) != want {
				t.Errorf("%s: %s verified %v; want %v", c.kind, m.Name, !want, want)
			}
		}
		if k.PostgresServer != c.postgres || k.KeyPair != c.keyPair {
			t.Errorf("%s: PostgreSQL logins %v, key pair %v", c.kind, k.PostgresServer, k.KeyPair)
		}
	}
	if got := authmode.Of("postgres").Needs("oauth"); !slices.Equal(got, []string{"user", "client_id", "secret", "token_url"}) {
		t.Errorf("postgres oauth needs %v", got)
	}
	if k := authmode.Of("oracle"); len(k.Modes) != 0 || k.Verified("password") {
		t.Errorf("an unknown kind has modes: %+v", k)
	}
}
