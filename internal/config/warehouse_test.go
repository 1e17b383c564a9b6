package config

import (
	"path/filepath"
	"strings"
	"testing"
)

// withWarehouse returns a file whose Warehouse section is body.
func withWarehouse(body string) string { return minimal + "Warehouse:\n" + body }

func TestWarehouseShapes(t *testing.T) {
	setenv(t, map[string]string{"WH_SECRET": "pw", "DBX_TOKEN": "dapi-x", "SF_TOKEN": "pat", "S3_SECRET": "s3"})
	cases := []struct {
		name string
		body string
		want Warehouse
	}{
		{"postgres", `  Name: postgres
  dev:
    jdbc_url: jdbc:postgresql://wh.example.com:5433/analytics?sslmode=require
    schema: staging
    auth_mode: password
    user: loader
    secret: WH_SECRET
`, Warehouse{Name: "Postgres", Dialect: "postgres", TableFormat: "native", Catalog: "analytics", Schema: "staging",
			Endpoint: Endpoint{Host: "wh.example.com", Port: 5433, Database: "analytics"}}},
		{"duckdb in memory", "  dev:\n    jdbc_url: 'jdbc:duckdb:'\n    schema: main\n",
			Warehouse{Name: "DuckDB", Dialect: "duckdb", TableFormat: "native", Catalog: "memory", Schema: "main", JDBCURL: "jdbc:duckdb:"}},
		{"duckdb memory limit", "  dev:\n    jdbc_url: 'jdbc:duckdb:'\n    schema: main\n    memory_limit: 2GiB\n",
			Warehouse{Name: "DuckDB", Dialect: "duckdb", TableFormat: "native", Catalog: "memory", Schema: "main", JDBCURL: "jdbc:duckdb:", MemoryLimit: "2GiB"}},
		{"trino", `  dev:
    jdbc_url: jdbc:trino://trino.local/lake/Sales
    schema: sales
    auth_mode: none
`, Warehouse{Name: "Trino", Dialect: "trino", TableFormat: "iceberg", Catalog: "lake", Schema: "sales",
			Endpoint: Endpoint{Host: "trino.local", Port: 8080, Database: "lake"}}},
		{"databricks URL", `  Name: Databricks
  Table_format: iceberg
  dev:
    jdbc_url: jdbc:databricks://adb-1.azuredatabricks.net:443/default;transportMode=http;ssl=1;AuthMech=3;UID=token;PWD=dapi-leak;httpPath=/sql/1.0/warehouses/abc;ConnCatalog=main
    schema: sales
    auth_mode: token
    secret: DBX_TOKEN
`, Warehouse{Name: "Databricks", Dialect: "databricks", TableFormat: "iceberg", Catalog: "main", Schema: "sales",
			JDBCURL:  "jdbc:databricks://adb-1.azuredatabricks.net:443/default;transportMode=http;ssl=1;httpPath=/sql/1.0/warehouses/abc;ConnCatalog=main",
			HTTPPath: "/sql/1.0/warehouses/abc", Endpoint: Endpoint{Host: "adb-1.azuredatabricks.net", Port: 443, Database: "main"}}},
		{"databricks separate fields", `  Name: Databricks
  dev:
    jdbc_url: jdbc:databricks://adb-1.net:443/default;httpPath=/sql/1.0/warehouses/abc;PWD=dapi-leak
    catalog: main
    schema: sales
    token: DBX_TOKEN
`, Warehouse{Name: "Databricks", Dialect: "databricks", TableFormat: "native", Catalog: "main", Schema: "sales",
			JDBCURL:  "jdbc:databricks://adb-1.net:443/default;httpPath=/sql/1.0/warehouses/abc;ConnCatalog=main;ConnSchema=sales",
			HTTPPath: "/sql/1.0/warehouses/abc", Endpoint: Endpoint{Host: "adb-1.net", Port: 443, Database: "main"}}},
		{"snowflake URL", `  Name: Snowflake
  dev:
    jdbc_url: jdbc:snowflake://myorg-acct.snowflakecomputing.com/?db=ANALYTICS&schema=PUBLIC&warehouse=WH&role=LOADER
    schema: PUBLIC
    auth_mode: password
    user: loader
    secret: WH_SECRET
`, Warehouse{Name: "Snowflake", Dialect: "snowflake", TableFormat: "native", Catalog: "ANALYTICS", Schema: "PUBLIC",
			Account: "myorg-acct", SnowflakeWarehouse: "WH", Role: "LOADER",
			Endpoint: Endpoint{Host: "myorg-acct.snowflakecomputing.com", Port: 443, Database: "ANALYTICS"}}},
		{"snowflake separate fields", `  Name: snowflake
  dev:
    user: loader
    account: myorg-acct.snowflakecomputing.com
    database: ANALYTICS
    schema: PUBLIC
    warehouse: WH
    role: LOADER
    token: SF_TOKEN
`, Warehouse{Name: "Snowflake", Dialect: "snowflake", TableFormat: "native", Catalog: "ANALYTICS", Schema: "PUBLIC",
			JDBCURL: "jdbc:snowflake://myorg-acct.snowflakecomputing.com/?db=ANALYTICS&role=LOADER&schema=PUBLIC&warehouse=WH",
			Account: "myorg-acct", SnowflakeWarehouse: "WH", Role: "LOADER",
			Endpoint: Endpoint{Host: "myorg-acct.snowflakecomputing.com", Port: 443, Database: "ANALYTICS"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustLoad(t, withWarehouse(c.body))
			w := cfg.Warehouse
			got := []string{w.Name, w.Dialect, w.TableFormat, w.Catalog, w.Schema, w.Host, w.Database, w.HTTPPath, w.Account, w.SnowflakeWarehouse, w.Role}
			want := []string{c.want.Name, c.want.Dialect, c.want.TableFormat, c.want.Catalog, c.want.Schema, c.want.Host, c.want.Database, c.want.HTTPPath, c.want.Account, c.want.SnowflakeWarehouse, c.want.Role}
			if strings.Join(got, "|") != strings.Join(want, "|") || w.Port != c.want.Port {
				t.Errorf("warehouse\n got %q port %d\nwant %q port %d", got, w.Port, want, c.want.Port)
			}
			if w.Dialect == DialectPostgres && w.DSN() != "postgres://loader@wh.example.com:5433/analytics?sslmode=require" {
				t.Errorf("DSN %q", w.DSN())
			} else if w.Dialect != DialectPostgres && w.DSN() != "" {
				t.Errorf("DSN %q for %s; want empty", w.DSN(), w.Dialect)
			}
			if c.want.JDBCURL != "" && w.JDBCURL != c.want.JDBCURL {
				t.Errorf("JDBCURL\n got %q\nwant %q", w.JDBCURL, c.want.JDBCURL)
			}
			if strings.Contains(w.JDBCURL, "dapi") || strings.Contains(w.RedactedURL(), "dapi") {
				t.Errorf("a token survived in %q", w.JDBCURL)
			}
		})
	}
}

func TestWarehouseAuth(t *testing.T) {
	setenv(t, map[string]string{"DBX_TOKEN": "t", "DBX_SECRET": "s", "SF_TOKEN": "pat"})
	cfg := mustLoad(t, withWarehouse(`  Name: Databricks
  dev:
    jdbc_url: jdbc:databricks://adb-1.net/default;httpPath=/sql/x
    catalog: main
    schema: sales
    auth_mode: oauth
    client_id: sp
    secret: DBX_SECRET
`))
	if w := cfg.Warehouse; w.TokenURL != "https://adb-1.net/oidc/v1/token" || w.Scope != "all-apis" || w.SecretVar != "DBX_SECRET" || w.Port != 443 {
		t.Errorf("databricks oauth %+v", w.Auth)
	}
	cfg = mustLoad(t, withWarehouse("  Name: Databricks\n  dev:\n    jdbc_url: jdbc:databricks://h/d;httpPath=/p\n    catalog: c\n    schema: s\n    token: DBX_TOKEN\n"))
	if w := cfg.Warehouse; w.AuthMode != "token" || w.SecretVar != "DBX_TOKEN" {
		t.Errorf("a token field means auth_mode token with its variable: %+v", w.Auth)
	}
	cfg = mustLoad(t, withWarehouse("  dev:\n    jdbc_url: jdbc:trino://h:8443/lake\n    schema: s\n    auth_mode: key_file\n    key_file: k.pem\n    cert_file: c.pem\n"))
	if w := cfg.Warehouse; w.KeyFile != filepath.Join(cfg.ProjectDir, "k.pem") || w.CertFile != filepath.Join(cfg.ProjectDir, "c.pem") {
		t.Errorf("trino key_file %+v", w.Auth)
	}
}

func TestDuckDBOverIceberg(t *testing.T) {
	t.Setenv("ICE_S3_SECRET", "s3-secret")
	t.Setenv("ICE_SECRET", "catalog-secret")
	cfg := mustLoad(t, withWarehouse(`  Name: DuckDB
  Table_format: iceberg
  dev:
    jdbc_url: 'jdbc:duckdb:'
    schema: sales
    catalog: lake
    catalog_uri: http://localhost:8181/catalog
    iceberg_warehouse: demo
    s3_endpoint: localhost:9000
    s3_region: us-east-1
    s3_url_style: path
    s3_use_ssl: false
    s3_key_id: admin
    s3_secret: ICE_S3_SECRET
    auth_mode: oauth
    client_id: etl
    secret: ICE_SECRET
    token_url: http://localhost:8181/catalog/v1/oauth/tokens
`))
	w := cfg.Warehouse
	if w.Catalog != "lake" || w.DuckDBPath != "" || w.TableFormat != "iceberg" || w.Iceberg == nil {
		t.Fatalf("warehouse %+v", w)
	}
	ice := *w.Iceberg
	if ice.CatalogURI != "http://localhost:8181/catalog" || ice.Warehouse != "demo" || ice.S3URLStyle != "path" ||
		ice.S3UseSSL == nil || *ice.S3UseSSL || ice.S3KeyID != "admin" || ice.S3SecretVar != "ICE_S3_SECRET" {
		t.Errorf("iceberg %+v", ice)
	}
	if w.AuthMode != "oauth" || w.ClientID != "etl" || w.SecretVar != "ICE_SECRET" {
		t.Errorf("auth %+v", w.Auth)
	}
}

func TestWarehouseErrors(t *testing.T) {
	setenv(t, map[string]string{"WH_SECRET": "pw", "DBX_TOKEN": "t"})
	const pgFields = "    schema: s\n    auth_mode: password\n    user: u\n    secret: WH_SECRET\n"
	cases := []errorCase{
		{"DuckDB file stem not an identifier", "  dev:\n    jdbc_url: jdbc:duckdb:my-warehouse.duckdb\n    schema: s\n",
			":12: Warehouse.dev.jdbc_url: the DuckDB file my-warehouse.duckdb gives the catalog name 'my-warehouse'"},
		{"Name against the URL", "  Name: Postgres\n  dev:\n    jdbc_url: jdbc:duckdb:w.duckdb\n    schema: s\n",
			":11: Warehouse.Name: is 'Postgres', but jdbc_url is a DuckDB URL"},
		{"unknown Name", "  Name: Oracle\n  dev:\n    jdbc_url: jdbc:duckdb:w.duckdb\n    schema: s\n",
			"Warehouse.Name: must be one of Postgres, DuckDB, Trino, Databricks or Snowflake; got 'Oracle'"},
		{"unsupported URL", "  dev:\n    jdbc_url: jdbc:mysql://h/d\n    schema: s\n", "'jdbc:mysql://h/d' is not a supported warehouse URL"},
		{"postgres is always native", "  Table_format: iceberg\n  dev:\n    jdbc_url: jdbc:postgresql://h/d\n" + pgFields,
			":11: Warehouse.Table_format: is iceberg, but PostgreSQL tables are always native"},
		{"bad table format", "  Table_format: delta\n  dev:\n    jdbc_url: jdbc:duckdb:w.duckdb\n    schema: s\n",
			"Warehouse.Table_format: must be one of native, iceberg; got 'delta'"},
		{"schema required", "  dev:\n    jdbc_url: jdbc:duckdb:w.duckdb\n", ":11: Warehouse.dev: needs schema"},
		{"schema plain", "  dev:\n    jdbc_url: jdbc:duckdb:w.duckdb\n    schema: a.b\n", "Warehouse.dev.schema: must be a plain identifier"},
		{"trino schema must match", "  dev:\n    jdbc_url: jdbc:trino://h/lake/sales\n    schema: finance\n    auth_mode: none\n",
			":13: Warehouse.dev.schema: is 'finance', but jdbc_url names schema 'sales'"},
		{"trino needs a catalog", "  dev:\n    jdbc_url: jdbc:trino://h:8080/\n    schema: s\n    auth_mode: none\n", "is not of the form jdbc:trino://"},
		{"trino auth mode", "  dev:\n    jdbc_url: jdbc:trino://h/lake\n    schema: s\n    auth_mode: sts\n",
			"Warehouse.dev.auth_mode: must be one of key_file, none, oauth, password, sso, token; got 'sts'"},
		{"duckdb memory limit not a size", "  dev:\n    jdbc_url: jdbc:duckdb:w.duckdb\n    schema: s\n    memory_limit: 80%\n",
			":14: Warehouse.dev.memory_limit: must be a size such as 512MB or 2GiB (KB, MB, GB, TB, KiB, MiB, GiB or TiB); got '80%'"},
		{"memory limit is DuckDB's", "  dev:\n    jdbc_url: jdbc:postgresql://h/d\n" + pgFields + "    memory_limit: 1GB\n",
			"Warehouse.dev: unknown key 'memory_limit'"},
		{"duckdb auth mode", "  dev:\n    jdbc_url: jdbc:duckdb:w.duckdb\n    schema: s\n    auth_mode: password\n",
			"must be one of none; got 'password'"},
		{"databricks needs httpPath", "  dev:\n    jdbc_url: jdbc:databricks://h:443/default;ConnCatalog=c\n    schema: s\n    auth_mode: token\n    secret: DBX_TOKEN\n",
			"Warehouse.dev.jdbc_url: has no httpPath"},
		{"databricks needs a catalog", "  dev:\n    jdbc_url: jdbc:databricks://h:443/default;httpPath=/p\n    schema: s\n    auth_mode: token\n    secret: DBX_TOKEN\n",
			":11: Warehouse.dev: names no catalog"},
		{"snowflake needs db", "  dev:\n    jdbc_url: jdbc:snowflake://acct.snowflakecomputing.com/?schema=S\n    schema: S\n    auth_mode: password\n    user: u\n    secret: WH_SECRET\n",
			"Warehouse.dev.jdbc_url: has no db= setting"},
		{"token outside Databricks and Snowflake", "  dev:\n    jdbc_url: jdbc:trino://h/lake\n    schema: s\n    token: DBX_TOKEN\n",
			":14: Warehouse.dev.token: is read only when Warehouse.Name is Databricks or Snowflake"},
		{"token and secret together", "  Name: Databricks\n  dev:\n    jdbc_url: jdbc:databricks://h/d;httpPath=/p\n    catalog: c\n    schema: s\n    token: DBX_TOKEN\n    secret: DBX_TOKEN\n",
			":17: Warehouse.dev.secret: is not read with auth_mode token"},
		{"separate catalog plain", "  Name: Databricks\n  dev:\n    jdbc_url: jdbc:databricks://h/d;httpPath=/p\n    catalog: my-cat\n    schema: s\n    token: DBX_TOKEN\n",
			"Warehouse.dev.catalog: must be a plain identifier"},
		{"separate databricks URL", "  Name: Databricks\n  dev:\n    jdbc_url: https://h/d\n    catalog: c\n    schema: s\n    token: DBX_TOKEN\n",
			"Warehouse.dev.jdbc_url: must start with jdbc:databricks://"},
		{"snowflake account not a URL", "  Name: Snowflake\n  dev:\n    user: u\n    account: https://x.snowflakecomputing.com\n    database: D\n    schema: S\n    warehouse: W\n    role: R\n    token: DBX_TOKEN\n",
			"Warehouse.dev.account: must be an account identifier"},
		{"snowflake fields required", "  Name: Snowflake\n  dev:\n    user: u\n    account: acct\n    schema: S\n    warehouse: W\n    role: R\n    token: DBX_TOKEN\n",
			":12: Warehouse.dev: needs database"},
		{"separate shape unknown key", "  Name: Snowflake\n  dev:\n    jdbc_url: x\n    account: acct\n",
			"Warehouse.dev: unknown key 'jdbc_url'"},
		{"iceberg needs catalog", "  Name: DuckDB\n  Table_format: iceberg\n  dev:\n    jdbc_url: 'jdbc:duckdb:'\n    schema: s\n",
			":13: Warehouse.dev: needs catalog"},
		{"iceberg settings refuse quotes", "  Name: DuckDB\n  Table_format: iceberg\n  dev:\n    jdbc_url: 'jdbc:duckdb:'\n    schema: s\n    catalog: lake\n    catalog_uri: \"http://x/'; DROP\"\n",
			"Warehouse.dev.catalog_uri: must not contain a quote"},
		{"iceberg fields unknown on a DuckDB file", "  dev:\n    jdbc_url: jdbc:duckdb:w.duckdb\n    schema: s\n    catalog_uri: http://x\n",
			"Warehouse.dev: unknown key 'catalog_uri'"},
		{"url credential keys", "  dev:\n    jdbc_url: jdbc:snowflake://a.snowflakecomputing.com/?db=D&password=leak\n    schema: S\n",
			"contains the credential query key 'password'"},
		{"no profile block", "  Name: DuckDB\n", ":10: Warehouse: needs at least one profile block"},
	}
	checkErrors(t, withWarehouse, cases, "leak")
}

func TestWarehouseIsOptional(t *testing.T) {
	cfg := mustLoad(t, minimal)
	if cfg.Warehouse != nil {
		t.Errorf("Warehouse %+v; want nil without the section", cfg.Warehouse)
	}
}

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"jdbc:postgresql://u:p@h/d?sslmode=require&api_key=x": "jdbc:postgresql://h/d?sslmode=require",
		"jdbc:databricks://h:443/d;httpPath=/p;PWD=x;UID=t":   "jdbc:databricks://h:443/d;httpPath=/p;UID=t",
		"jdbc:trino://h/c?SSLKeyStorePassword=x":              "jdbc:trino://h/c",
		"jdbc:duckdb:/tmp/w.duckdb":                           "jdbc:duckdb:/tmp/w.duckdb",
	}
	for in, want := range cases {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q; want %q", in, got, want)
		}
	}
}
