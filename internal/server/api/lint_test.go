package api_test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/server/api"
	"github.com/etl-craft/etl-craft/internal/testenv"
)

// redoclyVariable names the Redocly CLI the lint runs; scripts/test.sh
// installs it (scripts/openapi-lint: the pinned package.json and
// package-lock.json) into a cache folder and sets it.
const redoclyVariable = "ETL_CRAFT_REDOCLY"

// The OpenAPI document the server serves passes Redocly's recommended rules
// with every warning an error (scripts/openapi-lint/redocly.yaml): servers,
// a tag on every operation, the tags described, a licence and a contact.
// Without the linter the test is skipped, except under CI, where it fails.
func TestTheServedOpenAPIDocumentPassesTheLinter(t *testing.T) {
	t.Parallel()
	redocly := testenv.Require(t, redoclyVariable, "scripts/test.sh installs Redocly CLI from scripts/openapi-lint and sets it")
	f := newFixture(t, engine.SQLite)
	res, err := http.Get(f.srv.URL + api.Prefix + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("openapi.json: %d %v", res.StatusCode, err)
	}
	path := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	config, err := filepath.Abs(filepath.Join("..", "..", "..", "scripts", "openapi-lint", "redocly.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(redocly, "lint", "--config", config, "--format", "stylish", path)
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("redocly lint of the served document: %v\n%s", err, out)
	}
}
