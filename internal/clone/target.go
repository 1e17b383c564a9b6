package clone

import (
	"context"
	"fmt"
	"strings"

	"github.com/etl-craft/etl-craft/internal/authmode"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The target of a clone, checked through the open warehouse: the schema the
// mirrors go into must exist, and must not be the Engine DB's own schema.
// Whether it is, the servers say, not the configuration's spelling of their
// addresses: 127.0.0.1 and localhost, or a host name and its address, reach
// the same PostgreSQL server.

// homeQuery asks a PostgreSQL server where a connection is: the system
// identifier initdb gave the cluster (the same through every address and
// port of the server, and readable by every role), the connection's
// database, and its current schema (the Engine DB's, from its search_path).
const homeQuery = `SELECT system_identifier::text, current_database(), current_schema() FROM pg_control_system()`

// Home is where a PostgreSQL connection is, as the server reports it.
type Home struct {
	// Cluster is the system identifier initdb gave the cluster.
	Cluster string
	// Database is the connection's current_database().
	Database string
	// Schema is the connection's current_schema(): for the Engine DB, its
	// own schema.
	Schema string
}

// CheckTarget checks the schema a clone writes into through the open
// warehouse w of the kind: it must exist (an error without an exit code
// otherwise, which the caller gives its own) and must not be the Engine DB's
// own schema in the same database (RefuseEngineSchema, exit 3).
func CheckTarget(ctx context.Context, db *engine.DB, kind warehouse.Kind, w warehouse.Warehouse, schema string) error {
	found, err := w.SchemaExists(ctx, schema)
	if err != nil {
		return fmt.Errorf("could not look for the warehouse schema %s.%s: %w", w.Catalog(), schema, err)
	}
	if !found {
		return fmt.Errorf("the warehouse schema %s.%s does not exist: cloning copies the Engine DB into it, and etl-craft never creates warehouse schemas; create it, or set the Warehouse profile's schema",
			w.Catalog(), schema)
	}
	return RefuseEngineSchema(ctx, db, kind, w, schema)
}

// MayBeEngineDB reports whether a warehouse of the kind can be the Engine
// DB's own database: a PostgreSQL warehouse of an Engine DB on a PostgreSQL
// server. Only then does SameDatabase ask the servers.
func MayBeEngineDB(db *engine.DB, kind warehouse.Kind) bool {
	return db.Capabilities().Server && authmode.Of(string(kind)).PostgresServer
}

// SameDatabase reports whether the open warehouse w of the kind is in the
// Engine DB's own database: both connections reach the same PostgreSQL
// cluster (its system identifier) and the same database, whatever the
// configuration calls their servers. It returns where the Engine DB is.
// Any other pair of kinds (MayBeEngineDB) is never the same database and is
// not asked.
func SameDatabase(ctx context.Context, db *engine.DB, kind warehouse.Kind, w warehouse.Warehouse) (bool, Home, error) {
	var engineHome Home
	if !MayBeEngineDB(db, kind) {
		return false, engineHome, nil
	}
	if err := db.QueryRowContext(ctx, homeQuery).Scan(&engineHome.Cluster, &engineHome.Database, &engineHome.Schema); err != nil {
		return false, engineHome, exit.Wrap(exit.EngineDB, err, "could not ask the Engine DB which server and database it is, to tell whether the warehouse is the same")
	}
	warehouseHome, err := warehouseHome(ctx, w)
	if err != nil {
		return false, engineHome, fmt.Errorf("could not ask the warehouse %s which server and database it is, to tell whether it is the Engine DB's: %w", w, err)
	}
	return engineHome.Cluster == warehouseHome.Cluster && engineHome.Database == warehouseHome.Database, engineHome, nil
}

// RefuseEngineSchema returns a configuration error (exit 3) when schema, in
// the open warehouse w of the kind, is the Engine DB's own schema in the
// same database (SameDatabase): the schema is the Engine DB connection's
// current schema, compared without case as mirrors are looked up. Cloning
// there would empty the tables it copies.
func RefuseEngineSchema(ctx context.Context, db *engine.DB, kind warehouse.Kind, w warehouse.Warehouse, schema string) error {
	same, engineHome, err := SameDatabase(ctx, db, kind, w)
	if err != nil || !same || !strings.EqualFold(engineHome.Schema, schema) {
		return err
	}
	return ownSchemaError(schema, engineHome.Database,
		fmt.Sprintf(" (the Engine DB's and the warehouse's connections reach the same PostgreSQL server, system identifier %s)", engineHome.Cluster))
}

// warehouseHome runs homeQuery through the warehouse, in a transaction it
// rolls back.
func warehouseHome(ctx context.Context, w warehouse.Warehouse) (Home, error) {
	var h Home
	tx, err := w.Begin(ctx)
	if err != nil {
		return h, err
	}
	defer tx.Rollback()
	rows, err := tx.Query(ctx, homeQuery)
	if err != nil {
		return h, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return h, err
		}
		return h, fmt.Errorf("pg_control_system() returned no row")
	}
	var schema *string // NULL when the warehouse's search_path names no schema that exists
	if err := rows.Scan(&h.Cluster, &h.Database, &schema); err != nil {
		return h, err
	}
	return h, rows.Err()
}

// ownSchemaError is the refusal of the Engine DB's own schema as the clone's
// target, how saying how it was found ("" for the configuration's own
// words).
func ownSchemaError(schema, database, how string) error {
	return exit.Errorf(exit.Configuration,
		"the Warehouse schema %s is the Engine DB's own schema in the same database %s%s: cloning would empty the tables it copies; set the Warehouse profile's schema to another schema",
		schema, database, how)
}
