package doctor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/etl-craft/etl-craft/internal/authmode"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/migrate"
)

// engineDB checks the Engine DB: secret, auth mode, connection, kind, file
// access or privileges, and (outside setup) tables and migrations.
func (d *doctor) engineDB(ctx context.Context) {
	e := d.cfg.Engine
	if !d.secretCheck("Engine DB secret", e.SecretVar) {
		return
	}
	if !authmode.Of(e.Kind).Verified(e.AuthMode) {
		d.add(Warn, "Engine DB auth", "auth_mode %s has not been verified against a live service", e.AuthMode)
	}
	if !d.connect(ctx) {
		return
	}
	if !d.db.Capabilities().Server {
		if d.cfg.Orchestration.Mode == config.ModeRemote {
			d.add(Warn, "Engine DB kind", "SQLite in remote mode: every orchestrator worker must run on this machine; use PostgreSQL")
		} else {
			d.add(OK, "Engine DB kind", "SQLite suits one machine; writes serialized; use PostgreSQL in production")
		}
		d.fileAccess(e.SQLitePath)
	} else {
		d.privileges(ctx)
	}
	if d.opts.Setup {
		return
	}
	tables, err := migrate.EngineTables(ctx, d.db)
	if err != nil {
		d.add(Fail, "Engine DB tables", "%v", err)
		return
	}
	if len(tables) == 0 {
		d.add(Fail, "Engine DB tables", "the Engine DB has no etl-craft tables yet: run `etl-craft setup`")
		return
	}
	r := &migrate.Runner{DB: d.db, ProjectDir: d.opts.MigrationsDir}
	st, err := r.Status(ctx)
	from := ""
	if len(st.Releases) > 0 {
		from = "; the ledger comes from " + strings.Join(st.Releases, " and ")
	}
	switch {
	case err != nil:
		d.add(Fail, "Engine DB migrations", "%s", exit.Flagged(err))
	case len(st.Pending) > 0:
		labels := make([]string, len(st.Pending))
		for i, f := range st.Pending {
			labels[i] = f.Label()
		}
		d.add(Fail, "Engine DB migrations", "%d pending: %s; run `etl-craft migrate`%s", len(st.Pending), strings.Join(labels, ", "), from)
	default:
		d.add(OK, "Engine DB migrations", "up to date%s", from)
	}
	for _, msg := range st.Ignored {
		d.add(Warn, "Migrations folder", "%s", msg)
	}
}

// connect opens the Engine DB. A SQLite file that does not exist yet is not
// created: setup creates it once every check passes.
func (d *doctor) connect(ctx context.Context) bool {
	o := d.opts.Engine
	if !o.Kind.Capabilities().Server {
		if _, err := os.Stat(o.Path); errors.Is(err, fs.ErrNotExist) {
			if dir := existingAncestor(filepath.Dir(o.Path)); !writable(dir) {
				d.add(Fail, "Engine DB connection", "the SQLite Engine DB %s cannot be created: %s is not writable", o.Path, dir)
				return false
			}
			d.add(OK, "Engine DB connection", "SQLite, %s does not exist yet: setup creates it", o.Path)
			if !d.opts.Setup {
				d.add(Fail, "Engine DB tables", "the Engine DB has no etl-craft tables yet: run `etl-craft setup`")
			}
			return false
		}
	}
	db, err := engine.Open(ctx, o)
	if err != nil {
		d.add(Fail, "Engine DB connection", "%v", err)
		return false
	}
	d.db = db
	if !o.Kind.Capabilities().Server {
		d.add(OK, "Engine DB connection", "SQLite, %s", o.Path)
	} else {
		d.add(OK, "Engine DB connection", "PostgreSQL, schema %s", db.Schema())
	}
	return true
}

func existingAncestor(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".etl-craft-doctor-*")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}

// fileAccess warns when the SQLite file or its folder is writable by group
// or others: anyone who can replace the file can bypass its guards.
func (d *doctor) fileAccess(path string) {
	var loose []string
	for _, p := range []string{path, filepath.Dir(path)} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o022 != 0 {
			loose = append(loose, fmt.Sprintf("%s (%s)", p, st.Mode().Perm()))
		}
	}
	if len(loose) == 0 {
		d.add(OK, "Engine DB file access", "%s and its folder are writable only by their owner", path)
		return
	}
	d.add(Warn, "Engine DB file access",
		"%s writable by group or others: anyone who can replace the file can bypass its guards; run `chmod go-w %s`",
		strings.Join(loose, " and "), strings.Join(quotePaths(loose), " "))
}

func quotePaths(loose []string) []string {
	out := make([]string, len(loose))
	for i, l := range loose {
		p, _, _ := strings.Cut(l, " (")
		out[i] = "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
	}
	return out
}

