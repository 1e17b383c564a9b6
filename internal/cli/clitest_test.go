package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The black-box tests of the commands run the binary e2e builds.
func TestMain(m *testing.M) { e2e.Main(m) }

// newProject writes a project whose Engine DB is a fresh database of the
// dialect and whose warehouse is a DuckDB file; extra is appended to the YAML.
func newProject(t *testing.T, kind engine.Kind, extra string) *e2e.Project {
	t.Helper()
	return e2e.New(t, e2e.Pair{Engine: kind, Warehouse: warehouse.DuckDB}, extra)
}

// jsonUnmarshal decodes one JSON document printed by a command.
func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
