package config

import (
	"fmt"
	"github.com/etl-craft/etl-craft/internal/suggest"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v4"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// sectionOrder lists the top-level sections in the order the file must
// present them.
var sectionOrder = []string{"Secrets", "Orchestration", "Engine", "Warehouse", "Cloning", "Docs_site", "Notifications", "Retention"}

// earlierLayout lists the top-level keys of file layouts that are no longer
// read.
var earlierLayout = []string{"Dag_defaults", "Email", "Execution", "Orchestrator", "Postgres", "Source"}

// MaxFileBytes bounds the size of a craft-connector.yml, and so the memory
// reading one takes: a real file is a few kilobytes.
const MaxFileBytes = 1 << 20

// loader carries what reading one file needs: where it is, the variables
// settings resolve against, and the record of every resolution.
type loader struct {
	file     string
	dir      string
	src      source
	settings []Setting
	// profile is Secrets.Profile, the default profile of every section.
	profile value
	// deferSecrets keeps an unset or blank secret variable's name instead of
	// failing, for doctor to report with the other checks.
	deferSecrets bool
	// withheld are the values read from variables: no message shows them.
	withheld []withheldValue
}

// withheldValue is a value read from a variable, and the variable.
type withheldValue struct{ value, variable string }

// withhold notes a value read from a variable, so that no message of the
// file shows it: the variables of the secrets source are secrets, whatever
// setting names them.
func (l *loader) withhold(value, variable string) {
	if value = strings.TrimSpace(value); value != "" {
		l.withheld = append(l.withheld, withheldValue{value, variable})
	}
}

// shown returns the arguments of a message with every value read from a
// variable, and every part of one that a check took out of it, replaced
// (see replaceWithheld), wherever a text, an error or a Stringer holds them.
func (l *loader) shown(args []any) []any {
	if len(l.withheld) == 0 {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		switch x := a.(type) {
		case string:
			a = l.replaceWithheld(x)
		case error:
			a = l.replaceWithheld(x.Error())
		case fmt.Stringer:
			a = l.replaceWithheld(x.String())
		}
		out[i] = a
	}
	return out
}

// minWithheldPart is the length from which a run of a withheld value's
// bytes is replaced wherever it appears; a shorter value is replaced only
// whole, between word boundaries, so that "4" does not eat the 4 of "64".
const minWithheldPart = 8

// replaceWithheld replaces in s, by <value of NAME>, every withheld value
// and every run of at least minWithheldPart bytes of one, such as the file
// a checked URL names.
func (l *loader) replaceWithheld(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		n, variable := l.withheldAt(s, i)
		if n == 0 {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString("<value of " + variable + ">")
		i += n
	}
	return b.String()
}

// withheldAt returns the length of the longest withheld run starting at
// s[i], and the variable it comes from; 0 when there is none.
func (l *loader) withheldAt(s string, i int) (int, string) {
	best, variable := 0, ""
	for _, w := range l.withheld {
		if len(w.value) < minWithheldPart {
			if strings.HasPrefix(s[i:], w.value) && !wordByte(s, i-1) && !wordByte(s, i+len(w.value)) && len(w.value) > best {
				best, variable = len(w.value), w.variable
			}
			continue
		}
		for j := range w.value {
			n := 0
			for i+n < len(s) && j+n < len(w.value) && s[i+n] == w.value[j+n] {
				n++
			}
			if n >= minWithheldPart && n > best {
				best, variable = n, w.variable
			}
		}
	}
	return best, variable
}

// wordByte reports whether s has a letter, digit or underscore at i.
func wordByte(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// Load reads, resolves and validates the craft-connector.yml at path. Every
// problem is an exit.Configuration error naming the file, the line and the
// setting.
func Load(path string) (*Config, error) { return load(path, false) }

// LoadForChecks loads the file like Load, except that a secret variable that
// is unset or blank does not stop the load: the secret keeps its variable's
// name and Secret reports the problem. doctor and setup use it so a missing
// secret is one failed check among all the others.
func LoadForChecks(path string) (*Config, error) { return load(path, true) }

func load(path string, deferSecrets bool) (*Config, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "craft-connector.yml not found at %s", path)
	}
	info, err := os.Stat(abs)
	if err != nil {
		return nil, exit.Errorf(exit.Configuration,
			"craft-connector.yml not found at %s: write one (see %s); etl-craft reads it and never writes it", abs, ExamplePath)
	}
	if info.IsDir() {
		return nil, exit.Errorf(exit.Configuration,
			"%s is a folder; --config names the craft-connector.yml file itself", abs)
	}
	if info.Size() > MaxFileBytes {
		return nil, exit.Errorf(exit.Configuration,
			"%s is %d bytes, more than the %d a craft-connector.yml may have: it cannot be a configuration file; check that --config names the right file",
			abs, info.Size(), MaxFileBytes)
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "could not read %s", abs)
	}
	l := &loader{file: abs, dir: filepath.Dir(abs), src: source{values: environment(), describe: "the environment source"},
		deferSecrets: deferSecrets}
	return l.load(data)
}

