package dag_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// descriptorSchema compiles docs/dag-descriptor.schema.json.
func descriptorSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "dag-descriptor.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("dag-descriptor.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("dag-descriptor.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// instance reads YAML as the JSON value the schema judges.
func instance(t *testing.T, text []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(text, &v); err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// Every golden descriptor validates against the schema kept in docs/, and
// the schema is strict enough to refuse a broken one.
func TestGenerateYmlGoldenFilesMatchTheSchema(t *testing.T) {
	t.Parallel()
	s := descriptorSchema(t)
	files, err := filepath.Glob(filepath.Join("testdata", "*.yml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("golden files: %v %v", files, err)
	}
	for _, path := range files {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(instance(t, text)); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	good, _ := os.ReadFile(filepath.Join("testdata", "remote.yml"))
	for _, broken := range []struct{ from, to string }{
		{"trigger_rule: one_done", "trigger_rule: none_failed"},
		{"max_active_runs: 1", "max_active_runs: 2"},
		{"      external_task_id: null\n", ""},
		{"etl_craft_yaml_version: 1", "etl_craft_yaml_version: 2"},
	} {
		text := strings.Replace(string(good), broken.from, broken.to, 1)
		if text == string(good) {
			t.Fatalf("%q is not in remote.yml", broken.from)
		}
		if err := s.Validate(instance(t, []byte(text))); err == nil {
			t.Errorf("replacing %q by %q still validates", broken.from, broken.to)
		}
	}
}
