package clone

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/span"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// The scopes of the Cloning section and the table-name prefixes each copies.
var scopePrefixes = map[string][]string{
	"cfg":  {"CFG_"},
	"aud":  {"AUD_"},
	"all":  {"CFG_", "AUD_"},
	"none": nil,
}

// apiTokensTable holds the HTTP API's credentials (their hashes): it is
// never copied, whatever the scope.
const apiTokensTable = "CFG_API_TOKENS"

// Options say what a clone copies and where.
type Options struct {
	// Scope is the Cloning section's scope: cfg, aud, all or none.
	Scope string
	// Schema is the warehouse profile's schema, which holds the mirrors.
	Schema string
	// Kind is the warehouse's kind: a PostgreSQL warehouse of a PostgreSQL
	// Engine DB is asked whether it is the Engine DB (RefuseEngineSchema).
	Kind warehouse.Kind
	// Logger receives a DEBUG record per table copied, an INFO record of
	// the whole clone (tables, rows, seconds) and a failed clone's error;
	// nil means slog.Default().
	Logger *slog.Logger
	// Progress, when set, is called as each table is copied: when it
	// starts, after every batch of rows, and once it has committed.
	Progress func(Progress)
	// Full replaces every mirror's rows, even one that could be caught up
	// incrementally (etl-craft clone --full).
	Full bool
	// Copied, when set, is told of each table copied, with how long it
	// took, or of its failure (err set, t holding its Engine name only),
	// for metrics.
	Copied func(t Table, took time.Duration, err error)
}

func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// Progress is one step of a clone, reported to Options.Progress.
type Progress struct {
	Table  string // the Engine DB table
	Mirror string // its mirror, catalog.schema.TABLE
	Rows   int64  // rows copied so far
	Done   bool   // the table has committed
}

// Table is one mirror a clone wrote.
type Table struct {
	// Engine names the Engine DB table the way etl-craft writes it:
	// CFG_PIPELINES on either dialect (PostgreSQL's catalog keeps the
	// engine's own tables in lower case), a project table created with a
	// quoted mixed-case name as it was created.
	Engine string
	// Mirror is the warehouse table: catalog, schema and the upper-cased
	// Engine table name.
	Mirror warehouse.Table
	// Rows is how many rows the mirror holds after the copy: the rows a
	// full copy copies.
	Rows int64
	// Copied is how many rows this copy wrote: Rows for a full copy, the
	// changed rows for an incremental one.
	Copied int64
	// Incremental is set when only the rows changed since the last clone
	// were copied; Why says why the copy was incremental or full.
	Incremental bool
	Why         string
	// Created is set when the mirror did not exist and was created.
	Created bool
	// Added lists the columns added to an existing mirror.
	Added []string
}

// Copy names how the table was copied: incremental or full.
func (t Table) Copy() string {
	if t.Incremental {
		return "incremental"
	}
	return "full"
}

// Line formats the table as `etl-craft clone` prints it: Engine table,
// mirror and rows, tab-separated, then "created" or "added COL1, COL2".
func (t Table) Line() string {
	s := fmt.Sprintf("%s\t%s\t%d", t.Engine, t.Mirror.Full(), t.Rows)
	switch {
	case t.Created:
		s += "\tcreated"
	case len(t.Added) > 0:
		s += "\tadded " + strings.Join(t.Added, ", ")
	}
	return s
}

// Source gives a clone its warehouse: an open connection and the function
// that gives it back. For a single-writer warehouse (a DuckDB file) the
// connection must be opened only while the Engine DB's warehouse lock is
// held, as pool.Pool does.
type Source interface {
	Acquire(ctx context.Context) (warehouse.Warehouse, func(), error)
}

// TableError is a table that could not be copied: the message names the
// table, its mirror and the database's own message.
type TableError struct {
	Table  string
	Mirror string
	Err    error
}

func (e *TableError) Error() string {
	return fmt.Sprintf("cloning %s into %s failed: %v", e.Table, e.Mirror, e.Err)
}

func (e *TableError) Unwrap() error { return e.Err }

// FromConfig returns the options of the configuration's Cloning section. It
// is a configuration error (exit 3) when cloning is off, or when it cannot
// work with this configuration (see Problem). wopts is nil when there is no
// Warehouse section.
func FromConfig(cfg *config.Config, wopts *warehouse.Options) (Options, error) {
	if !cfg.Cloning.Effective() {
		return Options{}, exit.Errorf(exit.Configuration,
			"cloning is off in %s: set Cloning.Enabled: true and a Scope of cfg, aud or all", cfg.Path)
	}
	if err := Problem(cfg, wopts); err != nil {
		return Options{}, err
	}
	return Options{Scope: cfg.Cloning.Scope, Schema: cfg.Warehouse.Schema, Kind: wopts.Kind}, nil
}

