package config

import (
	"github.com/etl-craft/etl-craft/internal/suggest"
	"path/filepath"
	"reflect"
	"testing"
)

func TestCloning(t *testing.T) {
	cases := []struct {
		name      string
		body      string
		want      Cloning
		effective bool
	}{
		{"enabled with the default scope", "  Enabled: true\n", Cloning{Profile: "dev", Enabled: true, Scope: "cfg"}, true},
		{"scope none turns it off", "  Enabled: true\n  Scope: none\n", Cloning{Profile: "dev", Enabled: true, Scope: "none"}, false},
		{"disabled", "  Enabled: 'no'\n  Scope: ALL\n", Cloning{Profile: "dev", Scope: "all"}, false},
		{"profile blocks", "  Scope: aud\n  dev:\n    Enabled: true\n    External_volume: vol\n    Base_location: etl/mirror\n  prod:\n    Enabled: bogus\n",
			Cloning{Profile: "dev", Enabled: true, Scope: "aud", ExternalVolume: "vol", BaseLocation: "etl/mirror"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustLoad(t, minimal+"Cloning:\n"+c.body)
			if cfg.Cloning != c.want || cfg.Cloning.Effective() != c.effective {
				t.Errorf("Cloning %+v effective %v; want %+v %v", cfg.Cloning, cfg.Cloning.Effective(), c.want, c.effective)
			}
		})
	}
	errs := []errorCase{
		{"bad scope", "  Scope: some\n", ":11: Cloning.Scope: must be one of cfg, aud, all, none; got 'some'"},
		{"quote in a location", "  Base_location: \"it's\"\n", "Cloning.Base_location: must not contain a quote"},
		{"unknown key", "  Enable: true\n", "Cloning: unknown key 'Enable' (did you mean Enabled?)"},
		{"bad boolean", "  Enabled: 2\n", "Cloning.Enabled: must be true or false; got '2'"},
	}
	checkErrors(t, func(body string) string { return minimal + "Cloning:\n" + body }, errs)
}

func TestDocsSite(t *testing.T) {
	cfg := mustLoad(t, minimal+`Docs_site:
  Schedule: "0 6 * * MON-FRI"
  Output: site/catalog
  Authtoken: NGROK_AUTHTOKEN
  Domain: Docs.Example.com
  Allowed_ips: 203.0.113.7, 10.1.2.3/8, 2001:db8::/32
`)
	want := &DocsSite{
		Profile: "dev", Schedule: "0 6 * * MON-FRI", Output: filepath.Join(cfg.ProjectDir, "site", "catalog"),
		AuthtokenVar: "NGROK_AUTHTOKEN", Domain: "docs.example.com",
		AllowedIPs: []string{"203.0.113.7/32", "10.0.0.0/8", "2001:db8::/32"},
	}
	if !reflect.DeepEqual(cfg.DocsSite, want) {
		t.Errorf("DocsSite\n got %+v\nwant %+v", cfg.DocsSite, want)
	}
	if cfg.CatalogDir() != want.Output {
		t.Errorf("CatalogDir %q", cfg.CatalogDir())
	}
	cfg = mustLoad(t, minimal+"Docs_site:\n  Schedule: '@daily'\n")
	if cfg.DocsSite.Output != filepath.Join(cfg.ProjectDir, "catalog") || cfg.DocsSite.AllowedIPs != nil {
		t.Errorf("defaults %+v", cfg.DocsSite)
	}

	errs := []errorCase{
		{"literal authtoken", "  Authtoken: 2abc-def:ghi\n", ":11: Docs_site.Authtoken: must be the name of a variable holding the ngrok authtoken"},
		{"domain with a scheme", "  Domain: https://docs.example.com\n", "Docs_site.Domain: must be a host name"},
		{"bad CIDR", "  Allowed_ips: [10.0.0.0/8, nope]\n", ":11: Docs_site.Allowed_ips: must list CIDR ranges such as 203.0.113.0/24; 'nope' is not one"},
		{"bad cron fields", "  Schedule: '0 6 * *'\n", "Docs_site.Schedule: must be a cron expression (five fields, or @hourly, @daily, @weekly, @monthly, @yearly, @annually): '0 6 * *' has 4 fields, not 5"},
		{"bad cron value", "  Schedule: '61 * * * *'\n", "'61' is not a valid minute (0-59)"},
		{"bad cron range", "  Schedule: '0 0 * * FRI-MON'\n", "'FRI-MON' is not a valid day of week"},
		{"bad cron step", "  Schedule: '*/0 * * * *'\n", "'*/0' is not a valid minute"},
		{"bad macro", "  Schedule: '@reboot'\n", "'@reboot' is not a known macro"},
	}
	checkErrors(t, func(body string) string { return minimal + "Docs_site:\n" + body }, errs)
}

func TestNearest(t *testing.T) {
	cases := []struct {
		name       string
		candidates []string
		want       []string
	}{
		{"jdbcurl", connectionKeys, []string{"jdbc_url"}},
		{"mode", orchestrationKeys, []string{"Mode"}},
		{"completely_different", connectionKeys, []string{}},
		{"ENGINE_SECRT", []string{"ENGINE_SECRET", "ENGINE_SECRETS", "PATH"}, []string{"ENGINE_SECRET", "ENGINE_SECRETS"}},
	}
	for _, c := range cases {
		if got := suggest.Nearest(c.name, c.candidates); !reflect.DeepEqual(got, c.want) {
			t.Errorf("suggest.Nearest(%q) = %q; want %q", c.name, got, c.want)
		}
	}
}
