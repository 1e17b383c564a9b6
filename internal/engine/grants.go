package engine

import (
	"fmt"
	"path/filepath"
	"strings"
)

// The roles Grants suggests for a PostgreSQL Engine DB.
const (
	// OwnerRole owns the Engine tables and runs DDL: init-db and migrate.
	OwnerRole = "etl_craft_owner"
	// EngineRole is the login etl-craft runs with: row reads and writes only.
	EngineRole = "etl_craft_engine"
	// ReaderRole reads the Engine tables: people and BI tools.
	ReaderRole = "etl_craft_reader"
)

// Grants returns the SQL that `etl-craft setup --print-grants` prints for a
// PostgreSQL Engine DB in schema: the owner, engine and reader roles, the
// transfer of the schema's tables, sequences and functions to the owner, the
// removal of every other write grant, and the default privileges of tables
// the owner creates later. It executes nothing; a superuser runs it once the
// schema holds the Engine tables, and may run it again.
func Grants(schema string) string {
	s, lit := quoteIdent(schema), quoteLiteral(schema)
	// Each DO body is dollar-quoted with a tag the schema name cannot end early.
	tag := "$grants$"
	for n := 1; strings.Contains(schema, tag); n++ {
		tag = fmt.Sprintf("$grants%d$", n)
	}
	r := strings.NewReplacer("{S}", s, "{L}", lit, "{TAG}", tag,
		"{OWNER}", OwnerRole, "{ENGINE}", EngineRole, "{READER}", ReaderRole)
	return r.Replace(grantsTemplate)
}

// grantsTemplate is the text of Grants: {S} is the quoted schema, {L} the
// schema as a string literal, {TAG} the dollar-quote tag of DO bodies.
const grantsTemplate = `-- Suggested PostgreSQL privileges for the etl-craft Engine DB in schema {S}.
-- Printed by etl-craft setup --print-grants; nothing has been executed. Review
-- it, then run it as a superuser in the Engine DB's database, after init-db:
--     etl-craft setup --print-grants | psql -v ON_ERROR_STOP=1 -d <database>
-- Running it again is harmless.
--
-- The Engine DB's triggers refuse any write to a CFG_ or AUD_ table from a
-- connection that has not set etl-craft's transaction-local actor. That stops
-- accidents; it does not stop a superuser, a table owner, or anyone who sets
-- those settings or drops the triggers. Privileges are the boundary:
--   {OWNER}   owns the tables; runs init-db and migrate (DDL). No login.
--   {ENGINE}  the login etl-craft runs with: reads and writes rows.
--                      No DDL, no TRUNCATE.
--   {READER}  people and BI tools: read only. No login; grant it to logins.

-- 1. The roles, created when missing.
DO {TAG}
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{OWNER}') THEN
        CREATE ROLE {OWNER} NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ENGINE}') THEN
        CREATE ROLE {ENGINE} LOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READER}') THEN
        CREATE ROLE {READER} NOLOGIN;
    END IF;
END
{TAG};
-- Then, outside this script:
--   ALTER ROLE {ENGINE} PASSWORD '...';   -- the password etl-craft's Engine
--                                                 -- section connects with
--   GRANT {READER} TO <person_login>;
--   GRANT {OWNER} TO <admin_login>;
--   ALTER ROLE <admin_login> SET role = '{OWNER}';
-- The last two let the login that runs init-db and migrate act as the owner,
-- so the tables and functions migrations create belong to it.

-- 2. The owner role owns the schema's tables, views, sequences and trigger
-- functions, so only it can change their definitions. (A sequence behind an
-- identity or serial column follows its table.)
GRANT USAGE, CREATE ON SCHEMA {S} TO {OWNER};
DO {TAG}
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT c.relname,
               CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW'
                              WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'TABLE' END AS kind
          FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = {L}
           AND c.relkind IN ('r', 'p', 'v', 'm', 'S')
           AND NOT (c.relkind = 'S' AND EXISTS (
                   SELECT 1 FROM pg_depend d
                    WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i')))
    LOOP
        EXECUTE format('ALTER %s %I.%I OWNER TO {OWNER}', r.kind, {L}, r.relname);
    END LOOP;
    FOR r IN
        SELECT p.oid::regprocedure AS routine
          FROM pg_proc p
          JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = {L}
    LOOP
        EXECUTE format('ALTER ROUTINE %s OWNER TO {OWNER}', r.routine);
    END LOOP;
END
{TAG};

-- 3. Nobody else writes: take every privilege from PUBLIC, and INSERT,
-- UPDATE, DELETE and TRUNCATE, on a table or on some of its columns, from
-- every role but the owner and the engine. (Revoking a privilege on a table
-- also revokes it on every column; etl-craft doctor reports any such grant
-- that comes back.)
REVOKE CREATE ON SCHEMA {S} FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA {S} FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA {S} FROM PUBLIC;
DO {TAG}
DECLARE
    r record;
BEGIN
    FOR r IN
        SELECT DISTINCT c.relname, g.rolname, a.privilege_type
          FROM pg_class c
          JOIN pg_namespace n ON n.oid = c.relnamespace
          CROSS JOIN LATERAL (SELECT c.relacl
                              UNION ALL
                              SELECT t.attacl FROM pg_attribute t
                               WHERE t.attrelid = c.oid AND t.attnum > 0) acl (list)
          CROSS JOIN LATERAL aclexplode(acl.list) a
          JOIN pg_roles g ON g.oid = a.grantee
         WHERE n.nspname = {L}
           AND c.relkind IN ('r', 'p')
           AND a.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
           AND g.rolname NOT IN ('{OWNER}', '{ENGINE}')
    LOOP
        EXECUTE format('REVOKE %s ON %I.%I FROM %I', r.privilege_type, {L}, r.relname, r.rolname);
    END LOOP;
END
{TAG};

-- 4. The engine reads and writes rows and draws ids; readers read.
GRANT USAGE ON SCHEMA {S} TO {ENGINE}, {READER};
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {S} TO {ENGINE};
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {S} TO {ENGINE};
GRANT SELECT ON ALL TABLES IN SCHEMA {S} TO {READER};

-- 5. Tables and sequences the owner creates later (ENGINE and PROJECT
-- migrations) get the same grants. Default privileges belong to the role
-- that creates the objects, hence FOR ROLE {OWNER}.
ALTER DEFAULT PRIVILEGES FOR ROLE {OWNER} IN SCHEMA {S}
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO {ENGINE};
ALTER DEFAULT PRIVILEGES FOR ROLE {OWNER} IN SCHEMA {S}
    GRANT USAGE, SELECT ON SEQUENCES TO {ENGINE};
ALTER DEFAULT PRIVILEGES FOR ROLE {OWNER} IN SCHEMA {S}
    GRANT SELECT ON TABLES TO {READER};
`

