package config

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/authmode"
)

// connectionKeys are the fields of an Engine or Warehouse profile.
var connectionKeys = []string{
	"jdbc_url", "schema", "auth_mode", "user", "secret",
	"key_file", "cert_file", "client_id", "token_url", "scope", "issuer", "region", "role_arn",
}

// engineNames maps each Engine.Name spelling, lower case, to its kind.
var engineNames = map[string]string{"postgres": EnginePostgres, "postgresql": EnginePostgres, "sqlite": EngineSQLite}

// engine reads the Engine section.
func (l *loader) engine(cfg *Config, top *mapping) error {
	s, err := l.selectProfile(top, "Engine")
	if err != nil {
		return err
	}
	f := s.fields
	if s.blocks == 0 {
		return l.fail(f.line, "Engine", "needs at least one profile block (dev, prod, ...) holding jdbc_url and schema (see %s)", ExamplePath)
	}
	if err := f.unknown(append([]string{"Name", "busy_timeout_seconds"}, connectionKeys...)); err != nil {
		return err
	}
	e := Engine{Profile: s.profile}
	if e.BusyTimeoutSeconds, err = f.number("busy_timeout_seconds", DefaultBusyTimeoutSeconds, 1, MaxBusyTimeoutSeconds); err != nil {
		return err
	}
	raw, err := f.required("jdbc_url")
	if err != nil {
		return err
	}
	if e.JDBCURL, err = l.guardURL(raw); err != nil {
		return err
	}
	lower := strings.ToLower(e.JDBCURL)
	switch {
	case strings.HasPrefix(lower, "jdbc:sqlite:"):
		e.Kind, e.Name = EngineSQLite, "SQLite"
	case strings.HasPrefix(lower, "jdbc:postgresql:"):
		e.Kind, e.Name = EnginePostgres, "PostgreSQL"
	default:
		return l.bad(raw, "'%s' is not a supported Engine DB URL; use jdbc:postgresql://host[:port]/database "+
			"(recommended for production) or jdbc:sqlite:<path>", redactURL(e.JDBCURL))
	}
	name, err := f.get("Name")
	if err != nil {
		return err
	}
	if name.set && engineNames[strings.ToLower(name.text)] != e.Kind {
		if _, known := engineNames[strings.ToLower(name.text)]; !known {
			return l.bad(name, "must be Postgres, PostgreSQL or SQLite; got '%s'", name.text)
		}
		return l.bad(name, "is '%s', but jdbc_url is a %s URL", name.text, e.Name)
	}
	if e.Kind == EngineSQLite {
		err = l.sqliteEngine(f, raw, &e)
	} else {
		err = l.postgresEngine(f, raw, &e)
	}
	if err != nil {
		return err
	}
	if e.Schema, err = schema(f); err != nil {
		return err
	}
	if e.Kind == EnginePostgres {
		e.Schema = PostgresName(e.Schema)
	}
	cfg.Engine = e
	return nil
}

// sqliteEngine reads a SQLite Engine DB profile: a file, resolved beside the
// config, and auth_mode none.
func (l *loader) sqliteEngine(f *fields, raw value, e *Engine) error {
	p := strings.TrimSpace(e.JDBCURL[len("jdbc:sqlite:"):])
	if p == "" || p == ":memory:" {
		return l.fail(raw.line(), raw.path, "names an in-memory SQLite database, which forgets everything when the "+
			"command ends; name a file, such as jdbc:sqlite:etl-craft-engine.db")
	}
	e.SQLitePath = l.abs(p)
	e.JDBCURL = "jdbc:sqlite:" + e.SQLitePath
	mode, err := f.get("auth_mode")
	if err != nil {
		return err
	}
	if mode.set && !strings.EqualFold(mode.text, "none") {
		return l.bad(mode, "auth_mode must be 'none' for a SQLite Engine DB (a file has no login); got '%s'", mode.text)
	}
	e.AuthMode = "none"
	return nil
}

// postgresEngine reads a PostgreSQL Engine DB profile.
func (l *loader) postgresEngine(f *fields, raw value, e *Engine) error {
	u, ok := parseNetworkURL(e.JDBCURL, 5432)
	if !ok || u.scheme != "postgresql" || u.path == "" || strings.Contains(u.path, "/") {
		return l.bad(raw, "'%s' is not a PostgreSQL URL of the form jdbc:postgresql://host[:port]/database[?settings]",
			redactURL(e.JDBCURL))
	}
	e.Host, e.Port, e.Database, e.Params = u.host, u.port, u.path, paramMap(u.query)
	var err error
	e.Auth, err = f.authOf(authmode.Of(EnginePostgres), "")
	return err
}

// authOf reads a profile's auth_mode, one of the modes a profile of the
// kind may name (def when absent; "" makes it required), and the fields
// that mode needs.
func (f *fields) authOf(kind authmode.Kind, def string) (Auth, error) {
	mode, err := f.choice("auth_mode", def, kind.Profile()...)
	if err != nil {
		return Auth{}, err
	}
	return f.auth(mode, kind.Needs(mode), "secret")
}

// schema reads a profile's required schema: a plain identifier.
func schema(f *fields) (string, error) {
	v, err := f.required("schema")
	if err != nil {
		return "", err
	}
	if !plainIdentifier.MatchString(v.text) {
		return "", f.l.bad(v, "must be a plain identifier (letters, digits and underscores, not starting with a digit); got '%s'", v.text)
	}
	return v.text, nil
}

// PostgresName returns the name PostgreSQL gives a plain identifier written
// unquoted, as every configured name is: folded to lower case, so schema
// ETL_CRAFT is the schema etl_craft. Whatever checks, creates or uses a
// configured PostgreSQL name uses this one.
func PostgresName(ident string) string { return strings.ToLower(ident) }

// DSN returns the PostgreSQL connection string without the password:
// postgres://user@host:port/database?settings. It is "" for SQLite.
func (e *Engine) DSN() string {
	if e.Kind != EnginePostgres {
		return ""
	}
	return postgresDSN(e.User, e.Endpoint)
}

// postgresDSN builds postgres://user@host:port/database?settings.
func postgresDSN(user string, ep Endpoint) string {
	u := url.URL{Scheme: "postgres", Host: ep.Host + ":" + strconv.Itoa(ep.Port), Path: "/" + ep.Database}
	if user != "" {
		u.User = url.User(user)
	}
	q := url.Values{}
	for k, v := range ep.Params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// RedactedURL returns the jdbc_url for logs, without credential-like query
// settings.
func (e *Engine) RedactedURL() string { return redactURL(e.JDBCURL) }
