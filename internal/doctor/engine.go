package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/migrate"
)

// engineDB checks the Engine DB: secret, auth mode, connection, kind, file
// access or privileges, and (outside setup) tables and migrations.
func (d *doctor) engineDB(ctx context.Context) {
	e := d.cfg.Engine
	if !d.secretCheck("Engine DB secret", e.SecretVar) {
		return
	}
	if !verifiedModes[e.AuthMode] {
		d.add(Warn, "Engine DB auth", "auth_mode %s has not been verified against a live service", e.AuthMode)
	}
	if !d.connect(ctx) {
		return
	}
	if d.db.Kind() == engine.SQLite {
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
		d.add(Fail, "Engine DB migrations", "%v", err)
	case len(st.Pending) > 0:
		labels := make([]string, len(st.Pending))
		for i, f := range st.Pending {
			labels[i] = f.Label()
		}
		d.add(Fail, "Engine DB migrations", "%d pending: %s; run `etl-craft migrate`%s", len(st.Pending), strings.Join(labels, ", "), from)
	default:
		d.add(OK, "Engine DB migrations", "up to date%s", from)
	}
}

// connect opens the Engine DB. A SQLite file that does not exist yet is not
// created: setup creates it once every check passes.
func (d *doctor) connect(ctx context.Context) bool {
	o := d.opts.Engine
	if o.Kind == engine.SQLite {
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
	if o.Kind == engine.SQLite {
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
// the Engine DB tables that reach PUBLIC or an ordinary login other than the
// table's owner and the engine's own login, directly or through a granted
// role. The holder of the grant is reported, not its members.
const privilegeQuery = `
SELECT c.relname, CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE r.rolname END, a.privilege_type
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN LATERAL aclexplode(c.relacl) a
LEFT JOIN pg_roles r ON r.oid = a.grantee
WHERE n.nspname = current_schema()
  AND c.relkind IN ('r', 'p')
  AND (upper(c.relname) LIKE 'CFG\_%' OR upper(c.relname) LIKE 'AUD\_%')
  AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
  AND a.grantee <> c.relowner
  AND (a.grantee = 0 OR (NOT r.rolsuper AND EXISTS (
        SELECT 1 FROM pg_roles l
        WHERE l.rolcanlogin AND NOT l.rolsuper AND l.oid <> c.relowner AND l.rolname <> current_user
          AND pg_has_role(l.oid, a.grantee, 'USAGE'))))
ORDER BY 2, 1, 3`

// privileges reports extra write grants on PostgreSQL with the exact REVOKE
// that removes each.
func (d *doctor) privileges(ctx context.Context) {
	rows, err := d.db.QueryContext(ctx, privilegeQuery)
	if err != nil {
		d.add(Fail, "Engine DB privileges", "could not read the grants of the Engine DB tables: %v", err)
		return
	}
	defer rows.Close()
	type key struct{ table, holder string }
	grants := map[key][]string{}
	for rows.Next() {
		var k key
		var priv string
		if err := rows.Scan(&k.table, &k.holder, &priv); err != nil {
			d.add(Fail, "Engine DB privileges", "could not read the grants: %v", err)
			return
		}
		grants[k] = append(grants[k], priv)
	}
	if len(grants) == 0 {
		d.add(OK, "Engine DB privileges", "no other login or PUBLIC can write the Engine DB tables")
		return
	}
	var revokes []string
	for k, privs := range grants {
		holder := "PUBLIC"
		if k.holder != "PUBLIC" {
			holder = engine.QuoteIdent(k.holder)
		}
		revokes = append(revokes, fmt.Sprintf("REVOKE %s ON %s.%s FROM %s;", strings.Join(privs, ", "),
			engine.QuoteIdent(d.db.Schema()), engine.QuoteIdent(k.table), holder))
	}
	sort.Strings(revokes)
	d.add(Fail, "Engine DB privileges", "%d grant(s) let other logins write the Engine DB tables, bypassing the engine's role: %s",
		len(revokes), strings.Join(revokes, " "))
}
