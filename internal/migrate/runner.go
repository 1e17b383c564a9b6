package migrate

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/schema"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/sqlscan"
)

// Runner applies the schema and migrations to one Engine DB.
type Runner struct {
	DB *engine.DB
	// ProjectDir is the PROJECT migrations folder; empty means none.
	ProjectDir string
	// LockWait bounds the wait for the MIGRATE lock; zero waits until it is free.
	LockWait time.Duration
	// OutOfOrder applies pending PROJECT files that sort before an applied
	// file or share their number with another file, which are refused
	// otherwise.
	OutOfOrder bool
	// OnApplied, when set, is called as soon as each file has committed.
	OnApplied func(File)
	// Warn, when set, is told of every file in the PROJECT folder that looks
	// like a migration but is not read (see Stream.Ignored).
	Warn func(message string)
}

// InitResult is what init-db did.
type InitResult struct {
	Statements int      // schema statements applied
	Recorded   []string // packaged migrations recorded as applied
}

// SetupResult is what setup did to the Engine DB.
type SetupResult struct {
	Created bool // the tables were created
	Init    InitResult
	Applied []File // migrations applied afterwards
}

func (r *Runner) split(text string) []sqlscan.Statement {
	return sqlscan.Split(text, r.DB.Kind().ScanDialect())
}

func (r *Runner) streams() ([]Stream, error) {
	eng, err := EngineStream(r.DB.Kind())
	if err != nil {
		return nil, err
	}
	proj, err := ProjectStream(r.ProjectDir)
	if err != nil {
		return nil, err
	}
	if r.Warn != nil {
		for _, msg := range proj.Ignored {
			r.Warn(msg)
		}
	}
	return []Stream{eng, proj}, nil
}

func (r *Runner) withLock(ctx context.Context, fn func() error) error {
	held, err := lock.Acquire(ctx, r.DB, lock.Migrate, r.LockWait)
	if err != nil {
		return err
	}
	defer held.Release()
	return fn()
}

// EngineTables returns the Engine DB tables the database already has, named
// as its catalog spells them and sorted by upper-cased name, as Tables
// returns them: every CFG_ and AUD_ table and SCHEMA_MIGRATIONS.
func EngineTables(ctx context.Context, q interface {
	Tables(context.Context) ([]string, error)
}) ([]string, error) {
	all, err := q.Tables(ctx)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not list the Engine DB's tables")
	}
	var out []string
	for _, t := range all {
		u := strings.ToUpper(t)
		if strings.HasPrefix(u, "CFG_") || strings.HasPrefix(u, "AUD_") || u == "SCHEMA_MIGRATIONS" {
			out = append(out, t)
		}
	}
	return out, nil
}

// InitDB creates every table of the packaged schema and records the packaged
// migrations as applied, in one transaction under the MIGRATE lock. Unless
// force is set it refuses a database that already has Engine DB tables.
func (r *Runner) InitDB(ctx context.Context, force bool) (InitResult, error) {
	var res InitResult
	err := r.withLock(ctx, func() error {
		var err error
		res, err = r.initDB(ctx, force)
		return err
	})
	return res, err
}

func (r *Runner) initDB(ctx context.Context, force bool) (InitResult, error) {
	kind := r.DB.Kind()
	text, err := schema.Schema(string(kind))
	if err != nil {
		return InitResult{}, exit.Wrap(exit.EngineDB, err, "the packaged %s schema is missing", kind)
	}
	eng, err := EngineStream(kind)
	if err != nil {
		return InitResult{}, err
	}
	if !force {
		existing, err := EngineTables(ctx, r.DB)
		if err != nil {
			return InitResult{}, err
		}
		if len(existing) > 0 {
			return InitResult{}, exit.Fieldf(exit.EngineDB,
				"the database already has Engine DB table(s) %s: run `etl-craft migrate` to upgrade an existing Engine DB, or `etl-craft init-db {force}` for a database that is empty apart from a leftover table",
				quoteList(existing))
		}
	}
	stmts := r.split(string(text))
	res := InitResult{Statements: len(stmts)}
	err = r.DB.Tx(ctx, func(tx *engine.Tx) error {
		for _, s := range stmts {
			if err := tx.ExecRaw(ctx, s.Text); err != nil {
				return statementError("schema.sql", s, err)
			}
		}
		if err := tx.RefreshTriggers(ctx); err != nil {
			return fmt.Errorf("creating the guard triggers: %w", err)
		}
		if err := fault.Point("init_db.after_schema"); err != nil {
			return err
		}
		recorded, err := recordPackaged(ctx, tx, eng)
		res.Recorded = recorded
		return err
	})
	if err != nil {
		if exit.CodeOf(err) == exit.InjectedFault || exit.CodeOf(err) == exit.Migration {
			return InitResult{}, err
		}
		return InitResult{}, exit.Wrap(exit.EngineDB, err, "failed applying the %s schema (schema.sql)", kind)
	}
	return res, nil
}

