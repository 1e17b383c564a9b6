package engine

// ChangeLog is the SQL of one dialect for the clone's change log
// (CLONE_CHANGES, kept by triggers) and for proving a table unchanged. Each
// statement runs on one connection inside the read snapshot Begin opens.
type ChangeLog struct {
	// Begin opens the read-only snapshot a table's copy reads in.
	Begin string
	// Mark selects, as text, the snapshot's change mark: the last change
	// sequence on SQLite, the snapshot itself on PostgreSQL.
	Mark string
	// Prune deletes the entries of table $1 that every recorded mirror of
	// it (CLONE_STATE) has copied.
	Prune string
	// Identity selects, as text, the storage identity of a table: its root
	// page on SQLite (a rebuilt table has a new one); on PostgreSQL the
	// server's system identifier, the database, the table's oid and its
	// file node (a rewrite, a truncation or a restore changes one).
	Identity string
	// Since is the condition on CLONE_CHANGES of table $1's changes the
	// snapshot of mark $2 (text, as Mark selects it) did not see.
	Since string
	// IntegerKey reads ROW_KEY as the key of a table whose key is an
	// integer; IntegerRange reads ROW_KEY and LAST_KEY so, the first and
	// last key of a logged range.
	IntegerKey, IntegerRange string
	// LogRange logs that every key of table $1 from $2 to $3 (integers,
	// bound as text) may have changed: what a purge logs per table and
	// batch instead of each key it deleted (see ForPurge).
	LogRange string
	// PrimaryKey selects the names of a table's primary-key columns, and
	// Triggers the names of its clone triggers (trg_clone_*).
	PrimaryKey, Triggers string
	// TableArgs are the arguments of Identity, PrimaryKey and Triggers for
	// a table of the Engine DB.
	TableArgs func(table string) []any
	// InsertsByWatermark: a table whose triggers log no inserts has its
	// new rows found by identity above the mirror's high watermark
	// (SQLite, where change numbers follow commit order). Without it every
	// change is logged with its transaction (PostgreSQL).
	InsertsByWatermark bool
}

// ChangeLog returns the Engine DB's change-log SQL.
func (db *DB) ChangeLog() ChangeLog { return db.d.changeLog(db.Schema()) }

func (sqliteDialect) changeLog(string) ChangeLog {
	return ChangeLog{
		Begin: "BEGIN DEFERRED",
		Mark:  "SELECT CAST(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'CLONE_CHANGES'), 0) AS TEXT)",
		Prune: "DELETE FROM CLONE_CHANGES WHERE TABLE_NAME = $1 AND CHANGE_SEQ <= " +
			"(SELECT MIN(CAST(MARK AS BIGINT)) FROM CLONE_STATE WHERE ENGINE_TABLE = $1)",
		Since:              "TABLE_NAME = $1 AND CHANGE_SEQ > CAST($2 AS INTEGER)",
		IntegerKey:         "ROW_KEY",
		IntegerRange:       "ROW_KEY, LAST_KEY",
		LogRange:           "INSERT INTO CLONE_CHANGES (TABLE_NAME, ROW_KEY, LAST_KEY) VALUES ($1, CAST($2 AS INTEGER), CAST($3 AS INTEGER))",
		Identity:           "SELECT 'rootpage ' || rootpage FROM sqlite_master WHERE type = 'table' AND name = $1",
		PrimaryKey:         "SELECT name FROM pragma_table_info($1) WHERE pk > 0",
		Triggers:           "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = $1 AND name LIKE 'trg_clone_%'",
		TableArgs:          func(table string) []any { return []any{table} },
		InsertsByWatermark: true,
	}
}

func (postgresDialect) changeLog(schema string) ChangeLog {
	const rel = "to_regclass(quote_ident($1) || '.' || quote_ident($2))"
	return ChangeLog{
		Begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
		Mark:  "SELECT CAST(txid_current_snapshot() AS TEXT)",
		Prune: "DELETE FROM CLONE_CHANGES WHERE TABLE_NAME = $1 AND CHANGE_SEQ < " +
			"(SELECT MIN(txid_snapshot_xmin(CAST(MARK AS txid_snapshot))) FROM CLONE_STATE WHERE ENGINE_TABLE = $1)",
		Since: "TABLE_NAME = $1 AND CHANGE_SEQ >= txid_snapshot_xmin(CAST($2 AS txid_snapshot)) " +
			"AND NOT txid_visible_in_snapshot(CHANGE_SEQ, CAST($2 AS txid_snapshot))",
		IntegerKey:   "CAST(ROW_KEY AS BIGINT)",
		IntegerRange: "CAST(ROW_KEY AS BIGINT), CAST(LAST_KEY AS BIGINT)",
		LogRange:     "INSERT INTO CLONE_CHANGES (CHANGE_SEQ, TABLE_NAME, ROW_KEY, LAST_KEY) VALUES (txid_current(), $1, $2, $3)",
		Identity: "SELECT (SELECT system_identifier::text FROM pg_control_system()) || ' ' || current_database() || ' ' || " +
			"c.oid::text || ' ' || c.relfilenode::text FROM pg_class c WHERE c.oid = " + rel,
		PrimaryKey: "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) " +
			"WHERE i.indisprimary AND i.indrelid = " + rel,
		Triggers:  "SELECT tgname FROM pg_trigger WHERE tgenabled <> 'D' AND tgname LIKE 'trg_clone_%' AND tgrelid = " + rel,
		TableArgs: func(table string) []any { return []any{schema, table} },
	}
}
