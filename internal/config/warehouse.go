package config

import (
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/authmode"
)

// warehouseDisplay maps each dialect to its Warehouse.Name spelling.
var warehouseDisplay = map[string]string{
	DialectPostgres: "Postgres", DialectDuckDB: "DuckDB", DialectTrino: "Trino",
	DialectDatabricks: "Databricks", DialectSnowflake: "Snowflake",
}

// urlDialects maps each jdbc:<scheme>: to its warehouse dialect.
var urlDialects = map[string]string{
	"postgresql": DialectPostgres, "duckdb": DialectDuckDB, "trino": DialectTrino,
	"databricks": DialectDatabricks, "snowflake": DialectSnowflake,
}

// icebergKeys are DuckDB over Iceberg's own profile fields.
var icebergKeys = []string{
	"catalog", "catalog_uri", "iceberg_warehouse", "s3_endpoint", "s3_region",
	"s3_url_style", "s3_use_ssl", "s3_key_id", "s3_secret",
}

// separateKeys are Databricks' and Snowflake's own connection fields, used
// instead of a whole JDBC URL; marker is the field that selects that shape.
var separateKeys = map[string][]string{
	DialectDatabricks: {"jdbc_url", "catalog", "schema", "token"},
	DialectSnowflake:  {"user", "account", "database", "schema", "warehouse", "role", "token"},
}
var separateMarker = map[string]string{DialectDatabricks: "catalog", DialectSnowflake: "account"}

// authExtras are the auth fields every connection profile may carry.
var authExtras = []string{"auth_mode", "secret", "key_file", "cert_file", "client_id", "token_url", "scope", "issuer", "region", "role_arn"}

// warehouse reads the Warehouse section, when the file has one.
func (l *loader) warehouse(cfg *Config, top *mapping) error {
	s, err := l.selectProfile(top, "Warehouse")
	if err != nil || s == nil {
		return err
	}
	f := s.fields
	if s.blocks == 0 {
		return l.fail(f.line, "Warehouse", "needs at least one profile block (dev, prod, ...) holding jdbc_url and schema (see %s)", ExamplePath)
	}
	w := &Warehouse{Profile: s.profile}
	name, err := f.get("Name")
	if err != nil {
		return err
	}
	declared := ""
	if name.set {
		for dialect, display := range warehouseDisplay {
			if strings.EqualFold(display, name.text) {
				declared = dialect
			}
		}
		if declared == "" {
			return l.bad(name, "must be one of Postgres, DuckDB, Trino, Databricks or Snowflake; got '%s'", name.text)
		}
	}
	if w.TableFormat, err = f.choice("Table_format", FormatNative, FormatNative, FormatIceberg); err != nil {
		return err
	}
	marker := separateMarker[declared]
	switch {
	case marker != "" && (f.has(marker) || f.has("token")):
		w.Dialect = declared
		err = l.separateFields(f, w)
	case f.has("token"):
		v, _ := f.m.get("token")
		return l.fail(v.line, v.path, "is read only when Warehouse.Name is Databricks or Snowflake; name the secret variable in secret")
	default:
		err = l.urlWarehouse(f, name, declared, w)
	}
	if err != nil {
		return err
	}
	w.Name = warehouseDisplay[w.Dialect]
	if w.Catalog == "" {
		return l.fail(f.line, f.where, "names no catalog, so schema.table names cannot be completed; "+
			"name one in jdbc_url (the database, or ConnCatalog= on Databricks, db= on Snowflake)")
	}
	cfg.Warehouse = w
	return nil
}

