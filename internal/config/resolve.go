package config

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// Setting records where one string setting's value came from: the variable
// it named, or the text used as written.
type Setting struct {
	// Path is the setting's place in the file, such as Engine.dev.user.
	Path string
	Line int
	// Written is the setting's text in the file, trimmed.
	Written string
	// Variable is the variable whose value was used; "" when the text itself
	// is the value.
	Variable string
}

var (
	envName      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	variableLike = regexp.MustCompile(`^[A-Z][A-Z0-9]*_[A-Z0-9_]+$`)
)

// FromVariable reports whether the value came from a variable.
func (s Setting) FromVariable() bool { return s.Variable != "" }

// LooksLikeMissingVariable reports whether the text was used as written
// although it reads like a variable name: upper case with an underscore.
func (s Setting) LooksLikeMissingVariable() bool {
	return s.Variable == "" && variableLike.MatchString(s.Written)
}

// AsWrittenCheck is the name of doctor's warning about a setting that looks
// like a missing variable.
const AsWrittenCheck = "Setting used as written"

// SettingCounts returns how many settings took a variable's value and how
// many were used as written.
func (c *Config) SettingCounts() (fromVariables, asWritten int) {
	for _, s := range c.Settings {
		if s.FromVariable() {
			fromVariables++
		} else {
			asWritten++
		}
	}
	return fromVariables, asWritten
}

// AsWrittenWarnings returns, for every setting that looks like a missing
// variable, doctor's detail: "Engine.prod.user is 'ETL_USER': no variable of
// that name is set in the environment source, so the text itself is the
// value".
func (c *Config) AsWrittenWarnings() []string {
	var out []string
	for _, s := range c.Settings {
		if s.LooksLikeMissingVariable() {
			out = append(out, fmt.Sprintf("%s is '%s': no variable of that name is set in %s, so the text itself is the value",
				s.Path, s.Written, c.Secrets.Describe()))
		}
	}
	return out
}

// Secret returns the value of the variable varName from the secrets source,
// read again now. A variable that is not set, or is blank, is an
// exit.Configuration error naming the variable; the error never holds a
// value.
func (c *Config) Secret(varName string) (string, error) {
	values, err := c.Secrets.values()
	if err != nil {
		return "", exit.Wrap(exit.Configuration, err, "could not read secret '%s'", varName)
	}
	v, ok := values[varName]
	if !ok {
		return "", exit.Errorf(exit.Configuration, "secret '%s' not found in %s (Secrets.Source_type: %s)",
			varName, c.Secrets.Describe(), c.Secrets.SourceType)
	}
	if strings.TrimSpace(v) == "" {
		return "", exit.Errorf(exit.Configuration, "secret variable %s in %s is empty", varName, c.Secrets.Describe())
	}
	return v, nil
}

// values reads every variable the source defines.
func (s Secrets) values() (map[string]string, error) {
	if s.SourceType == SourceFile {
		data, err := os.ReadFile(s.Path)
		if err != nil {
			return nil, err
		}
		return parseEnvFile(data), nil
	}
	return environment(), nil
}

// environment returns the process environment as a map.
func environment() map[string]string {
	out := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			out[k] = v
		}
	}
	return out
}

// parseEnvFile reads .env text: one KEY=VALUE a line. Blank lines, # lines
// and lines without = are skipped; an "export " prefix is allowed; keys and
// values are trimmed and one pair of matching surrounding quotes removed.
// There are no escapes, no multi-line values and no trailing comments. A
// leading byte-order mark is ignored.
func parseEnvFile(data []byte) map[string]string {
	text := strings.TrimPrefix(string(data), "\uFEFF")
	out := map[string]string{}
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || !strings.Contains(line, "=") {
			continue
		}
		if rest, ok := strings.CutPrefix(line, "export "); ok {
			line = strings.TrimLeft(rest, " \t")
		}
		k, v, _ := strings.Cut(line, "=")
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		out[strings.TrimSpace(k)] = v
	}
	return out
}

// profileVariable returns the profile-specific name of a variable: with
// _<PROFILE> inserted before the field's suffix, so ENGINE_SECRET becomes
// ENGINE_PROD_SECRET for profile prod and field secret. A name that already
// carries the profile is returned as it is; a name without the field's
// suffix gives "". For from_address the suffix _FROM also matches.
func profileVariable(name, profile, field string) string {
	if profile == "" || field == "" {
		return ""
	}
	suffixes := []string{"_" + strings.ToUpper(field)}
	if field == "from_address" {
		suffixes = append(suffixes, "_FROM")
	}
	upper := strings.ToUpper(name)
	tier := "_" + strings.ToUpper(profile)
	for _, suffix := range suffixes {
		if strings.HasSuffix(upper, tier+suffix) {
			return name
		}
		if strings.HasSuffix(upper, suffix) {
			cut := len(name) - len(suffix)
			return name[:cut] + tier + name[cut:]
		}
	}
	return ""
}

// source is the set of variables settings are resolved against.
type source struct {
	values map[string]string
	// describe names the source in messages.
	describe string
}

// choose returns the variable a setting written as name reads: the
// profile-specific name when it is set, else name itself.
func (s source) choose(name, profile, field string) string {
	if specific := profileVariable(name, profile, field); specific != "" {
		if _, ok := s.values[specific]; ok {
			return specific
		}
	}
	return name
}

// names returns the source's variable names, sorted.
func (s source) names() []string {
	out := make([]string, 0, len(s.values))
	for k := range s.values {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