// SQLiteFileAdvice returns what `etl-craft setup --print-grants` prints for
// a SQLite Engine DB at path: SQLite has no roles, so file permissions are
// the boundary, with the commands that restrict the file and its folder.
func SQLiteFileAdvice(path string) string {
	dir := filepath.Dir(path)
	return strings.NewReplacer("{PATH}", shellQuote(path), "{DIR}", shellQuote(dir),
		"{WAL}", shellQuote(path+"-wal"), "{SHM}", shellQuote(path+"-shm")).Replace(sqliteAdviceTemplate)
}

const sqliteAdviceTemplate = `SQLite has no roles or grants: file permissions are the boundary of the
Engine DB {PATH}.

etl-craft's triggers refuse writes to CFG_ and AUD_ tables from connections
that are not etl-craft's own (the sqlite3 shell, a BI tool), but anyone who
can write the file or its folder can replace the file, or its triggers, and
bypass them. Restrict both to the account that runs etl-craft:

    chmod 700 {DIR}
    chmod 600 {PATH}

While the database is open SQLite keeps two more files beside it, with the
same permissions as the file:
    {WAL}
    {SHM}

At the least, take write access away from group and others:

    chmod go-w {PATH}

etl-craft doctor warns when the file is writable by group or others.
`

// shellQuote quotes a word for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// AccessAdvice is the access advice for the Engine DB the options open:
// the suggested PostgreSQL roles and grants (Grants), or the SQLite file's
// permission advice (SQLiteFileAdvice).
func AccessAdvice(o Options) string {
	if o.Kind == SQLite {
		return SQLiteFileAdvice(o.Path)
	}
	return Grants(o.Schema)
}