// urlWarehouse reads a profile written as one jdbc_url with its fields.
func (l *loader) urlWarehouse(f *fields, name value, declared string, w *Warehouse) error {
	raw, err := f.required("jdbc_url")
	if err != nil {
		return err
	}
	if w.JDBCURL, err = l.guardURL(raw); err != nil {
		return err
	}
	scheme, _, _ := strings.Cut(strings.TrimPrefix(strings.ToLower(w.JDBCURL), "jdbc:"), ":")
	w.Dialect = urlDialects[scheme]
	if !strings.HasPrefix(strings.ToLower(w.JDBCURL), "jdbc:") || w.Dialect == "" {
		return l.bad(raw, "'%s' is not a supported warehouse URL; use jdbc:duckdb:<file>, jdbc:postgresql://, "+
			"jdbc:trino://, jdbc:databricks:// or jdbc:snowflake://", redactURL(w.JDBCURL))
	}
	if declared != "" && declared != w.Dialect {
		return l.bad(name, "is '%s', but jdbc_url is a %s URL", name.text, warehouseDisplay[w.Dialect])
	}
	authKey := w.Dialect
	allowed := append([]string{"Name", "Table_format"}, connectionKeys...)
	switch {
	case w.Dialect == DialectPostgres && w.TableFormat == FormatIceberg:
		v, _ := f.get("Table_format")
		return l.fail(v.line(), v.path, "is iceberg, but PostgreSQL tables are always native; remove Table_format or set it to native")
	case w.Dialect == DialectTrino:
		w.TableFormat = FormatIceberg
	case w.Dialect == DialectDuckDB && w.TableFormat == FormatIceberg:
		authKey = authmode.DuckDBIceberg
		allowed = append(allowed, icebergKeys...)
	}
	if w.Dialect == DialectDuckDB {
		allowed = append(allowed, "memory_limit")
		if w.MemoryLimit, err = memoryLimit(f); err != nil {
			return err
		}
	}
	if err := f.unknown(allowed); err != nil {
		return err
	}
	if err := l.warehouseURL(f, raw, w); err != nil {
		return err
	}
	defaultMode := ""
	if w.Dialect == DialectDuckDB {
		defaultMode = "none"
	}
	if w.Auth, err = f.authOf(authmode.Of(authKey), defaultMode); err != nil {
		return err
	}
	if authKey == authmode.DuckDBIceberg {
		if err := l.icebergFields(f, w); err != nil {
			return err
		}
	}
	if w.Schema, err = schema(f); err != nil {
		return err
	}
	if w.Dialect == DialectTrino {
		if _, urlSchema, ok := strings.Cut(w.Database, "/"); ok && urlSchema != "" && !strings.EqualFold(urlSchema, w.Schema) {
			v, _ := f.get("schema")
			return l.fail(v.line(), v.path, "is '%s', but jdbc_url names schema '%s'; make them the same", w.Schema, urlSchema)
		}
		w.Database = w.Catalog
	}
	if w.Dialect == DialectDatabricks && w.Auth.AuthMode == "oauth" {
		databricksOAuthDefaults(w)
	}
	return nil
}

// warehouseURL reads the parts of the profile's jdbc_url for its dialect.
func (l *loader) warehouseURL(f *fields, raw value, w *Warehouse) error {
	switch w.Dialect {
	case DialectDuckDB:
		return l.duckdbURL(raw, w)
	case DialectDatabricks:
		return l.databricksURL(raw, w)
	case DialectSnowflake:
		return l.snowflakeURL(raw, w)
	}
	defPort, form := 5432, "jdbc:postgresql://host[:port]/database[?settings]"
	if w.Dialect == DialectTrino {
		defPort, form = 8080, "jdbc:trino://host[:port]/<catalog>[/<schema>]"
	}
	u, ok := parseNetworkURL(w.JDBCURL, defPort)
	catalog, _, _ := strings.Cut(u.path, "/")
	if !ok || catalog == "" || (w.Dialect == DialectPostgres && strings.Contains(u.path, "/")) {
		return l.bad(raw, "'%s' is not of the form %s", redactURL(w.JDBCURL), form)
	}
	w.Host, w.Port, w.Database, w.Params, w.Catalog = u.host, u.port, u.path, paramMap(u.query), catalog
	return nil
}