// recordPackaged records every packaged ENGINE migration as applied, since the
// schema already contains them. Rows already present must match.
func recordPackaged(ctx context.Context, tx *engine.Tx, eng Stream) ([]string, error) {
	ledger, err := readLedger(ctx, tx)
	if err != nil {
		return nil, err
	}
	var engineRows []ledgerRow
	for _, row := range ledger {
		if row.Source == Engine {
			engineRows = append(engineRows, row)
		}
	}
	if _, err := verify(engineRows, []Stream{eng}); err != nil {
		return nil, err
	}
	var recorded []string
	for _, f := range pending(ledger, []Stream{eng}) {
		if err := insertLedger(ctx, tx, f); err != nil {
			return nil, err
		}
		recorded = append(recorded, f.Name)
	}
	return recorded, nil
}

// Status is what the ledger says of an Engine DB.
type Status struct {
	Pending []File // the files not applied yet, in order
	// Releases are the released builds whose checksums the ledger's rows
	// carry (see released-checksums.toml); empty when every row holds this
	// build's own.
	Releases []string
	// Ignored says of every file in the PROJECT folder that looks like a
	// migration but is not read why it is not (see Stream.Ignored).
	Ignored []string
}

// Status verifies the ledger and the pending files as Migrate does and
// returns the files not applied yet and the releases the ledger comes from,
// without taking the lock. doctor uses it.
func (r *Runner) Status(ctx context.Context) (Status, error) {
	streams, err := r.streams()
	if err != nil {
		return Status{}, err
	}
	ledger, err := readLedger(ctx, r.DB)
	if err != nil {
		return Status{}, err
	}
	releases, err := verify(ledger, streams)
	if err != nil {
		return Status{}, err
	}
	if err := checkPending(r.DB.Kind(), ledger, streams, r.OutOfOrder); err != nil {
		return Status{}, err
	}
	return Status{Pending: pending(ledger, streams), Releases: releases, Ignored: streams[1].Ignored}, nil
}

// Migrate applies every pending file, ENGINE stream first, each in its own
// transaction with its ledger row, under the MIGRATE lock. It returns the
// files applied.
func (r *Runner) Migrate(ctx context.Context) ([]File, error) {
	streams, err := r.streams()
	if err != nil {
		return nil, err
	}
	var applied []File
	err = r.withLock(ctx, func() error {
		applied, err = r.migrate(ctx, streams)
		return err
	})
	return applied, err
}

// Setup creates the Engine DB tables when there are none, then applies every
// pending migration, all under one hold of the MIGRATE lock.
func (r *Runner) Setup(ctx context.Context) (SetupResult, error) {
	streams, err := r.streams()
	if err != nil {
		return SetupResult{}, err
	}
	var res SetupResult
	err = r.withLock(ctx, func() error {
		existing, err := EngineTables(ctx, r.DB)
		if err != nil {
			return err
		}
		if len(existing) == 0 {
			// The files a new Engine DB will take are checked before its tables are made.
			if err := checkPending(r.DB.Kind(), nil, streams, r.OutOfOrder); err != nil {
				return err
			}
			if res.Init, err = r.initDB(ctx, false); err != nil {
				return err
			}
			res.Created = true
		}
		res.Applied, err = r.migrate(ctx, streams)
		return err
	})
	return res, err
}

func (r *Runner) migrate(ctx context.Context, streams []Stream) ([]File, error) {
	ledger, err := readLedger(ctx, r.DB)
	if err != nil {
		return nil, err
	}
	if _, err := verify(ledger, streams); err != nil {
		return nil, err
	}
	if err := checkPending(r.DB.Kind(), ledger, streams, r.OutOfOrder); err != nil {
		return nil, err
	}
	todo := pending(ledger, streams)
	for _, f := range todo {
		if f.Source == Engine && f.HasMarker(CheckMetadataCodes) {
			if err := checkCodes(ctx, r.DB); err != nil {
				return nil, err
			}
			break
		}
	}
	var applied []File
	for _, f := range todo {
		if err := r.apply(ctx, f); err != nil {
			return applied, err
		}
		applied = append(applied, f)
		if r.OnApplied != nil {
			r.OnApplied(f)
		}
	}
	return applied, nil
}

