// Package retention is the purge of the Engine DB's history (etl-craft
// purge, and the server's daily purge): what is older than the retention of
// its kind goes; what runs, what the latest ended runs hold and what kept
// rows rely on never does.
//
// A purge plans in one read snapshot (plan.go): the runs it may delete, each
// with everything that belongs to it (its unit: task runs, attempts,
// business-rule runs and results, gate decisions, consumption, gate waits,
// interventions), in batches of about BatchRows rows, oldest first, runs
// that refer to each other in one batch; and the old actions, metadata
// changes and interventions of kept runs. With an archive folder it then
// writes every planned row to Parquet, one file per table, through DuckDB
// (archive.go), and checks each file's count. Only then does it delete,
// one transaction per batch (batch.go), each checking again that its runs
// may still go, and logging for cloning the range of keys it deleted from
// each table. Attempt log files go with their attempts, and older ones with
// the logs' retention (logs.go).
package retention

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/lock"
)

// Kind is a kind of history with a retention of its own.
type Kind string

// The kinds of history.
const (
	// Runs are the runs with everything that belongs to them.
	Runs Kind = "runs"
	// Logs are the attempts' log files.
	Logs Kind = "logs"
	// Actions are the requests of AUD_ACTIONS.
	Actions Kind = "actions"
	// MetadataChanges are the CFG_ row changes of AUD_METADATA_CHANGES.
	MetadataChanges Kind = "metadata_changes"
	// Interventions are the operator changes of AUD_RUN_INTERVENTIONS.
	Interventions Kind = "interventions"
)

// Kinds lists the kinds in the order reports give them.
var Kinds = []Kind{Runs, Logs, Actions, MetadataChanges, Interventions}

// Policy is how long each kind is kept; a kind with no duration (or 0) is
// kept forever.
type Policy map[Kind]time.Duration

// Day is the unit of the retentions of the Retention section.
const Day = 24 * time.Hour

// FromConfig returns the policy of the Retention section.
func FromConfig(r config.Retention) Policy {
	return Policy{Runs: days(r.RunsDays), Logs: days(r.LogsDays), Actions: days(r.ActionsDays),
		MetadataChanges: days(r.MetadataChangesDays), Interventions: days(r.InterventionsDays)}
}

func days(n int) time.Duration { return time.Duration(n) * Day }

// OlderThan returns the policy that keeps every kind p does not keep
// forever for d: a purge of what is older than d, once.
func (p Policy) OlderThan(d time.Duration) Policy {
	out := Policy{}
	for k, v := range p {
		if v > 0 {
			out[k] = d
		}
	}
	return out
}

// Cutoffs returns, per kind kept for a time, the moment before which it
// goes.
func (p Policy) Cutoffs(now time.Time) map[Kind]time.Time {
	out := map[Kind]time.Time{}
	for k, v := range p {
		if v > 0 {
			out[k] = now.Add(-v)
		}
	}
	return out
}

// BatchRows is how many rows a batch deletes, about: a batch holds whole
// runs, so it ends at the run that reaches it, and one run with more rows
// is a batch of its own.
const BatchRows = 10_000

// Options say what a purge does.
type Options struct {
	// Policy is how long each kind is kept.
	Policy Policy
	// Now is the purge's moment, from which the cut-offs are taken; zero
	// means time.Now().
	Now time.Time
	// DryRun plans and reports, and changes nothing.
	DryRun bool
	// ArchiveDir, when set, is the folder the rows are archived into, as
	// Parquet files named by the purge, before anything is deleted. It is
	// created when missing.
	ArchiveDir string
	// LogDir is Orchestration.Log_dir, which holds the attempts' log files.
	LogDir string
	// Vacuum gives the freed space back after the purge (engine.DB.Vacuum).
	Vacuum bool
	// BatchRows overrides BatchRows (tests); zero means BatchRows.
	BatchRows int
	// Hold overrides how long a transaction holds the write lock, about,
	// before its batch goes on in the next one (tests); zero means 10 ms on
	// a SingleWriter Engine DB (SQLite), where every other writer waits for
	// it, and a transaction per batch on others.
	Hold time.Duration
	// Request is the purge's request, recorded in AUD_ACTIONS with the
	// purge's plan before the first deletion; its Command is "purge" when
	// empty.
	Request audit.Request
	// Logger receives the purge's records; nil discards them.
	Logger *slog.Logger
}

// Table is what a purge deleted (or, dry, would delete) from one table.
type Table struct {
	Name string
	Rows int64
	// Archive is the Parquet file holding the table's rows; "" without an
	// archive or rows.
	Archive string
}

// Result is what a purge did.
type Result struct {
	// ID names the purge in its archive files and its AUD_ACTIONS row: the
	// UTC moment it planned, as 20060102T150405Z.
	ID     string
	DryRun bool
	Policy Policy
	// Cutoffs holds, per kind kept for a time, the moment before which it
	// went.
	Cutoffs map[Kind]time.Time
	// Tables lists every table a purge deletes from, in the order of
	// Tables(), with its rows.
	Tables []Table
	// LogFiles is how many attempt log files were removed.
	LogFiles int64
	// Batches is how many transactions deleted rows.
	Batches int
	// Kept is how many planned runs were found protected by their batch,
	// because something came to rely on them after the plan: archived, but
	// kept.
	Kept int
	// ArchiveDir is the folder of the archive files; "" without one.
	ArchiveDir string
	// Vacuumed says the freed space was given back.
	Vacuumed bool
}

