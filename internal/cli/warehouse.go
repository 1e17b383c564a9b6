package cli

import (
	"context"

	"github.com/etl-craft/etl-craft/internal/clientcred"
	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// sharedWarehouse returns the warehouse of a command's runs and clones, whose
// connection test checks the schema a clone writes into
// (clone.CheckTarget).
func sharedWarehouse(db *engine.DB, wopts *warehouse.Options) *run.SharedWarehouse {
	s := run.NewSharedWarehouse(db, *wopts)
	s.CheckTarget = func(ctx context.Context, w warehouse.Warehouse, schema string) error {
		return clone.CheckTarget(ctx, db, wopts.Kind, w, schema)
	}
	return s
}

// warehouseOptions maps the Warehouse and Cloning sections to the options
// that open the warehouse; nil when there is no Warehouse section. The
// secret is read from its variable at each connection.
func warehouseOptions(cfg *config.Config) *warehouse.Options {
	w := cfg.Warehouse
	if w == nil {
		return nil
	}
	o := &warehouse.Options{
		Kind:        warehouse.Kind(w.Dialect),
		TableFormat: warehouse.TableFormat(w.TableFormat),
		Storage:     warehouse.Storage{ExternalVolume: cfg.Cloning.ExternalVolume, BaseLocation: cfg.Cloning.BaseLocation},
		Path:        w.DuckDBPath,
		Host:        w.Host,
		Port:        w.Port,
		Database:    w.Database,
		Params:      w.Params,
		User:        w.User,
		KeyFile:     w.KeyFile,
		Schema:      w.Schema,
		Catalog:     w.Catalog,
		AuthMode:    warehouse.AuthMode(w.AuthMode),
		HTTPPath:    w.HTTPPath,
		Account:     w.Account,
		Warehouse:   w.SnowflakeWarehouse,
		Role:        w.Role,
		RoleARN:     w.RoleARN,
	}
	switch {
	case o.Kind == warehouse.Postgres:
		o.Password = postgresPassword(cfg, w.Auth, w.Host, w.Port)
	case o.AuthMode == warehouse.AuthOAuth:
		o.Password = clientcred.Client{ID: w.ClientID, Secret: secretOf(cfg, w.SecretVar), TokenURL: w.TokenURL, Scope: w.Scope}.Token()
	default:
		o.Password = secretOf(cfg, w.SecretVar)
	}
	if o.Kind != warehouse.Snowflake { // Snowflake's key_file is a key pair, not a certificate
		o.Params, o.ClientCert = clientCertificate(cfg, w.Auth, w.Params)
	}
	return o
}