// memorySize is a DuckDB memory size: a number and a unit of bytes.
var memorySize = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)$`)

// memoryLimit reads a DuckDB profile's memory_limit, "" when absent.
func memoryLimit(f *fields) (string, error) {
	v, err := f.get("memory_limit")
	if err != nil || !v.set {
		return "", err
	}
	if !memorySize.MatchString(v.text) {
		return "", f.l.bad(v, "must be a size such as 512MB or 2GiB (KB, MB, GB, TB, KiB, MiB, GiB or TiB); got '%s'", v.text)
	}
	return v.text, nil
}

// duckdbURL reads jdbc:duckdb:<file>, or bare jdbc:duckdb: for a database in
// memory. A file's stem is the catalog, so it must be a plain identifier.
func (l *loader) duckdbURL(raw value, w *Warehouse) error {
	p := strings.TrimSpace(w.JDBCURL[len("jdbc:duckdb:"):])
	if p == "" || p == ":memory:" {
		w.JDBCURL, w.Catalog = "jdbc:duckdb:", "memory"
		return nil
	}
	w.DuckDBPath = l.abs(p)
	w.JDBCURL = "jdbc:duckdb:" + w.DuckDBPath
	stem := strings.TrimSuffix(filepath.Base(w.DuckDBPath), filepath.Ext(w.DuckDBPath))
	if !plainIdentifier.MatchString(stem) {
		return l.bad(raw, "the DuckDB file %s gives the catalog name '%s', which is not a plain identifier; "+
			"rename the file to letters, digits and underscores, such as warehouse.duckdb", p, stem)
	}
	w.Catalog = stem
	return nil
}

// hostURL matches a cloud warehouse's URL, whose first two groups are the
// host and the port (443 when left out), and sets them on w.
func (l *loader) hostURL(re *regexp.Regexp, raw value, w *Warehouse, form string) ([]string, error) {
	m := re.FindStringSubmatch(w.JDBCURL)
	if m == nil {
		return nil, l.bad(raw, "'%s' is not of the form %s", redactURL(w.JDBCURL), form)
	}
	w.Host, w.Port = m[1], 443
	if m[2] != "" {
		w.Port, _ = strconv.Atoi(m[2])
	}
	return m, nil
}

var databricksURL = regexp.MustCompile(`^jdbc:databricks://([^:/;@]+)(?::([0-9]+))?(?:/([^;]*))?(?:;(.*))?$`)

// databricksPublic are the Databricks URL settings kept; every other one
// (AuthMech, UID, PWD, ...) is a credential or a driver setting and is
// dropped.
var databricksPublic = []string{"httppath", "transportmode", "ssl", "conncatalog", "connschema", "catalog", "schema"}

// databricksURL reads jdbc:databricks://host[:443][/schema];httpPath=...;
// ConnCatalog=..., keeping only the settings that say what to connect to.
func (l *loader) databricksURL(raw value, w *Warehouse) error {
	m, err := l.hostURL(databricksURL, raw, w, "jdbc:databricks://<host>:443/<schema>;httpPath=/sql/1.0/warehouses/<id>;ConnCatalog=<catalog>")
	if err != nil {
		return err
	}
	var kept []param
	w.Params = map[string]string{}
	for _, p := range parseQuery(m[4], ";") {
		lower := strings.ToLower(p.key)
		if slices.Contains(databricksPublic, lower) {
			kept = append(kept, p)
			w.Params[lower] = p.value
		}
	}
	w.HTTPPath = w.Params["httppath"]
	if w.HTTPPath == "" {
		return l.bad(raw, "has no httpPath; it names the SQL warehouse or cluster, such as httpPath=/sql/1.0/warehouses/<id>")
	}
	w.Catalog = firstOf(w.Params["conncatalog"], w.Params["catalog"])
	w.Database = w.Catalog
	w.JDBCURL = "jdbc:databricks://" + w.Host + ":" + strconv.Itoa(w.Port) + "/" + m[3]
	if len(kept) > 0 {
		w.JDBCURL += ";" + encodeQuery(kept, ";")
	}
	return nil
}