// Run mirrors the Engine DB tables of the scope into the warehouse schema and
// returns the mirrors written, in upper-cased table-name order. The whole
// clone holds the Engine DB's clone lock, waiting for it as long as it takes,
// so two clones run one after the other and the second copies the newer
// state.
//
// The schema must exist, and must not be the Engine DB's own (CheckTarget;
// that refusal is exit code 3): cloning never creates it. A mirror that does
// not exist is created; one that does keeps every column it has, gains the
// Engine columns it lacks, and has all its rows replaced in one warehouse
// transaction. A table with a value the clone cannot read (a *ValueError)
// fails alone: its mirror keeps its rows, every other table is still
// copied, and the clone then ends with an exit code 17 error naming each
// such table, its row and column. Any other failure stops the clone with
// an exit code 17 error (a *TableError when a table failed). The tables
// copied are returned with the error.
func Run(ctx context.Context, db *engine.DB, src Source, opts Options) ([]Table, error) {
	prefixes, ok := scopePrefixes[opts.Scope]
	if !ok {
		return nil, exit.Errorf(exit.Configuration, "Cloning.Scope %q is not cfg, aud, all or none", opts.Scope)
	}
	if len(prefixes) == 0 {
		return nil, nil
	}
	log := opts.logger()
	held, err := lock.Acquire(ctx, db, lock.Clone, 0)
	if err != nil {
		return nil, err
	}
	defer held.Release()

	w, release, err := src.Acquire(ctx)
	if err != nil {
		if exit.CodeOf(err) == exit.Unexpected {
			err = exit.Wrap(exit.Cloning, err, "could not open the warehouse to clone into")
		}
		return nil, err
	}
	defer release()
	if err := CheckTarget(ctx, db, opts.Kind, w, opts.Schema); err != nil {
		if exit.CodeOf(err) == exit.Unexpected {
			err = &exit.Error{Code: exit.Cloning, Err: err}
		}
		return nil, err
	}
	begun := time.Now()
	names, err := engineTables(ctx, db, prefixes)
	if err != nil {
		return nil, err
	}
	c := copier{db: db, w: w, full: opts.Full, progress: opts.Progress}
	var out []Table
	var total int64
	var failed []error
	for _, name := range names {
		mirror := w.Table(opts.Schema, strings.ToUpper(name))
		start := time.Now()
		t, err := copyTable(ctx, &c, name, mirror, opts.Copied)
		if err != nil {
			if exit.Is(err, exit.InjectedFault) {
				return out, err
			}
			if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
				// The warehouse may notice the cancellation first and
				// report it in its own words; the cause stays the context's.
				err = fmt.Errorf("%w: %v", cerr, err)
			}
			te := &TableError{Table: displayName(name), Mirror: mirror.Full(), Err: err}
			var ve *ValueError
			if ctx.Err() == nil && errors.As(err, &ve) {
				log.ErrorContext(ctx, "a value of "+te.Table+" cannot be cloned; the other tables are still copied",
					"table", te.Table, "mirror", te.Mirror, "error", err.Error())
				failed = append(failed, te)
				continue
			}
			return out, cloneError(append(failed, te))
		}
		out = append(out, t)
		total += t.Rows
		note := ""
		switch {
		case t.Created:
			note = " (created)"
		case len(t.Added) > 0:
			note = " (added " + strings.Join(t.Added, ", ") + ")"
		}
		log.DebugContext(ctx, "cloned "+t.Engine+note, "mirror", mirror.Full(), "rows", t.Rows, "copied", t.Copied,
			"copy", t.Copy(), "why", exit.RenderFields(t.Why, func(field string) string { return field }), "seconds", secondsSince(start))
	}
	if err := w.Verify(); err != nil {
		return out, exit.Wrap(exit.Cloning, err, "the clone is lost")
	}
	log.InfoContext(ctx, fmt.Sprintf("cloned %d table(s), %d row(s), into the warehouse", len(out), total),
		"tables", len(out), "rows", total, "seconds", secondsSince(begun))
	if len(failed) > 0 {
		return out, cloneError(failed)
	}
	return out, nil
}

