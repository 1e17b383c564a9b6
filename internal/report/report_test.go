package report

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEverySchemaIDIsUniqueAndDocumented reads the one list of schema ids
// and checks that no id names two documents and that docs/commands.md has a
// row for each.
func TestEverySchemaIDIsUniqueAndDocumented(t *testing.T) {
	src, err := os.ReadFile("report.go")
	if err != nil {
		t.Fatal(err)
	}
	ids := regexp.MustCompile(`(?m)^\tSchema\w+ += "(etl-craft/[a-z-]+/\d+)"$`).FindAllStringSubmatch(string(src), -1)
	if len(ids) < 20 {
		t.Fatalf("found %d schema ids in report.go", len(ids))
	}
	docs, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range ids {
		id := m[1]
		if seen[id] {
			t.Errorf("%s names two documents", id)
		}
		seen[id] = true
		if !strings.Contains(string(docs), "| `"+id+"` |") {
			t.Errorf("docs/commands.md has no row for %s", id)
		}
	}
}
