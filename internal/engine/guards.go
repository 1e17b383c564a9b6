package engine

import "strings"

// The write guards protect every table whose name starts with CFG_ or AUD_,
// whichever created it: the packaged schema, an ENGINE migration or a
// PROJECT migration. The trigger refresh gives each one its guard; the
// metadata CFG_ tables (all but CFG_API_TOKENS) also get stamping and change
// capture. PostgreSQL states the refusal rules below in etl_craft_guard() of
// its schema.sql; SQLite's guard triggers are built from them here. Both
// dialects give a writer the same messages.

// apiTokensTable holds API credentials: guarded like an AUD_ table, with no
// stamping or change capture.
const apiTokensTable = "CFG_API_TOKENS"

// attemptsTable holds attempts, which are immutable once terminal.
const attemptsTable = "AUD_TASK_ATTEMPTS"

// appendOnlyTables keep history: their rows are never updated, and deleted
// only by retention (a purge).
var appendOnlyTables = map[string]bool{
	"AUD_RUN_INTERVENTIONS":      true,
	"AUD_ACTIONS":                true,
	"AUD_METADATA_CHANGES":       true,
	"AUD_DEPENDENCY_CONSUMPTION": true,
	"AUD_GATE_DECISIONS":         true,
}

// stampColumns are the columns the stamping triggers own, in the order they
// appear in the metadata CFG_ tables.
var stampColumns = []string{"CREATED_BY", "CREATE_DATE", "UPDATED_BY", "UPDATED_DATE"}

// retentionPurpose is the transaction purpose that may delete history (and
// never update it): a purge's (see WithPurpose).
const retentionPurpose = "retention"

// capturesChanges reports whether a table's row changes are recorded in
// AUD_METADATA_CHANGES: every CFG_ table but the API tokens.
func capturesChanges(table string) bool {
	t := strings.ToUpper(table)
	return strings.HasPrefix(t, "CFG_") && t != apiTokensTable
}

// writtenOnlyMessage is what a writer without an etl-craft actor is told.
func writtenOnlyMessage(table string) string {
	t := strings.ToUpper(table)
	var remedy string
	switch {
	case t == apiTokensTable:
		remedy = "manage API tokens with etl-craft token"
	case strings.HasPrefix(t, "CFG_"):
		remedy = "change metadata in a project migration and run etl-craft migrate"
	case t == "AUD_TARGET_HASH_VERSION":
		remedy = "upgrade merge targets with etl-craft rehash"
	case t == "AUD_TARGET_VIEW_STATEMENT":
		remedy = "etl-craft run records view statements"
	default:
		remedy = "audit rows change only through etl-craft commands such as run, mark and cancel"
	}
	return t + " is written only by etl-craft: " + remedy
}

// appendOnlyMessage is what an update or delete of history is told.
func appendOnlyMessage(table string) string {
	return strings.ToUpper(table) + " is append-only: its rows are immutable history; add a new row instead"
}

// terminalAttemptMessage is what a change to a finished attempt is told.
const terminalAttemptMessage = attemptsTable + " row is immutable: the attempt is terminal; queue a new attempt instead"

// quoteIdent quotes an identifier the way SQLite and PostgreSQL both read
// it: in double quotes, with any double quote doubled.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// quoteLiteral quotes a string literal for SQLite and for PostgreSQL with
// standard_conforming_strings on (the default): single quotes doubled.
func quoteLiteral(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
