package config

import (
	"fmt"
	"github.com/etl-craft/etl-craft/internal/suggest"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v4"
)

// value is one scalar setting after resolution.
type value struct {
	entry
	// set is false when the key is absent or null.
	set bool
	// text is the value: a variable's value or the written text, trimmed.
	text string
	// written is the text in the file, trimmed.
	written string
	// variable is the variable whose value was used; "" when as written.
	variable string
	// isString is true when YAML read the value as a string; numbers and
	// booleans are used as they are and never name a variable.
	isString bool
	// tag is the YAML type, such as !!str or !!int.
	tag string
}

// line returns the line the value is written on.
func (v value) line() int {
	if v.value != nil {
		return v.value.Line
	}
	return v.entry.line
}

// resolve applies the variable-or-value rule to the scalar n, written at e,
// and records where the value came from. profile and field choose the
// profile-specific variable name.
func (l *loader) resolve(e entry, n *yaml.Node, profile, field string) value {
	v := value{entry: e, set: true, tag: n.ShortTag()}
	v.entry.value = n
	v.written = strings.TrimSpace(n.Value)
	v.text = v.written
	if v.tag != "!!str" {
		return v
	}
	v.isString = true
	if envName.MatchString(v.written) {
		name := l.src.choose(v.written, profile, field)
		if val, ok := l.src.values[name]; ok {
			v.variable = name
			v.text = strings.TrimSpace(val)
			l.withhold(val, name)
		}
	}
	l.record(Setting{Path: e.path, Line: n.Line, Written: v.written, Variable: v.variable})
	return v
}

// record notes where a setting's value came from, once per setting.
func (l *loader) record(s Setting) {
	for _, seen := range l.settings {
		if seen.Path == s.Path {
			return
		}
	}
	l.settings = append(l.settings, s)
}

// hint explains a bad value used as written although it reads like a
// variable name, suggesting set variables with similar names. It names
// variables, never their values.
func (l *loader) hint(v value) string {
	if !v.isString || v.variable != "" || !variableLike.MatchString(v.written) {
		return ""
	}
	return fmt.Sprintf(" (no variable named %s is set in %s, so the text was used as written%s)",
		v.written, l.src.describe, suggest.DidYouMean(v.written, l.src.names()))
}

// bad returns an error about the value v: its line and path, the message,
// and the hint when the value looks like a missing variable.
func (l *loader) bad(v value, format string, args ...any) error {
	return l.fail(v.line(), v.path, "%s%s", fmt.Sprintf(format, args...), l.hint(v))
}

// fields reads the settings of one mapping: a section, a profile block over
// its section's shared keys, or a nested block such as Email.
type fields struct {
	l *loader
	// where is the mapping's path and line, for missing keys.
	where string
	line  int
	// profile is the active profile, for profile-specific variable names.
	profile string
	m       *mapping
}

// has reports whether key is written with a non-null value.
func (f *fields) has(key string) bool {
	e, ok := f.m.get(key)
	return ok && !isNull(e.value)
}

// get returns the resolved value of key; an absent or null key gives a value
// with set false. A list or mapping where one value belongs is an error.
func (f *fields) get(key string) (value, error) {
	e, ok := f.m.get(key)
	if !ok || isNull(e.value) {
		return value{entry: entry{key: key, path: join(f.where, key), line: f.line}}, nil
	}
	n := deref(e.value)
	if n.Kind != yaml.ScalarNode {
		return value{}, f.l.fail(e.value.Line, e.path, "must be a single value, not a %s", kindName(n))
	}
	v := f.l.resolve(e, n, f.profile, key)
	v.entry.value = e.value
	if v.text == "" {
		return v, f.l.bad(v, "must not be empty")
	}
	return v, nil
}

// kindName names a YAML collection for messages: mapping or list.
func kindName(n *yaml.Node) string {
	if n.Kind == yaml.MappingNode {
		return "mapping"
	}
	return "list"
}

// text returns key's resolved text, "" when absent.
func (f *fields) text(key string) (string, error) {
	v, err := f.get(key)
	return v.text, err
}