// copyTable copies one table in a span of its own, and tells copied, when
// set, how it went.
func copyTable(ctx context.Context, c *copier, name string, mirror warehouse.Table, copied func(Table, time.Duration, error)) (Table, error) {
	ctx, sp := span.Start(ctx, "clone "+displayName(name), span.String("etl_craft.clone.table", displayName(name)),
		span.String("etl_craft.clone.mirror", mirror.Full()))
	defer sp.End()
	start := time.Now()
	t, err := c.copy(ctx, name, mirror)
	if copied != nil {
		if err != nil {
			t = Table{Engine: displayName(name)}
		}
		copied(t, time.Since(start), err)
	}
	if err != nil {
		sp.Fail("the table could not be copied")
		return t, err
	}
	sp.Set(span.String("etl_craft.clone.copy", t.Copy()), span.Int("etl_craft.clone.rows", t.Copied))
	return t, nil
}

// cloneError is the error (exit 17) of a clone whose tables failed, each a
// *TableError, one per line.
func cloneError(failed []error) error {
	if len(failed) == 1 {
		return &exit.Error{Code: exit.Cloning, Err: failed[0]}
	}
	return &exit.Error{Code: exit.Cloning, Err: errors.Join(failed...)}
}

// Hook returns the clone that ends every run when cloning is on: Run, with
// a failure logged at ERROR with the table and the database's message, then
// returned for the run to log too. It never changes how the run ended.
//
// The runs of one process that end together share their clones: one clone
// runs at a time, and the runs that end while it runs wait for the next
// one, a single clone for all of them. It starts after each of their
// records committed, so it holds them all; without sharing, runs ending
// faster than a clone takes would queue their clones without end.
func Hook(db *engine.DB, src Source, opts Options) func(ctx context.Context) error {
	shared := &rounds{turn: make(chan struct{}, 1)}
	return func(ctx context.Context) error {
		return shared.join(func() error {
			_, err := Run(ctx, db, src, opts)
			if err == nil {
				return nil
			}
			attrs := []any{"error", err.Error()}
			var te *TableError
			if errors.As(err, &te) {
				attrs = []any{"table", te.Table, "mirror", te.Mirror, "error", te.Err.Error()}
			}
			opts.logger().ErrorContext(ctx, "cloning the Engine DB into the warehouse failed; the run's status is unchanged", attrs...)
			return err
		})
	}
}

// rounds runs a piece of work for every caller, one round at a time: the
// callers that come while a round runs share the next round.
type rounds struct {
	// turn holds a token while a round runs.
	turn chan struct{}
	mu   sync.Mutex
	// next is the round waiting for its turn, nil when none waits.
	next *round
}

// round is one run of the work, and its result.
type round struct {
	done chan struct{}
	err  error
}

// join runs work in the next round, or waits for the round that waits to
// start already, and returns that round's result.
func (r *rounds) join(work func() error) error {
	r.mu.Lock()
	if next := r.next; next != nil {
		r.mu.Unlock()
		<-next.done
		return next.err
	}
	mine := &round{done: make(chan struct{})}
	r.next = mine
	r.mu.Unlock()
	r.turn <- struct{}{}
	r.mu.Lock()
	r.next = nil // the round starts: later callers wait for another
	r.mu.Unlock()
	mine.err = work()
	<-r.turn
	close(mine.done)
	return mine.err
}

// secondsSince returns the seconds since start, to the millisecond, as the
// clone's records give them.
func secondsSince(start time.Time) float64 {
	return time.Since(start).Round(time.Millisecond).Seconds()
}

// displayName names an Engine table in reports: upper-cased when its
// catalog name has no upper-case letter (as PostgreSQL folds unquoted
// names), as it is otherwise.
func displayName(name string) string {
	if strings.ToLower(name) == name {
		return strings.ToUpper(name)
	}
	return name
}

// engineTables lists the Engine DB tables whose upper-cased names start with
// one of the prefixes, sorted by upper-cased name (byte order), without the
// API token table.
func engineTables(ctx context.Context, db *engine.DB, prefixes []string) ([]string, error) {
	all, err := db.Tables(ctx)
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not list the Engine DB's tables")
	}
	var out []string
	for _, name := range all {
		u := strings.ToUpper(name)
		if u == apiTokensTable {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(u, p) {
				out = append(out, name)
				break
			}
		}
	}
	// The same order on every dialect, whatever the database's collation.
	slices.SortStableFunc(out, func(a, b string) int { return strings.Compare(strings.ToUpper(a), strings.ToUpper(b)) })
	return out, nil
}
