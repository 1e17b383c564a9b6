package engine

import (
	"slices"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// The answers of OutsideTransaction.
const (
	// ControlsTransaction is a statement that begins, ends or nests a
	// transaction: BEGIN, COMMIT, END, ROLLBACK, SAVEPOINT, RELEASE, ….
	ControlsTransaction = "controls the transaction"
	// RefusedInTransaction is a statement the database refuses to run
	// inside a transaction, such as VACUUM.
	RefusedInTransaction = "cannot run inside a transaction"
)

// OutsideTransaction says why a statement cannot be part of the transaction
// a migration file runs in: ControlsTransaction, RefusedInTransaction (VACUUM;
// on PostgreSQL also CREATE INDEX CONCURRENTLY, CREATE DATABASE, ALTER
// SYSTEM and their kind), or "" for any other statement and for text the
// dialect cannot read, which the database then judges. The statement is
// read by the dialect's own rules: SQLite's tokens (sqlscan) and
// PostgreSQL's parser (pg_query).
func (k Kind) OutsideTransaction(statement string) string {
	if d := k.dialect(); d != nil {
		return d.outsideTransaction(statement)
	}
	return ""
}

// sqliteTransactionControl are the first words of SQLite's statements that
// begin, end or nest a transaction.
var sqliteTransactionControl = []string{"BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"}

// outsideTransaction reads the statement's first word with SQLite's
// tokens: a trigger body's BEGIN … END is inside a CREATE TRIGGER, so only
// a statement of its own starts with these words.
func (sqliteDialect) outsideTransaction(statement string) string {
	for _, t := range sqlscan.Scan(statement, sqlscan.SQLite) {
		if t.Kind == sqlscan.Space || t.Kind == sqlscan.Comment {
			continue
		}
		word := strings.ToUpper(t.Text)
		switch {
		case t.Kind != sqlscan.Word:
		case word == "VACUUM":
			return RefusedInTransaction
		case slices.Contains(sqliteTransactionControl, word):
			return ControlsTransaction
		}
		return ""
	}
	return ""
}

// outsideTransaction reads the statement with PostgreSQL's own parser.
func (postgresDialect) outsideTransaction(statement string) string {
	tree, err := pg.Parse(statement)
	if err != nil {
		return ""
	}
	for _, raw := range tree.GetStmts() {
		if why := pgOutsideTransaction(raw.GetStmt()); why != "" {
			return why
		}
	}
	return ""
}

// pgOutsideTransaction judges one parsed statement: PostgreSQL's
// transaction statements, and the statements its documentation says
// cannot be executed inside a transaction block.
func pgOutsideTransaction(n *pg.Node) string {
	refused := false
	switch s := n.GetNode().(type) {
	case *pg.Node_TransactionStmt:
		return ControlsTransaction
	case *pg.Node_VacuumStmt:
		refused = s.VacuumStmt.GetIsVacuumcmd()
	case *pg.Node_IndexStmt:
		refused = s.IndexStmt.GetConcurrent()
	case *pg.Node_DropStmt:
		refused = s.DropStmt.GetConcurrent()
	case *pg.Node_ReindexStmt:
		switch s.ReindexStmt.GetKind() {
		case pg.ReindexObjectType_REINDEX_OBJECT_SCHEMA, pg.ReindexObjectType_REINDEX_OBJECT_SYSTEM, pg.ReindexObjectType_REINDEX_OBJECT_DATABASE:
			refused = true
		default:
			refused = hasOption(s.ReindexStmt.GetParams(), "concurrently")
		}
	case *pg.Node_ClusterStmt:
		refused = s.ClusterStmt.GetRelation() == nil
	case *pg.Node_AlterTableStmt:
		for _, c := range s.AlterTableStmt.GetCmds() {
			refused = refused || c.GetAlterTableCmd().GetDef().GetPartitionCmd().GetConcurrent()
		}
	case *pg.Node_DiscardStmt:
		refused = s.DiscardStmt.GetTarget() == pg.DiscardMode_DISCARD_ALL
	case *pg.Node_AlterDatabaseStmt:
		refused = hasOption(s.AlterDatabaseStmt.GetOptions(), "tablespace")
	case *pg.Node_CreatedbStmt, *pg.Node_DropdbStmt, *pg.Node_AlterSystemStmt,
		*pg.Node_CreateTableSpaceStmt, *pg.Node_DropTableSpaceStmt:
		refused = true
	}
	if refused {
		return RefusedInTransaction
	}
	return ""
}

// hasOption reports whether a list of DefElem options names the option.
func hasOption(options []*pg.Node, name string) bool {
	for _, o := range options {
		if strings.EqualFold(o.GetDefElem().GetDefname(), name) {
			return true
		}
	}
	return false
}