// required returns key's value, refusing an absent key.
func (f *fields) required(key string) (value, error) {
	v, err := f.get(key)
	if err == nil && !v.set {
		err = f.l.fail(f.line, f.where, "needs %s", key)
	}
	return v, err
}

// choice returns key's value, lower-cased, which must be one of options.
// An absent key gives def; with def "" the key is required.
func (f *fields) choice(key, def string, options ...string) (string, error) {
	v, err := f.get(key)
	if err != nil {
		return "", err
	}
	if !v.set {
		if def == "" {
			return "", f.l.fail(f.line, f.where, "needs %s: one of %s", key, strings.Join(options, ", "))
		}
		return def, nil
	}
	got := strings.ToLower(v.text)
	if !slices.Contains(options, got) {
		return "", f.l.bad(v, "must be one of %s; got '%s'", strings.Join(options, ", "), v.text)
	}
	return got, nil
}

// boolean returns key as a boolean, nil when absent. YAML booleans and
// true/false, 1/0 and yes/no in any case are accepted.
func (f *fields) boolean(key string) (*bool, error) {
	v, err := f.get(key)
	if err != nil || !v.set {
		return nil, err
	}
	var b bool
	switch strings.ToLower(v.text) {
	case "true", "1", "yes":
		b = true
	case "false", "0", "no":
	default:
		return nil, f.l.bad(v, "must be true or false; got '%s'", v.text)
	}
	return &b, nil
}

// flag returns key as a boolean, def when absent.
func (f *fields) flag(key string, def bool) (bool, error) {
	b, err := f.boolean(key)
	if err != nil || b == nil {
		return def, err
	}
	return *b, nil
}

var asciiDigits = regexp.MustCompile(`^[0-9]+$`)

// MaxWhole is the bound of whole numbers without one of their own, settings
// and task parameters alike: 2147483647, so that as many seconds still fit
// a time.Duration.
const MaxWhole = math.MaxInt32

// WholeNumber reads text as a whole number from lo to hi (MaxWhole for no
// bound of its own), written with the digits 0-9 only: no sign, decimals or
// other digits. When it is not one, want says what it must be, such as "a
// whole number of at least 0" or "a whole number from 1 to 65535", for a
// message "must be <want>; got '<text>'". Settings and task parameters
// share this rule and its words.
func WholeNumber(text string, lo, hi int) (n int, want string, ok bool) {
	n, err := strconv.Atoi(text)
	if asciiDigits.MatchString(text) && err == nil && lo <= n && n <= hi {
		return n, "", true
	}
	if hi == MaxWhole && (!asciiDigits.MatchString(text) || (err == nil && n < lo)) {
		return 0, fmt.Sprintf("a whole number of at least %d", lo), false
	}
	return 0, fmt.Sprintf("a whole number from %d to %d", lo, hi), false
}

// whole returns key as a whole number from lo to hi (see WholeNumber), nil
// when absent. A YAML integer or a string is accepted; a boolean is not.
func (f *fields) whole(key string, lo, hi int) (*int, error) {
	v, err := f.get(key)
	if err != nil || !v.set {
		return nil, err
	}
	text := v.text
	if v.tag != "!!int" && v.tag != "!!str" {
		text = "" // a boolean, or a value tagged as another type, is no whole number
	}
	n, want, ok := WholeNumber(text, lo, hi)
	if !ok {
		return nil, f.l.bad(v, "must be %s; got '%s'", want, v.text)
	}
	return &n, nil
}

// number returns key as a whole number from lo to hi, def when absent.
func (f *fields) number(key string, def, lo, hi int) (int, error) {
	n, err := f.whole(key, lo, hi)
	if err != nil || n == nil {
		return def, err
	}
	return *n, nil
}

