// Package clone copies the Engine DB's CFG_ and AUD_ tables into the
// warehouse, so a team can query its pipelines' configuration and history
// beside its data.
package clone

import (
	"strings"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Problem returns why cloning cannot run with this configuration, or nil.
// Nothing connects: it checks that there is a warehouse, that the storage
// settings the warehouse needs are present and usable, and that the
// warehouse schema is not the Engine DB's own schema in the same PostgreSQL
// database (cloning would empty the tables it copies). wopts is nil when
// the configuration has no Warehouse section.
func Problem(cfg *config.Config, wopts *warehouse.Options) error {
	if cfg.Warehouse == nil || wopts == nil {
		return exit.Errorf(exit.Configuration,
			"Cloning is enabled but craft-connector.yml has no Warehouse section to clone into: add one, or set Cloning.Enabled: false")
	}
	if _, err := warehouse.NewDialect(wopts.Kind, wopts.TableFormat, wopts.Storage); err != nil {
		return err
	}
	e, w := cfg.Engine, cfg.Warehouse
	if e.Kind == config.EnginePostgres && w.Dialect == config.DialectPostgres &&
		strings.EqualFold(e.Host, w.Host) && e.Port == w.Port && e.Database == w.Database &&
		strings.EqualFold(e.Schema, w.Schema) {
		return exit.Errorf(exit.Configuration,
			"the Warehouse schema %s is the Engine DB's own schema in the same database %s: cloning would empty the tables it copies; set the Warehouse profile's schema to another schema",
			w.Schema, w.Database)
	}
	return nil
}
