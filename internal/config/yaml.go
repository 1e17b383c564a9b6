package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	"gopkg.in/yaml.v3"
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

var yamlLine = regexp.MustCompile(`line (\d+)`)

// parseYAML reads the file's single YAML document. An empty file gives nil.
func (l *loader) parseYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		line := 0
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		return nil, l.fail(line, "", "this is not valid YAML: %v", err)
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
