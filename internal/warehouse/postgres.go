package warehouse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pgauth"
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
	cfg.BuildContextWatcherHandler = cancelOnServer
	if opts.ClientCert != nil {
		if err := pgauth.PresentCertificate(&cfg.Config, opts.ClientCert); err != nil {
			return nil, err
		}
	}
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
		guard:   postgresGuard,
	}, nil
}

// cancelGrace is how long a cancelled statement waits for the server to
// confirm the cancel before its connection is dropped.
const cancelGrace = 5 * time.Second

// cancelOnServer makes a cancelled context stop the statement on the
// server: the cancel request is sent at once, and the call returns only
// after it went out (pgx's default only drops the connection, and sends the
// request from a goroutine that a process ending right then never runs, so
// the server went on with the statement).
func cancelOnServer(c *pgconn.PgConn) ctxwatch.Handler {
	return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: cancelGrace}
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
	err := withPgx(tx, func(conn *pgx.Conn) error {
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
		n, err := conn.CopyFrom(ctx, pgx.Identifier{tx.w.Fold(t.Schema), t.Name}, names, src)
		loaded = n
		return err
	})
	return loaded, err
}

// withPgx runs fn with the pgx connection under the transaction's own
// database/sql connection.
func withPgx(tx *sqlTx, fn func(conn *pgx.Conn) error) error {
	return tx.conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("the PostgreSQL driver connection is a %T", dc)
		}
		return fn(sc.Conn())
	})
}

// TextCopier is the load a PostgreSQL warehouse transaction has beside
// BulkLoad: rows already in PostgreSQL's COPY text format, such as another
// PostgreSQL server's COPY … TO STDOUT (FORMAT text) writes them, streamed
// into COPY … FROM STDIN on the transaction's connection as they are,
// neither decoded nor encoded on the way. The server parses each field as
// its column's type, exactly as it parses a typed value's text.
type TextCopier interface {
	// CopyText appends the rows r holds, in COPY text format with UTF-8
	// text, to the existing table t, filling cols (the other columns get
	// their defaults), and returns how many rows the server loaded. They
	// commit or roll back with the transaction. An error reading r aborts
	// the COPY and is returned.
	CopyText(ctx context.Context, t Table, cols []Column, r io.Reader) (int64, error)
}

// TextCopierOf returns tx's TextCopier when it has one: only the
// transactions of a PostgreSQL warehouse do.
func TextCopierOf(tx Tx) (TextCopier, bool) {
	t, ok := tx.(*sqlTx)
	if !ok {
		return nil, false
	}
	if _, ok := t.w.Dialect.(postgresDialect); !ok {
		return nil, false
	}
	return postgresTextCopy{tx: t}, true
}

// postgresTextCopy is a PostgreSQL transaction's TextCopier.
type postgresTextCopy struct{ tx *sqlTx }

func (c postgresTextCopy) CopyText(ctx context.Context, t Table, cols []Column, r io.Reader) (int64, error) {
	stmt, err := copyTextStatement(c.tx.w, t, cols)
	if err != nil {
		return 0, err
	}
	var loaded int64
	err = withPgx(c.tx, func(conn *pgx.Conn) error {
		tag, err := conn.PgConn().CopyFrom(ctx, r, stmt)
		loaded = tag.RowsAffected()
		return err
	})
	return loaded, err
}

// copyTextStatement returns the COPY … FROM STDIN statement that loads COPY
// text format rows into cols of t, names quoted by the dialect (the schema
// folded as a configured name is, the table and columns as given).
func copyTextStatement(d Dialect, t Table, cols []Column) (string, error) {
	if len(cols) == 0 {
		return "", errors.New("a bulk load needs at least one column")
	}
	var b strings.Builder
	b.WriteString("COPY ")
	b.WriteString(quoteFolded(d, t.Schema) + "." + d.Quote(t.Name))
	b.WriteString(" (")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Quote(c.Name))
	}
	b.WriteString(") FROM STDIN (FORMAT text, ENCODING 'UTF8')")
	return b.String(), nil
}

// postgresValue gives COPY a decimal as an exact numeric; the other
// canonical values pgx encodes as they are.
func postgresValue(v any) any {
	if d, ok := v.(decimal); ok {
		return pgtype.Numeric{Int: d.unscaled, Exp: -DecimalScale, Valid: true}
	}
	return v
}