var snowflakeURL = regexp.MustCompile(`^jdbc:snowflake://([^:/?@]+)(?::([0-9]+))?/?(?:\?(.*))?$`)

// snowflakeURL reads jdbc:snowflake://<account>.snowflakecomputing.com/?db=...
func (l *loader) snowflakeURL(raw value, w *Warehouse) error {
	m, err := l.hostURL(snowflakeURL, raw, w, "jdbc:snowflake://<account>.snowflakecomputing.com/?db=<db>&schema=<schema>&warehouse=<wh>")
	if err != nil {
		return err
	}
	w.Params = paramMap(parseQuery(m[3], "&"))
	w.Database = firstOf(w.Params["db"], w.Params["database"])
	if w.Database == "" {
		return l.bad(raw, "has no db= setting; it names the database every schema.table is found in")
	}
	account, _, _ := strings.Cut(w.Host, ".")
	w.Account = firstOf(w.Params["account"], account)
	w.SnowflakeWarehouse, w.Role, w.Catalog = w.Params["warehouse"], w.Params["role"], w.Database
	return nil
}

// firstOf returns the first non-empty text.
func firstOf(texts ...string) string {
	for _, t := range texts {
		if t != "" {
			return t
		}
	}
	return ""
}

// databricksOAuthDefaults fills an OAuth machine-to-machine login's token URL
// and scope when the profile leaves them out.
func databricksOAuthDefaults(w *Warehouse) {
	if w.TokenURL == "" {
		w.TokenURL = "https://" + w.Host + "/oidc/v1/token"
	}
	if w.Scope == "" {
		w.Scope = "all-apis"
	}
}

// icebergFields reads DuckDB over Iceberg's catalog and object storage
// settings. None may contain a quote: they are written into DuckDB SQL.
func (l *loader) icebergFields(f *fields, w *Warehouse) error {
	catalog, err := f.required("catalog")
	if err != nil {
		return err
	}
	if !plainIdentifier.MatchString(catalog.text) {
		return l.bad(catalog, "must be a plain identifier (the name the Iceberg catalog is attached as); got '%s'", catalog.text)
	}
	w.Catalog = catalog.text
	ice := &DuckDBIceberg{}
	texts := []struct {
		key  string
		into *string
	}{
		{"catalog_uri", &ice.CatalogURI}, {"iceberg_warehouse", &ice.Warehouse}, {"s3_endpoint", &ice.S3Endpoint},
		{"s3_region", &ice.S3Region}, {"s3_key_id", &ice.S3KeyID},
	}
	for _, t := range texts {
		v, err := f.get(t.key)
		if err != nil {
			return err
		}
		if strings.ContainsAny(v.text, `'"`) {
			return l.fail(v.line(), v.path, "must not contain a quote")
		}
		*t.into = v.text
	}
	if f.has("s3_url_style") {
		if ice.S3URLStyle, err = f.choice("s3_url_style", "", "path", "vhost"); err != nil {
			return err
		}
	}
	if ice.S3UseSSL, err = f.boolean("s3_use_ssl"); err != nil {
		return err
	}
	if ice.S3SecretVar, err = f.secret("s3_secret"); err != nil {
		return err
	}
	w.Iceberg = ice
	return nil
}

var snowflakeAccount = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)

