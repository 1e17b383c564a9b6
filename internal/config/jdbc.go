package config

import (
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// credentialKeys are the URL query keys refused in any jdbc_url: a secret
// belongs in a variable named by the profile's secret field.
var credentialKeys = []string{"password", "pwd", "passwd", "token", "access_token", "secret", "private_key_file_pwd"}

// credentialParts mark query keys left out of URLs that are logged.
var credentialParts = []string{"password", "token", "secret", "api_key", "credential"}

// fileKeys are the query keys naming files, made absolute from the project.
var fileKeys = []string{"sslrootcert", "sslcert", "sslkey", "private_key_file"}

// param is one key=value setting of a URL, decoded.
type param struct{ key, value string }

// jdbcURL is a jdbc:<scheme>://host[:port][/path][?query] URL.
type jdbcURL struct {
	scheme string
	host   string
	port   int
	path   string
	query  []param
}

var networkURL = regexp.MustCompile(`^jdbc:([A-Za-z0-9_+-]+)://(\[[0-9A-Fa-f:.]+\]|[^:/?@\[\]]+)(?::([0-9]+))?(?:/([^?]*))?(?:\?(.*))?$`)

// parseNetworkURL splits a jdbc:<scheme>://host[:port][/path][?query] URL;
// ok is false for another shape. A missing port is defPort.
func parseNetworkURL(raw string, defPort int) (u jdbcURL, ok bool) {
	m := networkURL.FindStringSubmatch(raw)
	if m == nil {
		return u, false
	}
	u = jdbcURL{scheme: strings.ToLower(m[1]), host: m[2], port: defPort, path: m[4], query: parseQuery(m[5], "&")}
	if m[3] != "" {
		p, err := strconv.Atoi(m[3])
		if err != nil || p < 1 || p > 65535 {
			return u, false
		}
		u.port = p
	}
	return u, true
}

// parseQuery splits key=value settings separated by sep, decoding them.
func parseQuery(q, sep string) []param {
	var out []param
	for _, part := range strings.Split(q, sep) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if dv, err := url.QueryUnescape(v); err == nil {
			v = dv
		}
		out = append(out, param{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	return out
}

// queryEscape encodes a query key or value, keeping slashes readable.
var queryEscape = strings.NewReplacer("%", "%25", "&", "%26", "=", "%3D", "#", "%23", " ", "%20", "+", "%2B", ";", "%3B").Replace

// encodeQuery joins settings into a query string.
func encodeQuery(ps []param, sep string) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = queryEscape(p.key) + "=" + queryEscape(p.value)
	}
	return strings.Join(parts, sep)
}

// paramMap returns the settings as a map; a repeated key keeps its last
// value.
func paramMap(ps []param) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		out[p.key] = p.value
	}
	return out
}

// hasCredentials reports whether a URL carries user:password@ before the
// host.
func hasCredentials(raw string) bool {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return false
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?;"); i >= 0 {
		authority = rest[:i]
	}
	return strings.Contains(authority, "@")
}

// guardURL refuses credentials in a jdbc_url, naming the key but never the
// value, and makes the file paths of its query settings absolute. It returns
// the URL to keep.
func (l *loader) guardURL(v value) (string, error) {
	raw := v.text
	if hasCredentials(raw) {
		return "", l.fail(v.line(), v.path, "must not carry a user or password before the host; "+
			"name the user in user and the variable holding the secret in secret")
	}
	base, q, found := strings.Cut(raw, "?")
	if !found {
		return raw, nil
	}
	ps := parseQuery(q, "&")
	changed := false
	for i, p := range ps {
		lower := strings.ToLower(p.key)
		if slices.Contains(credentialKeys, lower) {
			return "", l.fail(v.line(), v.path, "contains the credential query key '%s'; "+
				"put the secret in a variable and name that variable in secret", p.key)
		}
		if slices.Contains(fileKeys, lower) && p.value != "" {
			ps[i].value = l.abs(p.value)
			changed = true
		}
	}
	if !changed {
		return raw, nil
	}
	return base + "?" + encodeQuery(ps, "&"), nil
}

// isCredentialKey reports whether a URL setting looks like a credential.
func isCredentialKey(key string) bool {
	lower := strings.ToLower(key)
	if slices.Contains(credentialKeys, lower) {
		return true
	}
	for _, part := range credentialParts {
		if strings.Contains(lower, part) {
			return true
		}
	}
	return false
}

// redactURL returns a URL fit for logs and messages: any user:password@ is
// removed, and so is every query or ;-setting whose key looks like a
// credential.
func redactURL(raw string) string {
	if hasCredentials(raw) {
		scheme, rest, _ := strings.Cut(raw, "://")
		at := strings.LastIndex(rest[:strings.IndexAny(rest+"/", "/?;")], "@")
		raw = scheme + "://" + rest[at+1:]
	}
	for _, sep := range []string{"?", ";"} {
		base, q, found := strings.Cut(raw, sep)
		if !found {
			continue
		}
		inner := "&"
		if sep == ";" {
			inner = ";"
		}
		var kept []string
		for _, part := range strings.Split(q, inner) {
			k, _, _ := strings.Cut(part, "=")
			if !isCredentialKey(strings.TrimSpace(k)) {
				kept = append(kept, part)
			}
		}
		raw = base
		if len(kept) > 0 {
			raw += sep + strings.Join(kept, inner)
		}
	}
	return raw
}

// plainIdentifier matches names written unquoted into SQL: a letter or _,
// then letters, digits or _.
var plainIdentifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
