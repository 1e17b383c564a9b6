package warehouse

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// postgresURL is the connection URL of a PostgreSQL warehouse, without any
// secret: the password is given at each connect.
func postgresURL(opts Options) string {
	port := opts.Port
	if port == 0 {
		port = 5432
	}
	q := url.Values{}
	for k, v := range opts.Params {
		q.Set(k, v)
	}
	u := url.URL{
		Scheme:   "postgres",
		Host:     net.JoinHostPort(opts.Host, strconv.Itoa(port)),
		Path:     "/" + opts.Database,
		RawQuery: q.Encode(),
	}
	if opts.User != "" {
		u.User = url.User(opts.User)
	}
	return u.String()
}

func openPostgres(d Dialect, opts Options) (Warehouse, error) {
	if err := required(Postgres, [2]string{"a host", opts.Host}, [2]string{"a database", opts.Database}); err != nil {
		return nil, err
	}
	dsn := postgresURL(opts)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "the PostgreSQL warehouse address %s is invalid", dsn)
	}
	cfg.RuntimeParams["timezone"] = "UTC"
	cfg.ConnectTimeout = opts.ConnectTimeout
	before := func(_ context.Context, c *pgx.ConnConfig) error {
		pw, err := secretOf(opts)
		c.Password = pw
		return err
	}
	catalog := opts.Catalog
	if catalog == "" {
		catalog = opts.Database
	}
	return &sqlWarehouse{
		Dialect: d,
		db:      stdlib.OpenDB(*cfg, stdlib.OptionBeforeConnect(before)),
		catalog: catalog,
		desc:    dsn,
		bulk:    postgresCopy,
	}, nil
}

// postgresCopy loads rows with COPY … FROM STDIN (pgx CopyFrom) on the
// transaction's own connection, so they commit or roll back with it.
func postgresCopy(ctx context.Context, tx *sqlTx, t Table, cols []Column, rows Rows) (int64, error) {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	next, stop := pull(cols, rows)
	defer stop()
	var loaded int64
	err := tx.conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the PostgreSQL driver connection is a %T", dc)
		}
		src := pgx.CopyFromFunc(func() ([]any, error) {
			row, err := next()
			if row == nil || err != nil {
				return nil, err
			}
			for i, v := range row {
				row[i] = postgresValue(v)
			}
			return row, nil
		})
		n, err := sc.Conn().CopyFrom(ctx, pgx.Identifier{tx.w.Fold(t.Schema), t.Name}, names, src)
		loaded = n
		return err
	})
	return loaded, err
}

// postgresValue gives COPY a decimal as an exact numeric; the other
// canonical values pgx encodes as they are.
func postgresValue(v any) any {
	if d, ok := v.(decimal); ok {
		return pgtype.Numeric{Int: d.unscaled, Exp: -DecimalScale, Valid: true}
	}
	return v
}