// Rows is the total of the tables' rows.
func (r Result) Rows() int64 {
	var n int64
	for _, t := range r.Tables {
		n += t.Rows
	}
	return n
}

// Tables lists every table a purge deletes from, in the order its results
// give them.
func Tables() []string {
	out := make([]string, 0, len(unitTables)+len(standalones))
	for _, u := range unitTables {
		out = append(out, u.name)
	}
	for _, s := range standalones {
		if !slices.Contains(out, s.name) {
			out = append(out, s.name)
		}
	}
	return out
}

// Lock names the lock a purge holds, so that purges run one at a time.
const Lock = "retention"

// Purge deletes what is older than the retention of its kind, as the
// options say, and returns what it did. It holds the retention lock,
// waiting for another purge to end. With DryRun it only plans. An archive
// it cannot write or check stops it before anything is deleted. A failure
// while deleting leaves every batch committed so far deleted and the rest
// as it was, which the next purge takes up.
func Purge(ctx context.Context, db *engine.DB, opts Options) (Result, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	res := Result{ID: now.UTC().Format("20060102T150405Z"), DryRun: opts.DryRun, Policy: maps.Clone(opts.Policy),
		Cutoffs: opts.Policy.Cutoffs(now)}
	held, err := lock.Acquire(ctx, db, Lock, 0)
	if err != nil {
		return res, err
	}
	defer held.Release()

	p, err := newPlan(ctx, db, res.Cutoffs, opts.batchRows())
	if err != nil {
		return res, exit.Wrap(exit.EngineDB, err, "could not plan the purge")
	}
	defer p.end()
	planned := p.counts()
	files, err := oldLogs(ctx, db, opts.LogDir, res.Cutoffs)
	if err != nil {
		return res, err
	}
	if opts.DryRun {
		more, err := p.logFiles(ctx, files)
		if err != nil {
			return res, exit.Wrap(exit.EngineDB, err, "could not read the attempt logs of the runs planned")
		}
		res.Tables, res.LogFiles = tablesOf(planned, nil), int64(len(files))+more
		return res, nil
	}
	var archived map[string]string
	if opts.ArchiveDir != "" {
		res.ArchiveDir = opts.ArchiveDir
		if res.ID, archived, err = archive(ctx, p, planned, opts.ArchiveDir, res.ID); err != nil {
			return res, err
		}
	}
	p.end()
	if err := record(ctx, db, opts, res, planned); err != nil {
		return res, err
	}
	d := deleter{db: db, plan: p, log: log, deleted: map[string]int64{}, hold: opts.hold(db)}
	err = d.run(ctx)
	res.Tables, res.Batches, res.Kept, res.LogFiles = tablesOf(d.deleted, archived), d.batches, d.kept, d.files
	if err != nil {
		return res, err
	}
	removed, err := removeFiles(files)
	res.LogFiles += removed
	if err != nil {
		return res, err
	}
	if opts.Vacuum {
		if err := db.Vacuum(ctx, Tables()); err != nil {
			return res, exit.Wrap(exit.EngineDB, err, "the purge is done, but the freed space could not be given back")
		}
		res.Vacuumed = true
	}
	log.Info(res.Summary(),
		"purge_id", res.ID, "rows", res.Rows(), "batches", res.Batches, "log_files", res.LogFiles, "kept_runs", res.Kept)
	return res, nil
}

// hold is how long a transaction of the purge holds the write lock, about
// (deleter.hold).
func (o Options) hold(db *engine.DB) time.Duration {
	if o.Hold > 0 || !db.Capabilities().SingleWriter {
		return o.Hold
	}
	return holdWriteLock
}

func (o Options) batchRows() int {
	if o.BatchRows > 0 {
		return o.BatchRows
	}
	return BatchRows
}

// tablesOf lists every table with its rows and archive file.
func tablesOf(rows map[string]int64, files map[string]string) []Table {
	var out []Table
	for _, name := range Tables() {
		out = append(out, Table{Name: name, Rows: rows[name], Archive: files[name]})
	}
	return out
}

// record records the purge's request in AUD_ACTIONS, with its plan: the
// purge's id, the retention of each kind (AgeText), the
// archive folder and the rows planned per table.
func record(ctx context.Context, db *engine.DB, opts Options, res Result, planned map[string]int64) error {
	req := opts.Request
	if req.Command == "" {
		req.Command = "purge"
	}
	args := maps.Clone(req.Arguments)
	if args == nil {
		args = map[string]any{}
	}
	rows := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(planned)) {
		rows[name] = planned[name]
	}
	args["purge_id"], args["retention"], args["planned_rows"] = res.ID, res.Policy.texts(), rows
	if res.ArchiveDir != "" {
		args["archive_dir"] = res.ArchiveDir
	}
	req.Arguments = args
	_, err := audit.Record(ctx, db, req)
	return err
}
