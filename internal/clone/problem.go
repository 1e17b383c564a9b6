// Package clone copies the Engine DB's CFG_ and AUD_ tables into the
// warehouse, so a team can query its pipelines' configuration and history
// beside its data.
package clone

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/etl-craft/etl-craft/internal/authmode"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Problem returns why cloning cannot run with this configuration, or nil.
// Nothing connects: it checks that there is a warehouse, that the storage
// settings the warehouse needs are present and usable, and that the
// warehouse is not the Engine DB itself (cloning would empty the tables it
// copies): a DuckDB file that is the SQLite Engine DB's file, or the Engine
// DB's own schema in a PostgreSQL database named by the same host, port and
// database. The servers are asked too, once connected (RefuseEngineSchema),
// since one server has many names. wopts is nil when the configuration has
// no Warehouse section.
func Problem(cfg *config.Config, wopts *warehouse.Options) error {
	if cfg.Warehouse == nil || wopts == nil {
		return exit.Errorf(exit.Configuration,
			"Cloning is enabled but craft-connector.yml has no Warehouse section to clone into: add one, or set Cloning.Enabled: false")
	}
	if _, err := warehouse.NewDialect(wopts.Kind, wopts.TableFormat, wopts.Storage); err != nil {
		return err
	}
	e, w := cfg.Engine, cfg.Warehouse
	if authmode.Of(e.Kind).PostgresServer && authmode.Of(w.Dialect).PostgresServer &&
		strings.EqualFold(e.Host, w.Host) && e.Port == w.Port && e.Database == w.Database &&
		strings.EqualFold(e.Schema, w.Schema) {
		return ownSchemaError(w.Schema, w.Database, "")
	}
	if sameFile(e.SQLitePath, w.DuckDBPath) { // only a SQLite Engine DB and a DuckDB warehouse have files
		return exit.Errorf(exit.Configuration,
			"the DuckDB warehouse %s is the Engine DB's SQLite file: cloning would write into the tables it copies; name another file in the Warehouse profile's jdbc_url",
			w.DuckDBPath)
	}
	return nil
}

// sameFile reports whether the two paths name one file: the same path, or
// two names (links) of one existing file. An empty path (in memory) is no
// file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
