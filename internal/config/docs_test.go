package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The documentation's examples must load: the example file as it is, and the
// complete example of docs/configuration.md for each of its profiles.

func TestExampleFileLoads(t *testing.T) {
	cfg, err := Load(filepath.Join("..", "..", ExamplePath))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Engine.Kind != EngineSQLite || cfg.Warehouse.Dialect != DialectDuckDB || cfg.Warehouse.Catalog != "warehouse" {
		t.Errorf("example: engine %q warehouse %q catalog %q", cfg.Engine.Kind, cfg.Warehouse.Dialect, cfg.Warehouse.Catalog)
	}
}

func TestCompleteExampleLoads(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(string(page), "## A complete example")
	_, rest, fenced := strings.Cut(rest, "```yaml\n")
	example, _, closed := strings.Cut(rest, "```")
	if !found || !fenced || !closed {
		t.Fatal("docs/configuration.md has no yaml block under \"## A complete example\"")
	}
	t.Run("dev needs no secret", func(t *testing.T) {
		t.Setenv("ETL_CRAFT_PROFILE", "dev")
		cfg := mustLoad(t, example)
		if cfg.Engine.Kind != EngineSQLite || cfg.Warehouse.Dialect != DialectDuckDB || cfg.Cloning.Effective() || cfg.Orchestration.Email != nil ||
			len(cfg.Notifications.Channels) != 0 {
			t.Errorf("dev: %+v %+v %+v", cfg.Engine, cfg.Warehouse, cfg.Cloning)
		}
	})
	t.Run("prod", func(t *testing.T) {
		setenv(t, map[string]string{"ETL_CRAFT_PROFILE": "prod", "MAIL_SECRET": "m", "ENGINE_SECRET": "e", "WAREHOUSE_SECRET": "w",
			"SLACK_URL": "https://hooks.slack.com/services/T/B/x", "PAGER_URL": "https://alerts.example.com/etl", "PAGER_SIGNING_SECRET": "s"})
		cfg := mustLoad(t, example)
		if cfg.Engine.Kind != EnginePostgres || cfg.Warehouse.Dialect != DialectPostgres || !cfg.Cloning.Effective() ||
			cfg.Orchestration.Email == nil || cfg.DocsSite == nil || cfg.Orchestration.Timezone != "Europe/Berlin" ||
			len(cfg.Notifications.Channels) != 2 || cfg.Notifications.ConsoleURL != "https://etl.example.com" {
			t.Errorf("prod: %+v %+v %+v", cfg.Engine, cfg.Warehouse, cfg.Orchestration)
		}
	})
}
