package dag

// Building the YAML document as nodes, so keys keep the order written.

import (
	"bytes"
	"strconv"

	"gopkg.in/yaml.v3"
)

// mapping returns a mapping node of the key/value pairs, in order.
func mapping(pairs ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i < len(pairs); i += 2 {
		m.Content = append(m.Content, text(pairs[i].(string)), pairs[i+1].(*yaml.Node))
	}
	return m
}

// put appends a key and its value to the mapping m.
func put(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, text(key), v)
}

func scalar(tag, v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: v}
}

// text is a string scalar, quoted by the encoder when it would read as
// something else.
func text(s string) *yaml.Node { return scalar("!!str", s) }

// textOrNull is s, or null when s is "".
func textOrNull(s string) *yaml.Node {
	if s == "" {
		return null()
	}
	return text(s)
}

func null() *yaml.Node          { return scalar("!!null", "null") }
func boolean(b bool) *yaml.Node { return scalar("!!bool", strconv.FormatBool(b)) }
func integer(n int) *yaml.Node  { return scalar("!!int", strconv.Itoa(n)) }
func number(f float64) *yaml.Node {
	return scalar("!!float", strconv.FormatFloat(f, 'f', -1, 64))
}

// texts is a flow-style list of strings: [a, b].
func texts(list []string) *yaml.Node {
	s := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, v := range list {
		s.Content = append(s.Content, text(v))
	}
	return s
}

// list is a block-style list of nodes.
func list(items []*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Content: items}
}

// encode writes the header comment lines, then the document.
func encode(header []string, doc *yaml.Node) ([]byte, error) {
	var buf bytes.Buffer
	for _, line := range header {
		buf.WriteString("# " + line + "\n")
	}
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