// load parses the file's text into a Config.
func (l *loader) load(data []byte) (*Config, error) {
	root, err := l.parseYAML(data)
	if err != nil {
		return nil, err
	}
	if root == nil {
		return nil, l.fail(0, "", "the file is empty: it needs at least the Secrets, Orchestration and Engine sections (see %s)", ExamplePath)
	}
	if root.Kind != yaml.MappingNode {
		return nil, l.fail(root.Line, "", "the top level must be a mapping of sections (Secrets, Orchestration, Engine, ...), see %s", ExamplePath)
	}
	top := mappingOf(root, "")
	if err := l.checkLayout(top); err != nil {
		return nil, err
	}
	cfg := &Config{Path: l.file, ProjectDir: l.dir}
	if cfg.Secrets, err = l.secrets(top); err != nil {
		return nil, err
	}
	steps := []func(*Config, *mapping) error{l.orchestration, l.engine, l.warehouse, l.cloning, l.docsSite, l.notifications, l.retention}
	for _, step := range steps {
		if err := step(cfg, top); err != nil {
			return nil, err
		}
	}
	cfg.Settings = l.settings
	return cfg, nil
}

// fail returns an exit.Configuration error: "<file>:<line>: <where>: <msg>".
// A zero line or an empty where is left out. No value read from a variable
// appears in it (see shown).
func (l *loader) fail(line int, where, format string, args ...any) error {
	args = l.shown(args)
	var b strings.Builder
	b.WriteString(l.file)
	if line > 0 {
		fmt.Fprintf(&b, ":%d", line)
	}
	b.WriteString(": ")
	if where != "" {
		b.WriteString(where)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, format, args...)
	return exit.Errorf(exit.Configuration, "%s", b.String())
}

// abs returns a path from the file made absolute: "~/" is the home folder,
// and a relative path is taken from the project folder. Symbolic links are
// left as they are.
func (l *loader) abs(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(home, rest)
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(l.dir, p)
	}
	return filepath.Clean(p)
}

// checkLayout refuses earlier layouts, unknown sections and sections out of
// order, and requires Secrets, Orchestration and Engine.
func (l *loader) checkLayout(top *mapping) error {
	for _, e := range top.entries {
		if slices.Contains(earlierLayout, e.key) {
			return l.fail(e.line, e.key, "this is an earlier craft-connector.yml layout (%s is no longer a section); "+
				"the file now has Secrets, Orchestration (holding the DAG defaults and Email), Engine, Warehouse, Cloning, "+
				"Docs_site, Notifications and Retention, each with one block per profile: see %s", e.key, ExamplePath)
		}
		if isMapping(e.value) {
			if v, ok := mappingOf(e.value, e.key).get("Variables"); ok {
				return l.fail(v.line, v.path, "this is an earlier craft-connector.yml layout (Variables blocks are no longer read); "+
					"write each setting as a value or as the name of a variable: see %s", ExamplePath)
			}
		}
	}
	var present []string
	for _, e := range top.entries {
		if !slices.Contains(sectionOrder, e.key) {
			return l.fail(e.line, e.key, "unknown section%s; the sections are %s",
				suggest.DidYouMean(e.key, sectionOrder), strings.Join(sectionOrder, ", "))
		}
		present = append(present, e.key)
	}
	var expected []string
	for _, name := range sectionOrder {
		if slices.Contains(present, name) {
			expected = append(expected, name)
		}
	}
	for i := range present {
		if present[i] != expected[i] {
			return l.fail(top.entries[i].line, "", "the sections are in the order %s; write them as %s",
				strings.Join(present, ", "), strings.Join(expected, ", "))
		}
	}
	for _, name := range []string{"Secrets", "Orchestration", "Engine"} {
		if e, ok := top.get(name); !ok || isNull(e.value) {
			return l.fail(0, "", "missing the %s section, which every file needs (see %s)", name, ExamplePath)
		}
	}
	return nil
}

