package warehouse

import (
	"context"
	"crypto/rsa"
	"database/sql"
	"database/sql/driver"
	"strings"

	"github.com/snowflakedb/gosnowflake"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pemkey"

	// Keep the driver from writing and loading its native library at start-up.
	_ "github.com/etl-craft/etl-craft/internal/warehouse/snowflakeenv"
)

// SnowflakeAccount returns the account identifier of a configured account,
// dropping a .snowflakecomputing.com suffix: the account is a name, not a URL.
func SnowflakeAccount(account string) string {
	return strings.TrimSuffix(strings.ToLower(account), ".snowflakecomputing.com")
}

// snowflakeConfig is the connector configuration of one connection. A
// password logs in as the user; a token is a programmatic access token; an
// oauth token is an OAuth access token; a key_file login signs a JWT with
// the user's RSA key, the secret being the key's passphrase; an sts login is
// AWS workload identity federation.
// Every session sets TIMEZONE to UTC. Host and port, when set, replace the
// account's own address (a proxy or private link).
func snowflakeConfig(opts Options, secret string) (gosnowflake.Config, error) {
	utc := "UTC"
	cfg := gosnowflake.Config{
		Account:     SnowflakeAccount(opts.Account),
		User:        opts.User,
		Database:    opts.Catalog,
		Schema:      opts.Schema,
		Warehouse:   opts.Warehouse,
		Role:        opts.Role,
		Application: "etl-craft",
		Params:      map[string]*string{"TIMEZONE": &utc},
		Host:        opts.Host,
		Port:        opts.Port,
	}
	if opts.HTTPClient != nil {
		cfg.Transporter = opts.HTTPClient.Transport
	}
	switch opts.AuthMode {
	case AuthToken:
		cfg.Authenticator = gosnowflake.AuthTypePat
		cfg.Token = secret
	case AuthOAuth:
		cfg.Authenticator = gosnowflake.AuthTypeOAuth
		cfg.Token = secret
	case AuthSTS:
		// Workload identity federation: a signed STS GetCallerIdentity
		// request made with the environment's AWS credentials proves who
		// connects, after assuming RoleARN when it is set.
		cfg.Authenticator = gosnowflake.AuthTypeWorkloadIdentityFederation
		cfg.WorkloadIdentityProvider = "AWS"
		if opts.RoleARN != "" {
			cfg.WorkloadIdentityImpersonationPath = []string{opts.RoleARN}
		}
	case AuthKeyFile:
		key, err := pemkey.Read(opts.KeyFile, secret)
		if err != nil {
			return cfg, err
		}
		rsaKey, ok := key.(*rsa.PrivateKey)
		if !ok {
			return cfg, exit.Errorf(exit.Configuration, "key_file %s holds a %T; Snowflake key-pair logins need an RSA key", opts.KeyFile, key)
		}
		cfg.Authenticator = gosnowflake.AuthTypeJwt
		cfg.PrivateKey = rsaKey
	default:
		cfg.Authenticator = gosnowflake.AuthTypeSnowflake
		cfg.Password = secret
	}
	return cfg, nil
}

func openSnowflake(d Dialect, opts Options) (Warehouse, error) {
	if opts.Catalog == "" {
		opts.Catalog = opts.Database
	}
	if err := required(Snowflake,
		[2]string{"an account", opts.Account}, [2]string{"a user", opts.User},
		[2]string{"a database (db)", opts.Catalog}, [2]string{"a schema", opts.Schema},
		[2]string{"a warehouse", opts.Warehouse}); err != nil {
		return nil, err
	}
	drv := gosnowflake.SnowflakeDriver{}
	c := secretConnector{opts: opts, drv: drv, connect: func(ctx context.Context, secret string) (driver.Conn, error) {
		cfg, err := snowflakeConfig(opts, secret)
		if err != nil {
			return nil, err
		}
		return gosnowflake.NewConnector(drv, cfg).Connect(ctx)
	}}
	return &sqlWarehouse{
		Dialect: d,
		db:      sql.OpenDB(c),
		catalog: opts.Catalog,
		desc: "snowflake:" + SnowflakeAccount(opts.Account) + ".snowflakecomputing.com/?db=" + opts.Catalog +
			"&schema=" + opts.Schema + "&warehouse=" + opts.Warehouse + "&role=" + opts.Role,
	}, nil
}