// separateFields reads a Databricks or Snowflake profile written as separate
// fields, and builds its credential-free JDBC URL. A token field means
// auth_mode token.
func (l *loader) separateFields(f *fields, w *Warehouse) error {
	allowed := append([]string{"Name", "Table_format"}, separateKeys[w.Dialect]...)
	if err := f.unknown(append(allowed, authExtras...)); err != nil {
		return err
	}
	modes := authmode.Of(w.Dialect)
	def := ""
	if f.has("token") {
		def = "token"
	}
	mode, err := f.choice("auth_mode", def, modes.Profile()...)
	if err != nil {
		return err
	}
	secretKey := "secret"
	if mode == "token" {
		secretKey = "token"
		if f.has("secret") {
			v, _ := f.m.get("secret")
			return l.fail(v.line, v.path, "is not read with auth_mode token: name the token's variable in token, not secret")
		}
	} else if f.has("token") {
		v, _ := f.m.get("token")
		return l.fail(v.line, v.path, "is read only with auth_mode token; auth_mode is %s", mode)
	}
	parts := map[string]value{}
	for _, k := range separateKeys[w.Dialect] {
		if k == "token" {
			continue
		}
		if parts[k], err = f.required(k); err != nil {
			return err
		}
	}
	if w.Dialect == DialectDatabricks {
		err = l.databricksFields(parts, w)
	} else {
		err = l.snowflakeFields(parts, w)
	}
	if err != nil {
		return err
	}
	if w.Auth, err = f.auth(mode, modes.Needs(mode), secretKey); err != nil {
		return err
	}
	if w.Dialect == DialectDatabricks && mode == "oauth" {
		databricksOAuthDefaults(w)
	}
	w.Schema = parts["schema"].text
	return nil
}

// databricksFields builds a Databricks URL from jdbc_url, catalog and schema.
func (l *loader) databricksFields(parts map[string]value, w *Warehouse) error {
	for _, k := range []string{"catalog", "schema"} {
		if v := parts[k]; !plainIdentifier.MatchString(v.text) {
			return l.bad(v, "must be a plain identifier (letters, digits and underscores); got '%s'", v.text)
		}
	}
	raw := parts["jdbc_url"]
	var err error
	if w.JDBCURL, err = l.guardURL(raw); err != nil {
		return err
	}
	if !strings.HasPrefix(w.JDBCURL, "jdbc:databricks://") {
		return l.bad(raw, "must start with jdbc:databricks://")
	}
	if err := l.databricksURL(raw, w); err != nil {
		return err
	}
	catalog, schema := parts["catalog"].text, parts["schema"].text
	w.JDBCURL += ";ConnCatalog=" + catalog + ";ConnSchema=" + schema
	w.Params["conncatalog"], w.Params["connschema"] = catalog, schema
	w.Catalog, w.Database = catalog, catalog
	return nil
}

// snowflakeFields builds a Snowflake URL from account, database, schema,
// warehouse and role.
func (l *loader) snowflakeFields(parts map[string]value, w *Warehouse) error {
	v := parts["account"]
	if !snowflakeAccount.MatchString(v.text) {
		return l.bad(v, "must be an account identifier, such as myorg-myaccount, not a URL; got '%s'", v.text)
	}
	const suffix = ".snowflakecomputing.com"
	w.Account = v.text
	if strings.HasSuffix(strings.ToLower(w.Account), suffix) {
		w.Account = w.Account[:len(w.Account)-len(suffix)]
	}
	w.Host, w.Port = w.Account+".snowflakecomputing.com", 443
	w.Database, w.Catalog = parts["database"].text, parts["database"].text
	w.SnowflakeWarehouse, w.Role = parts["warehouse"].text, parts["role"].text
	q := url.Values{}
	q.Set("db", w.Database)
	q.Set("schema", parts["schema"].text)
	q.Set("warehouse", w.SnowflakeWarehouse)
	q.Set("role", w.Role)
	w.Params = map[string]string{"db": w.Database, "schema": parts["schema"].text, "warehouse": w.SnowflakeWarehouse, "role": w.Role}
	w.JDBCURL = "jdbc:snowflake://" + w.Host + "/?" + q.Encode()
	return nil
}

// DSN returns a Postgres warehouse's connection string without the password:
// postgres://user@host:port/database?settings. It is "" for other dialects.
func (w *Warehouse) DSN() string {
	if w.Dialect != DialectPostgres {
		return ""
	}
	return postgresDSN(w.User, w.Endpoint)
}

// RedactedURL returns the jdbc_url for logs, without credential-like
// settings.
func (w *Warehouse) RedactedURL() string { return redactURL(w.JDBCURL) }