// secrets reads the Secrets section and switches the loader to the source it
// names. Source_type and Path resolve against the process environment only.
func (l *loader) secrets(top *mapping) (Secrets, error) {
	e, _ := top.get("Secrets")
	if !isMapping(e.value) {
		return Secrets{}, l.fail(e.line, "Secrets", "must be a mapping of Source_type, Path and Profile")
	}
	f := &fields{l: l, where: "Secrets", line: e.line, m: mappingOf(e.value, "Secrets")}
	if err := f.unknown([]string{"Source_type", "Path", "Profile"}); err != nil {
		return Secrets{}, err
	}
	var s Secrets
	var err error
	if s.SourceType, err = f.choice("Source_type", "", SourceEnvironment, SourceFile); err != nil {
		return s, err
	}
	p, err := f.get("Path")
	if err != nil {
		return s, err
	}
	switch {
	case s.SourceType == SourceEnvironment && p.set:
		return s, l.fail(p.line(), p.path, "is only read with Source_type: file; remove it")
	case s.SourceType == SourceFile && !p.set:
		return s, l.fail(f.line, "Secrets", "needs Path (the .env file) with Source_type: file")
	case s.SourceType == SourceFile:
		s.Path = l.abs(p.text)
		values, err := s.values()
		if err != nil {
			return s, l.fail(p.line(), p.path, "could not read the secrets file %s: %v", s.Path, err)
		}
		l.src = source{values: values, describe: s.Describe()}
	}
	if l.profile, err = f.get("Profile"); err != nil {
		return s, err
	}
	s.Profile = l.profile.text
	return s, nil
}

// sectionSettings returns every setting a section reads, for telling a
// mistyped setting from a profile block.
func sectionSettings(name string) []string {
	switch name {
	case "Orchestration":
		return orchestrationKeys
	case "Engine":
		return append([]string{"Name"}, connectionKeys...)
	case "Warehouse":
		all := append([]string{"Name", "Table_format"}, connectionKeys...)
		all = append(all, icebergKeys...)
		return append(all, "account", "database", "warehouse", "role", "token")
	case "Cloning":
		return cloningKeys
	case "Notifications":
		return notificationsKeys
	case "Retention":
		return retentionKeys
	}
	return docsSiteKeys
}

// section is one section's settings for its active profile: the keys written
// at section level, with the active block's keys over them.
type section struct {
	// profile is the active profile; "" when none is selected.
	profile string
	// blocks counts the section's profile blocks.
	blocks int
	fields *fields
}

// selectProfile returns a section's active settings, or nil when the file
// has no such section. A mapping-valued key is a profile block unless it is
// in nested. The active block is the section's own Profile, else
// Secrets.Profile, else the only block.
func (l *loader) selectProfile(top *mapping, name string, nested ...string) (*section, error) {
	e, ok := top.get(name)
	if !ok || isNull(e.value) {
		return nil, nil
	}
	if !isMapping(e.value) {
		return nil, l.fail(e.line, name, "must be a mapping (see %s)", ExamplePath)
	}
	m := mappingOf(e.value, name)
	own := &fields{l: l, where: name, line: e.line, m: m}
	var shared []entry
	var blocks []entry
	for _, x := range m.entries {
		switch {
		case x.key == "Profile":
		case isMapping(x.value) && !slices.Contains(nested, x.key):
			blocks = append(blocks, x)
		default:
			shared = append(shared, x)
		}
	}
	selection, err := own.get("Profile")
	if err != nil {
		return nil, err
	}
	if !selection.set {
		selection = l.profile
	}
	s := &section{profile: selection.text, blocks: len(blocks)}
	if len(blocks) == 0 {
		s.fields = &fields{l: l, where: name, line: e.line, profile: s.profile, m: &mapping{path: name, line: e.line, entries: shared}}
		return s, nil
	}
	names := make([]string, len(blocks))
	for i, b := range blocks {
		names[i] = b.key
		for _, k := range sectionSettings(name) {
			if strings.EqualFold(k, b.key) {
				return nil, l.fail(b.line, b.path, "%s is a setting, so it takes a single value; "+
					"a mapping here would be a profile block", k)
			}
		}
	}
	if !selection.set {
		if len(blocks) > 1 {
			return nil, l.fail(e.line, name, "has profiles %s but none is selected; set %s.Profile or Secrets.Profile",
				strings.Join(names, ", "), name)
		}
		s.profile = blocks[0].key
	}
	i := slices.Index(names, s.profile)
	if i < 0 {
		return nil, l.fail(selection.line(), selection.path, "%s has no profile '%s' (it has %s)%s%s",
			name, s.profile, strings.Join(names, ", "), suggest.DidYouMean(s.profile, names), l.hint(selection))
	}
	block := mappingOf(blocks[i].value, join(name, s.profile))
	merged := &mapping{path: block.path, line: blocks[i].line}
	for _, x := range shared {
		if _, over := block.get(x.key); !over {
			merged.entries = append(merged.entries, x)
		}
	}
	merged.entries = append(merged.entries, block.entries...)
	s.fields = &fields{l: l, where: block.path, line: blocks[i].line, profile: s.profile, m: merged}
	return s, nil
}