// createOrAlterTable matches the PROJECT statements after which new or
// changed tables get their guard and capture triggers.
var createOrAlterTable = regexp.MustCompile(`(?i)\b(ALTER|CREATE)\s+TABLE\b`)

// apply runs one file and its ledger row in one transaction: the guarded
// rebuild transaction (engine.DB.RebuildTx) for an ENGINE file with the
// rebuild-metadata marker, a plain one otherwise.
func (r *Runner) apply(ctx context.Context, f File) error {
	if f.Source == Project {
		ctx = engine.WithMigration(ctx, f.Name)
	}
	inTx := r.DB.Tx
	if f.Source == Engine && f.HasMarker(RebuildMetadata) {
		plan := rebuildPlan(f.Text)
		inTx = func(ctx context.Context, fn func(*engine.Tx) error) error { return r.DB.RebuildTx(ctx, plan, fn) }
	}
	err := inTx(ctx, func(tx *engine.Tx) error {
		for _, s := range r.split(f.Text) {
			if f.Source == Project && createOrAlterTable.MatchString(s.Text) {
				if err := tx.BeforeAlter(ctx, s.Text); err != nil {
					return statementError(f.Label(), s, err)
				}
			}
			if err := tx.ExecRaw(ctx, s.Text); err != nil {
				return statementError(f.Label(), s, err)
			}
			if f.Source == Project && createOrAlterTable.MatchString(s.Text) {
				if err := tx.RefreshTriggers(ctx); err != nil {
					return fmt.Errorf("refreshing the guard triggers after line %d: %w", s.Line, err)
				}
			}
		}
		if f.Source == Engine {
			if err := tx.RefreshTriggers(ctx); err != nil {
				return fmt.Errorf("refreshing the guard triggers: %w", err)
			}
		}
		if err := insertLedger(ctx, tx, f); err != nil {
			return err
		}
		if err := fault.Point("migration.after_ledger"); err != nil {
			return err
		}
		return fault.Point("migration.after_ledger." + f.Name)
	})
	if err != nil {
		if exit.CodeOf(err) == exit.InjectedFault {
			return err
		}
		return exit.Wrap(exit.Migration, err, "%s failed to apply", f.Label())
	}
	return nil
}

// statementError names the statement that failed by its line and first line
// of text, with the database's message.
func statementError(file string, s sqlscan.Statement, err error) error {
	return fmt.Errorf("%s:%d: the statement `%s` failed: %w", file, s.Line, firstLine(s.Text), err)
}

// firstLine returns the first line of a statement that is not a comment,
// shortened for messages.
func firstLine(text string) string {
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "--") {
			continue
		}
		if len(l) > 80 {
			l = l[:77] + "..."
		}
		return l
	}
	return strings.TrimSpace(text)
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func readLedger(ctx context.Context, q engine.Querier) ([]ledgerRow, error) {
	rows, err := q.QueryContext(ctx,
		"SELECT SOURCE, VERSION, CHECKSUM FROM SCHEMA_MIGRATIONS ORDER BY SOURCE, VERSION")
	if err != nil {
		return nil, exit.Wrap(exit.Migration, err,
			"could not read SCHEMA_MIGRATIONS: this may not be an Engine DB yet; run `etl-craft init-db` (or `etl-craft setup`)")
	}
	defer rows.Close()
	var out []ledgerRow
	for rows.Next() {
		var r ledgerRow
		if err := rows.Scan(&r.Source, &r.Version, &r.Checksum); err != nil {
			return nil, exit.Wrap(exit.Migration, err, "could not read SCHEMA_MIGRATIONS")
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func insertLedger(ctx context.Context, tx *engine.Tx, f File) error {
	_, err := tx.ExecContext(ctx,
		"INSERT INTO SCHEMA_MIGRATIONS (SOURCE, VERSION, CHECKSUM) VALUES ($1, $2, $3)",
		string(f.Source), f.Name, f.Checksum)
	if err != nil {
		return fmt.Errorf("recording %s in SCHEMA_MIGRATIONS: %w", f.Label(), err)
	}
	return nil
}