// list returns key as a list of strings: a YAML list, resolved item by item,
// or one comma-separated string. nil means absent.
func (f *fields) list(key string) ([]string, error) {
	e, ok := f.m.get(key)
	if !ok || isNull(e.value) {
		return nil, nil
	}
	n := deref(e.value)
	var items []value
	switch n.Kind {
	case yaml.ScalarNode:
		items = append(items, f.l.resolve(e, n, f.profile, key))
	case yaml.SequenceNode:
		for i, item := range n.Content {
			item = deref(item)
			at := entry{key: key, path: fmt.Sprintf("%s[%d]", e.path, i), line: item.Line}
			if item.Kind != yaml.ScalarNode {
				return nil, f.l.fail(item.Line, at.path, "must be a single value, not a %s", kindName(item))
			}
			items = append(items, f.l.resolve(at, item, f.profile, key))
		}
	default:
		return nil, f.l.fail(e.value.Line, e.path, "must be a list or a comma-separated string, not a mapping")
	}
	out := []string{}
	for _, item := range items {
		for _, part := range strings.Split(item.text, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out, nil
}

// path returns key as an absolute path taken from the project folder; def
// when absent ("" stays "").
func (f *fields) path(key, def string) (string, error) {
	v, err := f.get(key)
	if err != nil {
		return "", err
	}
	p := def
	if v.set {
		p = v.text
	}
	if p == "" {
		return "", nil
	}
	return f.l.abs(p), nil
}

// secret returns the name of the variable a secret field names, "" when the
// field is absent. The field must be a variable name, and the variable (the
// profile-specific one when set) must be set and not blank. Errors never hold
// the field's text unless it is a variable name, nor any variable's value.
func (f *fields) secret(key string) (string, error) {
	e, ok := f.m.get(key)
	if !ok || isNull(e.value) {
		return "", nil
	}
	n := deref(e.value)
	written := strings.TrimSpace(n.Value)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || !envName.MatchString(written) {
		return "", f.l.fail(e.value.Line, e.path,
			"must be the name of a variable holding the secret, not the secret itself: a secret is never written into craft-connector.yml")
	}
	name := f.l.src.choose(written, f.profile, key)
	val, set := f.l.src.values[name]
	f.l.withhold(val, name)
	if f.l.deferSecrets && (!set || strings.TrimSpace(val) == "") {
		f.l.record(Setting{Path: e.path, Line: n.Line, Written: written, Variable: name})
		return name, nil
	}
	if !set {
		names := "'" + name + "'"
		if specific := profileVariable(written, f.profile, key); specific != "" && specific != name {
			names = "'" + specific + "' or '" + name + "'"
		}
		return "", f.l.fail(e.value.Line, e.path, "names the secret variable %s, which is not set in %s%s",
			names, f.l.src.describe, suggest.DidYouMean(written, f.l.src.names()))
	}
	if strings.TrimSpace(val) == "" {
		return "", f.l.fail(e.value.Line, e.path, "the secret variable %s in %s is empty", name, f.l.src.describe)
	}
	f.l.record(Setting{Path: e.path, Line: n.Line, Written: written, Variable: name})
	return name, nil
}

// sub returns the fields of the nested mapping under key, nil when absent.
func (f *fields) sub(key string) (*fields, error) {
	e, ok := f.m.get(key)
	if !ok || isNull(e.value) {
		return nil, nil
	}
	if !isMapping(e.value) {
		return nil, f.l.fail(e.value.Line, e.path, "must be a mapping")
	}
	return &fields{l: f.l, where: e.path, line: e.line, profile: f.profile, m: mappingOf(e.value, e.path)}, nil
}

// maxListed is how many findings one message lists; the rest are counted.
const maxListed = 20

// unknown refuses keys not in allowed, naming each of the first maxListed
// with the nearest allowed key and counting the rest.
func (f *fields) unknown(allowed []string) error {
	var bad []string
	line, more := 0, 0
	for _, e := range f.m.entries {
		if slices.Contains(allowed, e.key) {
			continue
		}
		if line == 0 {
			line = e.line
		}
		if len(bad) == maxListed {
			more++
			continue
		}
		named := "'" + e.key + "'"
		if near := suggest.Nearest(e.key, allowed); len(near) > 0 {
			named += " (did you mean " + strings.Join(near, " or ") + "?)"
		}
		bad = append(bad, named)
	}
	if len(bad) == 0 {
		return nil
	}
	list := strings.Join(bad, ", ")
	if more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return f.l.fail(line, f.where, "unknown key %s; the keys read here are %s", list, strings.Join(allowed, ", "))
}
