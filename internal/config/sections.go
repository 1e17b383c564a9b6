package config

import (
	"net/netip"
	"regexp"
	"strings"

	// The local variable schedule is the setting.
	cronschedule "github.com/etl-craft/etl-craft/internal/schedule"
)

// The settings of the Cloning and Docs_site sections.
var (
	cloningKeys  = []string{"Enabled", "Scope", "External_volume", "Base_location"}
	docsSiteKeys = []string{"Schedule", "Output", "Authtoken", "Domain", "Allowed_ips"}
)

// optionalSection returns the active settings of an optional section whose
// keys are all in keys; nil when the file has no such section. nested are
// its keys whose values are mappings, not profile blocks.
func (l *loader) optionalSection(top *mapping, name string, keys []string, nested ...string) (*section, error) {
	s, err := l.selectProfile(top, name, nested...)
	if err != nil || s == nil {
		return s, err
	}
	return s, s.fields.unknown(keys)
}

// cloning reads the optional Cloning section; without it cloning is off.
func (l *loader) cloning(cfg *Config, top *mapping) error {
	cfg.Cloning = Cloning{Scope: "cfg"}
	s, err := l.optionalSection(top, "Cloning", cloningKeys)
	if err != nil || s == nil {
		return err
	}
	f := s.fields
	c := Cloning{Profile: s.profile}
	if c.Enabled, err = f.flag("Enabled", false); err != nil {
		return err
	}
	if c.Scope, err = f.choice("Scope", "cfg", "cfg", "aud", "all", "none"); err != nil {
		return err
	}
	storage := []struct {
		key  string
		into *string
	}{{"External_volume", &c.ExternalVolume}, {"Base_location", &c.BaseLocation}}
	for _, st := range storage {
		v, err := f.get(st.key)
		if err != nil {
			return err
		}
		if strings.Contains(v.text, "'") {
			return l.fail(v.line(), v.path, "must not contain a quote (')")
		}
		*st.into = v.text
	}
	cfg.Cloning = c
	return nil
}

var hostName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

// docsSite reads the optional Docs_site section.
func (l *loader) docsSite(cfg *Config, top *mapping) error {
	s, err := l.optionalSection(top, "Docs_site", docsSiteKeys)
	if err != nil || s == nil {
		return err
	}
	f := s.fields
	d := &DocsSite{Profile: s.profile}
	schedule, err := f.get("Schedule")
	if err != nil {
		return err
	}
	if schedule.set {
		if _, err := cronschedule.Parse(schedule.text); err != nil {
			return l.bad(schedule, "must be a cron expression (five fields, or %s): %v", cronschedule.MacroList, err)
		}
		d.Schedule = schedule.text
	}
	if d.Output, err = f.path("Output", DefaultCatalogDir); err != nil {
		return err
	}
	if e, ok := f.m.get("Authtoken"); ok && !isNull(e.value) {
		n := deref(e.value)
		if n.ShortTag() != "!!str" || !envName.MatchString(strings.TrimSpace(n.Value)) {
			return l.fail(e.value.Line, e.path, "must be the name of a variable holding the ngrok authtoken, "+
				"not the token itself: a secret is never written into craft-connector.yml")
		}
		d.AuthtokenVar = strings.TrimSpace(n.Value)
	}
	domain, err := f.get("Domain")
	if err != nil {
		return err
	}
	if domain.set {
		d.Domain = strings.ToLower(domain.text)
		if !hostName.MatchString(d.Domain) {
			return l.bad(domain, "must be a host name, such as docs.example.com, without a scheme or path; got '%s'", domain.text)
		}
	}
	ips, err := f.list("Allowed_ips")
	if err != nil {
		return err
	}
	for _, ip := range ips {
		prefix, err := cidr(ip)
		if err != nil {
			v, _ := f.m.get("Allowed_ips")
			return l.fail(v.value.Line, v.path, "must list CIDR ranges such as 203.0.113.0/24; '%s' is not one", ip)
		}
		d.AllowedIPs = append(d.AllowedIPs, prefix)
	}
	cfg.DocsSite = d
	return nil
}

// cidr normalizes a CIDR range or a single address (a range of one).
func cidr(text string) (string, error) {
	if p, err := netip.ParsePrefix(text); err == nil {
		return p.Masked().String(), nil
	}
	a, err := netip.ParseAddr(text)
	if err != nil {
		return "", err
	}
	return netip.PrefixFrom(a, a.BitLen()).String(), nil
}
