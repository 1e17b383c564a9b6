package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/etl-craft/etl-craft/internal/authmode"
	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/mail"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// singleWriterWait bounds how long the probe of a single-writer warehouse
// waits for the writer running now.
const singleWriterWait = 30 * time.Second

func (d *doctor) warehouse(ctx context.Context) {
	w := d.cfg.Warehouse
	if w == nil || d.opts.Warehouse == nil {
		d.add(OK, "Warehouse", "no Warehouse section: only SQL and BUSINESS_RULES tasks need one")
		return
	}
	o := *d.opts.Warehouse
	if !d.secretCheck("Warehouse secret", w.SecretVar) {
		return
	}
	dialect, err := warehouse.NewDialect(o.Kind, o.TableFormat, warehouse.Storage{})
	if err != nil {
		d.add(Fail, "Warehouse", "%v", err)
		return
	}
	if !authmode.Of(string(o.Kind)).Verified(w.AuthMode) {
		d.add(Warn, "Warehouse auth", "auth_mode %s has not been verified against a live %s", w.AuthMode, w.Name)
	}
	if dialect.Capabilities().SingleWriter {
		if o.Path == "" {
			d.add(Fail, "Warehouse", "an in-memory DuckDB warehouse (jdbc:duckdb: without a file) keeps nothing between runs: name a file, such as jdbc:duckdb:warehouse.duckdb")
			return
		}
		d.add(OK, "Warehouse writers", "a DuckDB file has one writer at a time: tasks and clones queue on the Engine DB's warehouse lock")
		if _, err := os.Stat(o.Path); errors.Is(err, fs.ErrNotExist) {
			if err := canCreateIn(filepath.Dir(o.Path)); err != nil {
				d.add(Fail, "Warehouse connection", "DuckDB, %s does not exist yet, and the first run cannot create it: %v", o.Path, err)
				return
			}
			if w.Schema == "main" {
				d.add(OK, "Warehouse connection", "DuckDB, %s does not exist yet: the first run creates it, with its schema main", o.Path)
			} else {
				d.add(Fail, "Warehouse connection", "the Warehouse schema %s.%s does not exist (%s does not exist yet); create it first — etl-craft does not create warehouse schemas",
					w.Catalog, w.Schema, o.Path)
			}
			return
		}
		if d.db != nil {
			held, err := lock.Acquire(ctx, d.db, lock.Warehouse, singleWriterWait)
			if err != nil {
				d.add(Fail, "Warehouse connection", "%v", err)
				return
			}
			defer held.Release()
		}
	}
	d.probeWarehouse(ctx, o, w)
}

// canCreateIn checks that a file can be created in the folder: it exists,
// and a file made there (and removed at once) is allowed.
func canCreateIn(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("its folder %s does not exist; create it, or name a file in a folder that exists", dir)
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%s is not a folder", dir)
	}
	f, err := os.CreateTemp(dir, ".etl-craft-doctor-*")
	if err != nil {
		return fmt.Errorf("no file can be created in its folder %s (%v); give the deployment account write access to it", dir, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

func (d *doctor) probeWarehouse(ctx context.Context, o warehouse.Options, w *config.Warehouse) {
	wh, err := warehouse.Open(ctx, o)
	if err != nil {
		d.add(Fail, "Warehouse connection", "%v", err)
		return
	}
	defer wh.Close()
	if err := wh.Ping(ctx); err != nil {
		d.add(Fail, "Warehouse connection", "%s does not answer: %v", w.Name, err)
		return
	}
	ok, err := wh.SchemaExists(ctx, w.Schema)
	switch {
	case err != nil:
		d.add(Fail, "Warehouse connection", "could not look for the schema %s: %v", w.Schema, err)
	case !ok:
		d.add(Fail, "Warehouse connection", "the Warehouse schema %s.%s does not exist; create it first — etl-craft does not create warehouse schemas",
			wh.Catalog(), w.Schema)
	default:
		d.add(OK, "Warehouse connection", "%s, schema %s exists", w.Name, w.Schema)
	}
	if wh.Capabilities().CatalogCheck {
		if err := warehouse.CheckTrinoCatalog(ctx, wh); err != nil {
			d.add(Fail, "Warehouse catalog", "%v", err)
		} else {
			d.add(OK, "Warehouse catalog", "an Iceberg catalog")
		}
	}
}

// email checks the Email settings: sendmail can be run, or the SMTP relay
// takes a login (connection, EHLO, STARTTLS, AUTH) without a message being
// sent.
func (d *doctor) email(ctx context.Context) {
	m := d.cfg.Orchestration.Email
	if m == nil {
		d.add(OK, "Email", "no Email settings: only EMAIL_ALERT tasks and SLA emails need them")
		return
	}
	var secret func() (string, error)
	if m.SecretVar != "" {
		secret = func() (string, error) { return d.cfg.Secret(m.SecretVar) }
	}
	sender, err := mail.New(m, secret)
	if m.Transport == mail.TransportSendmail {
		if err == nil {
			err = sender.Check(ctx)
		}
		if err != nil {
			d.add(Fail, "Email", "%v", err)
		} else {
			d.add(OK, "Email", "sendmail at %s, from %s", m.SendmailPath, m.FromAddress)
		}
		return
	}
	secretOK := d.secretCheck("Email secret", m.SecretVar)
	if m.AuthMode == mail.AuthOAuth {
		d.add(Warn, "Email auth", "auth_mode oauth (XOAUTH2) has not been verified against a live relay")
	}
	if err != nil {
		d.add(Fail, "Email TLS", "%v", err)
		return
	}
	ca := "system trust"
	if m.CAFile != "" {
		ca = m.CAFile
	}
	d.add(OK, "Email TLS", "tls_mode=%s, ca_file=%s", m.TLSMode, ca)
	if !secretOK {
		return // the login cannot be tried without its secret
	}
	const relayWait = 30 * time.Second // a relay that takes longer is not answering
	ctx, cancel := context.WithTimeout(ctx, relayWait)
	defer cancel()
	if err := sender.Check(ctx); err != nil {
		d.add(Fail, "Email relay", "%v", err)
		return
	}
	d.add(OK, "Email relay", "%s:%d answers", m.Host, m.Port)
}

// cloning checks the Cloning settings, and asks the two servers whether
// the warehouse schema is the Engine DB's own when it may be
// (clone.MayBeEngineDB): the configuration can name one server in many ways.
func (d *doctor) cloning(ctx context.Context) {
	c := d.cfg.Cloning
	if !c.Effective() {
		return
	}
	if err := clone.Problem(d.cfg, d.opts.Warehouse); err != nil {
		d.add(Fail, "Cloning", "%v", err)
		return
	}
	schema := d.cfg.Warehouse.Schema
	if o := d.opts.Warehouse; d.db != nil && clone.MayBeEngineDB(d.db, o.Kind) {
		if err := refuseEngineSchema(ctx, d.db, *o, schema); err != nil {
			d.add(Fail, "Cloning", "%v", err)
			return
		}
	}
	d.add(OK, "Cloning", "scope %s: after each run, into schema %s", c.Scope, schema)
}

// refuseEngineSchema opens the warehouse and returns
// clone.RefuseEngineSchema's answer, or why it could not ask.
func refuseEngineSchema(ctx context.Context, db *engine.DB, o warehouse.Options, schema string) error {
	wh, err := warehouse.Open(ctx, o)
	if err != nil {
		return fmt.Errorf("could not open the warehouse to tell whether it is the Engine DB: %w", err)
	}
	defer wh.Close()
	return clone.RefuseEngineSchema(ctx, db, o.Kind, wh, schema)
}
