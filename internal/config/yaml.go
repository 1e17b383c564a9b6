package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"go.yaml.in/yaml/v4"
)

// entry is one key of a YAML mapping: its name, where it is written and its
// value. path is the dotted setting path, such as Engine.dev.jdbc_url.
type entry struct {
	key   string
	path  string
	line  int
	value *yaml.Node
}

// mapping is a YAML mapping's entries in file order, anchors and merge keys
// (<<) expanded; keys written in the mapping itself win over merged ones.
type mapping struct {
	path    string
	line    int
	entries []entry
}

// get returns the entry for key, and whether the mapping has it.
func (m *mapping) get(key string) (entry, bool) {
	for _, e := range m.entries {
		if e.key == key {
			return e, true
		}
	}
	return entry{}, false
}

// parseYAML reads the file's single YAML document. An empty file gives nil.
func (l *loader) parseYAML(data []byte) (*yaml.Node, error) {
	if err := l.checkUTF8(data); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, l.syntaxError(err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, l.fail(extra.Line, "", "the file holds more than one YAML document (a second '---'); keep one")
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if err := l.checkDuplicates(root, ""); err != nil {
		return nil, err
	}
	return root, nil
}

// utf16 are the byte-order marks of a UTF-16 file, which YAML reads too.
var utf16 = [][]byte{{0xfe, 0xff}, {0xff, 0xfe}}

// checkUTF8 refuses text that is not UTF-8, naming the line and column of
// the first byte that is not.
func (l *loader) checkUTF8(data []byte) error {
	if utf8.Valid(data) || bytes.HasPrefix(data, utf16[0]) || bytes.HasPrefix(data, utf16[1]) {
		return nil
	}
	line, start := 1, 0
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return l.fail(line, "", "this is not UTF-8 text: the byte 0x%02x in column %d is not; save the file as UTF-8",
				data[i], utf8.RuneCount(data[start:i])+1)
		}
		if data[i] == '\n' {
			line, start = line+1, i+1
		}
		i += n
	}
	return nil
}

// openers name what the parser was inside when it failed, for the
// constructs that must be closed: a bracket or a quote left open is the
// usual mistake, so the line that opens one is where to look.
var openers = map[string]string{
	"while parsing a flow mapping":   "flow mapping { … }",
	"while parsing a flow sequence":  "flow sequence [ … ]",
	"while scanning a quoted scalar": "quoted text",
}

// syntaxError is the parser's refusal of the file, at the line where the
// parser found the problem, or, inside a flow collection ({…} or […]) or
// quoted text that spans lines, at the line that opens it.
func (l *loader) syntaxError(err error) error {
	var le *yaml.LoadError
	if !errors.As(err, &le) {
		return l.fail(0, "", "this is not valid YAML: %v", err)
	}
	if what, ok := openers[le.ContextMsg]; ok && le.ContextMark.Line > 0 && le.ContextMark.Line != le.Mark.Line {
		return l.fail(le.ContextMark.Line, "", "this is not valid YAML: %s on line %d, inside the %s that starts here (column %d)",
			le.Message, le.Mark.Line, what, le.ContextMark.Column)
	}
	return l.fail(le.Mark.Line, "", "this is not valid YAML: %s", le.Message)
}

// checkDuplicates refuses a key written twice in one mapping, at any depth,
// naming its dotted path and both lines. Aliases are checked where their
// anchor is written.
func (l *loader) checkDuplicates(n *yaml.Node, path string) error {
	switch n.Kind {
	case yaml.MappingNode:
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			where := join(path, k.Value)
			if k.ShortTag() != "!!merge" {
				if line, dup := first[k.Value]; dup {
					return l.fail(k.Line, where, "duplicate key: written on line %d and again on line %d; keep one", line, k.Line)
				}
				first[k.Value] = k.Line
			}
			if err := l.checkDuplicates(v, where); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			if err := l.checkDuplicates(item, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// deref follows an alias to its anchored node.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// isMapping reports whether n (after aliases) is a YAML mapping.
func isMapping(n *yaml.Node) bool {
	n = deref(n)
	return n != nil && n.Kind == yaml.MappingNode
}

// isNull reports whether n is absent or YAML null (an empty value, ~, null).
func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// mappingOf returns the entries of the mapping n, written at path. n must be
// a mapping.
func mappingOf(n *yaml.Node, path string) *mapping {
	n = deref(n)
	m := &mapping{path: path, line: n.Line}
	written := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].ShortTag() != "!!merge" {
			written[n.Content[i].Value] = true
		}
	}
	merged := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() != "!!merge" {
			m.entries = append(m.entries, entry{key: k.Value, path: join(path, k.Value), line: k.Line, value: v})
			continue
		}
		sources := []*yaml.Node{v}
		if deref(v).Kind == yaml.SequenceNode {
			sources = deref(v).Content
		}
		for _, src := range sources {
			if !isMapping(src) {
				continue
			}
			for _, e := range mappingOf(src, path).entries {
				if written[e.key] || merged[e.key] {
					continue
				}
				merged[e.key] = true
				m.entries = append(m.entries, e)
			}
		}
	}
	return m
}

// join appends a key to a dotted path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
