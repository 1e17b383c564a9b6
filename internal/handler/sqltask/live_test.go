//go:build live

package sqltask_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The live tests run the SQL actions against real Trino, Databricks and
// Snowflake warehouses. They are compiled only with -tags live (so CI,
// which has no such warehouse, never runs them) and read their connection
// from the environment, as docs/warehouses.md lists:
//
//	ETL_CRAFT_LIVE=trino,databricks,snowflake   (the warehouses to test)
//	scripts/test.sh -tags live -run TestLive ./internal/handler/sqltask/
//
// A warehouse named in ETL_CRAFT_LIVE whose variables are missing fails.

// liveEnv reads a variable a live test needs.
func liveEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: the live test needs it (see docs/warehouses.md)", name)
	}
	return v
}

// liveOptions returns the options of one live warehouse from the
// environment.
func liveOptions(t *testing.T, kind string) warehouse.Options {
	format := warehouse.TableFormat(os.Getenv("ETL_CRAFT_LIVE_" + strings.ToUpper(kind) + "_FORMAT"))
	switch kind {
	case "trino":
		port, _ := strconv.Atoi(os.Getenv("ETL_CRAFT_LIVE_TRINO_PORT"))
		o := warehouse.Options{Kind: warehouse.Trino, TableFormat: format, Host: liveEnv(t, "ETL_CRAFT_LIVE_TRINO_HOST"), Port: port,
			Catalog: liveEnv(t, "ETL_CRAFT_LIVE_TRINO_CATALOG"), Schema: liveEnv(t, "ETL_CRAFT_LIVE_TRINO_SCHEMA"),
			User: liveEnv(t, "ETL_CRAFT_LIVE_TRINO_USER"), AuthMode: warehouse.AuthNone}
		if pw := os.Getenv("ETL_CRAFT_LIVE_TRINO_PASSWORD"); pw != "" {
			o.AuthMode, o.Password = warehouse.AuthPassword, func() (string, error) { return pw, nil }
		}
		return o
	case "databricks":
		token := liveEnv(t, "ETL_CRAFT_LIVE_DATABRICKS_TOKEN")
		return warehouse.Options{Kind: warehouse.Databricks, TableFormat: format, Host: liveEnv(t, "ETL_CRAFT_LIVE_DATABRICKS_HOST"),
			HTTPPath: liveEnv(t, "ETL_CRAFT_LIVE_DATABRICKS_HTTP_PATH"), Catalog: liveEnv(t, "ETL_CRAFT_LIVE_DATABRICKS_CATALOG"),
			Schema: liveEnv(t, "ETL_CRAFT_LIVE_DATABRICKS_SCHEMA"), AuthMode: warehouse.AuthToken,
			Password: func() (string, error) { return token, nil }}
	case "snowflake":
		pw := liveEnv(t, "ETL_CRAFT_LIVE_SNOWFLAKE_PASSWORD")
		return warehouse.Options{Kind: warehouse.Snowflake, TableFormat: format, Account: liveEnv(t, "ETL_CRAFT_LIVE_SNOWFLAKE_ACCOUNT"),
			User: liveEnv(t, "ETL_CRAFT_LIVE_SNOWFLAKE_USER"), Catalog: liveEnv(t, "ETL_CRAFT_LIVE_SNOWFLAKE_DATABASE"),
			Schema: liveEnv(t, "ETL_CRAFT_LIVE_SNOWFLAKE_SCHEMA"), Warehouse: liveEnv(t, "ETL_CRAFT_LIVE_SNOWFLAKE_WAREHOUSE"),
			Role: os.Getenv("ETL_CRAFT_LIVE_SNOWFLAKE_ROLE"), AuthMode: warehouse.AuthPassword,
			Storage: warehouse.Storage{ExternalVolume: os.Getenv("ETL_CRAFT_LIVE_SNOWFLAKE_EXTERNAL_VOLUME"),
				BaseLocation: os.Getenv("ETL_CRAFT_LIVE_SNOWFLAKE_BASE_LOCATION")},
			Password: func() (string, error) { return pw, nil }}
	}
	t.Fatalf("ETL_CRAFT_LIVE names %q: use trino, databricks or snowflake", kind)
	return warehouse.Options{}
}

// TestLive runs every action on each live warehouse in a table of its own
// and checks the rows and the change hash, then drops the tables.
func TestLive(t *testing.T) {
	kinds := strings.Split(liveEnv(t, "ETL_CRAFT_LIVE"), ",")
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			opts := liveOptions(t, strings.TrimSpace(kind))
			e := newEngineEnv(t, opts)
			w := e.open()
			defer w.Close()
			suffix := strconv.FormatInt(int64(os.Getpid()), 10)
			created, merged := "staging_live_created_"+suffix, "staging_live_merged_"+suffix
			schema := opts.Schema
			defer func() {
				tx, err := w.Begin(context.Background())
				if err != nil {
					return
				}
				for _, name := range []string{created, merged} {
					tx.Exec(context.Background(), "DROP TABLE IF EXISTS "+warehouse.Qualify(w, w.Table(schema, w.Fold(name))))
				}
				tx.Commit()
			}()
			src := "SELECT 1 AS id, 'a' AS name, CAST(1.5 AS DECIMAL(12,2)) AS amount UNION ALL SELECT 2 AS id, 'é😀' AS name, CAST(NULL AS DECIMAL(12,2)) AS amount"
			target := func(name string) string { return schema + "." + name }

			wantCounts(t, e.must(params("SQL_ACTION", "CREATE_TABLE", "TARGET_OBJECT", target(created), "SOURCE_SQL", src)),
				"source=2 target=2 insert=2 update=- delete=- written=2")
			wantCounts(t, e.must(params("SQL_ACTION", "OVERWRITE_TABLE", "TARGET_OBJECT", target(created), "SOURCE_SQL", src)),
				"source=2 target=2 insert=2 update=- delete=- written=2")

			e.must(params("SQL_ACTION", "SETUP_TABLE", "TARGET_OBJECT", target(merged), "SETUP_FOR", "SCD1_MERGE", "SOURCE_SQL", src))
			merge := params("SQL_ACTION", "SCD1_MERGE", "TARGET_OBJECT", target(merged), "MERGE_KEY", "id", "SOURCE_SQL", src)
			wantCounts(t, e.must(merge), "source=2 target=2 insert=2 update=0 delete=- written=2")
			wantCounts(t, e.must(merge), "source=2 target=2 insert=0 update=0 delete=- written=0")
			want := md5.Sum([]byte("V1:aV4:1.50"))
			q := fmt.Sprintf("SELECT %s FROM %s WHERE %s = 1", w.Quote(w.Fold("HASH_KEY")),
				warehouse.Qualify(w, w.Table(schema, w.Fold(merged))), w.Quote(w.Fold("id")))
			if got := e.value(q); got != hex.EncodeToString(want[:]) {
				t.Errorf("HASH_KEY %s, want the hash DuckDB and PostgreSQL compute, %x", got, want)
			}
			wantCounts(t, e.must(params("SQL_ACTION", "DELETE_ROWS", "TARGET_OBJECT", target(merged), "MERGE_KEY", "id", "SOURCE_SQL", "SELECT 2 AS id")),
				"source=1 target=2 insert=- update=- delete=1 written=1")
		})
	}
}