// privilegeQuery finds explicit INSERT, UPDATE, DELETE and TRUNCATE grants on
// the Engine DB tables, and column-level INSERT and UPDATE grants on their
// columns (attname is NULL for a table-level grant), that reach PUBLIC or an
// ordinary login other than the table's owner and the engine's own login,
// directly or through a granted role. The holder of the grant is reported,
// not its members.
const privilegeQuery = `
WITH tables AS (
    SELECT c.oid, c.relname, c.relowner, c.relacl
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema()
      AND c.relkind IN ('r', 'p')
      AND (upper(c.relname) LIKE 'CFG\_%' OR upper(c.relname) LIKE 'AUD\_%')
), grants AS (
    SELECT t.relname, t.relowner, NULL::name AS attname, a.grantee, a.privilege_type
    FROM tables t CROSS JOIN LATERAL aclexplode(t.relacl) a
    UNION ALL
    SELECT t.relname, t.relowner, att.attname, a.grantee, a.privilege_type
    FROM tables t
    JOIN pg_attribute att ON att.attrelid = t.oid AND att.attnum > 0 AND NOT att.attisdropped
    CROSS JOIN LATERAL aclexplode(att.attacl) a
)
SELECT g.relname, CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE r.rolname END, g.privilege_type, g.attname
FROM grants g
LEFT JOIN pg_roles r ON r.oid = g.grantee
WHERE g.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
  AND g.grantee <> g.relowner
  AND (g.grantee = 0 OR (NOT r.rolsuper AND EXISTS (
        SELECT 1 FROM pg_roles l
        WHERE l.rolcanlogin AND NOT l.rolsuper AND l.oid <> g.relowner AND l.rolname <> current_user
          AND pg_has_role(l.oid, g.grantee, 'USAGE'))))
ORDER BY 2, 1, 3, 4 NULLS FIRST`

// privileges reports extra write grants on PostgreSQL, on tables and on
// columns, with the exact REVOKE that removes each holder's grants on a table.
func (d *doctor) privileges(ctx context.Context) {
	rows, err := d.db.QueryContext(ctx, privilegeQuery)
	if err != nil {
		d.add(Fail, "Engine DB privileges", "could not read the grants of the Engine DB tables: %v", err)
		return
	}
	defer rows.Close()
	type key struct{ table, holder string }
	var order []key
	grants := map[key]*revoke{}
	for rows.Next() {
		var k key
		var priv string
		var column sql.NullString
		if err := rows.Scan(&k.table, &k.holder, &priv, &column); err != nil {
			d.add(Fail, "Engine DB privileges", "could not read the grants: %v", err)
			return
		}
		if grants[k] == nil {
			grants[k] = &revoke{columns: map[string][]string{}, table: map[string]bool{}}
			order = append(order, k)
		}
		grants[k].add(priv, column)
	}
	if err := rows.Err(); err != nil {
		d.add(Fail, "Engine DB privileges", "could not read the grants: %v", err)
		return
	}
	if len(order) == 0 {
		d.add(OK, "Engine DB privileges", "no other login or PUBLIC can write the Engine DB tables")
		return
	}
	revokes := make([]string, len(order))
	for i, k := range order {
		holder := "PUBLIC"
		if k.holder != "PUBLIC" {
			holder = engine.QuoteIdent(k.holder)
		}
		revokes[i] = fmt.Sprintf("REVOKE %s ON %s.%s FROM %s;", grants[k],
			engine.QuoteIdent(d.db.Schema()), engine.QuoteIdent(k.table), holder)
	}
	d.add(Fail, "Engine DB privileges", "%d grant(s) let other logins write the Engine DB tables, bypassing the engine's role: %s",
		len(revokes), strings.Join(revokes, " "))
}

// revoke is one holder's write privileges on one table: each privilege is
// held on the whole table or on some of its columns.
type revoke struct {
	privs   []string            // each privilege once, in the order found
	table   map[string]bool     // held on the whole table
	columns map[string][]string // the quoted columns it is held on
}

// add records a privilege on the table (column not valid) or on one column.
func (r *revoke) add(priv string, column sql.NullString) {
	if !r.table[priv] && r.columns[priv] == nil {
		r.privs = append(r.privs, priv)
	}
	if column.Valid {
		r.columns[priv] = append(r.columns[priv], engine.QuoteIdent(column.String))
	} else {
		r.table[priv] = true
	}
}

// String is the REVOKE's privilege list, such as `DELETE, UPDATE ("a", "b")`.
// Revoking a table-level privilege also revokes it on every column, so a
// privilege held on the table names no columns.
func (r *revoke) String() string {
	out := make([]string, len(r.privs))
	for i, p := range r.privs {
		out[i] = p
		if !r.table[p] {
			out[i] += " (" + strings.Join(r.columns[p], ", ") + ")"
		}
	}
	return strings.Join(out, ", ")
}
