package script

import (
	"context"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"

	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// FaultAfterLoad is the fault point after the loads are published and
// before the attempt's outcome commits: after the warehouse committed them,
// or, where they publish in the Engine DB transaction recording the
// outcome, after their statements ran in it.
const FaultAfterLoad = "script.after_load"

// The load modes of task.load.
const (
	modeAppend  = "append"
	modeReplace = "replace"
)

// stagePrefix starts the name of every staging table of task.load:
// etl_load_<task_id>_<attempt_id>_<n>, in the target's schema.
const stagePrefix = "etl_load_"

// ledgerName is the table, in each target's schema, where every published
// load is noted in the same warehouse transaction: a retry after a crash
// between the publication and the outcome finds its load already there.
const ledgerName = "etl_craft_script_loads"

// load is one task.load of the attempt: staged, and published when the
// script succeeds.
type load struct {
	seq    int
	target warehouse.Table
	mode   string
	stage  warehouse.Table
	cols   []warehouse.Column
	rows   int64
}

// stageName names the n-th staging table of an attempt of a task.
func stageName(taskID, attemptID int64, n int) string {
	return fmt.Sprintf("%s%d_%d_%d", stagePrefix, taskID, attemptID, n)
}

// stageAttempt returns the task and attempt a staging table's name
// carries; ok is false for another table.
func stageAttempt(name string) (taskID, attemptID int64, ok bool) {
	parts := strings.Split(strings.TrimPrefix(strings.ToLower(name), stagePrefix), "_")
	if !strings.HasPrefix(strings.ToLower(name), stagePrefix) || len(parts) != 3 {
		return 0, 0, false
	}
	t, err1 := strconv.ParseInt(parts[0], 10, 64)
	a, err2 := strconv.ParseInt(parts[1], 10, 64)
	return t, a, err1 == nil && err2 == nil
}

// load receives the rows of one task.load and stages them: a table of the
// attempt beside the target, holding the target's columns (or, for a new
// table, the columns of the rows), filled by the warehouse's bulk load and
// committed. The script sends its first batch, as JSON, with the request
// and waits for the staged columns' types; then it sends the other batches
// as COPY text until its end message: the engine forwards the text to a
// PostgreSQL server as it is, and decodes it for any other warehouse (decode
// is nil, or copyRows for the staged columns). The batches keep coming after
// a failure, so the engine reads them all to stay in step.
func (s *session) load(ctx context.Context, req *request) (any, error) {
	first, err := s.firstBatch()
	if err != nil {
		return nil, err
	}
	var rest iter.Seq2[rowBatch, error]
	err = s.stageLoad(ctx, req, first, func(cols []warehouse.Column, decode func([]byte) ([][]any, error)) (iter.Seq2[rowBatch, error], error) {
		types := make([]string, len(cols))
		for i, c := range cols {
			types[i] = strings.ToLower(c.Type.String())
		}
		if err := s.answer(map[string]any{"types": types}); err != nil {
			return nil, err
		}
		rest = s.rowMessages(decode)
		return rest, nil
	})
	if rest != nil {
		for range rest { // drain what the failed load did not read
		}
	}
	if err != nil {
		return nil, err
	}
	l := s.loads[len(s.loads)-1]
	return map[string]any{"rows": l.rows}, nil
}

// rowBatch is one batch of a load's rows: decoded rows, or COPY text.
type rowBatch struct {
	rows [][]any
	text []byte
}

// copyPrefix starts the line announcing a batch of COPY text: C, the
// number of bytes of the text, and a newline; the text follows.
const copyPrefix = 'C'

// firstBatch reads the batch of JSON rows the script sends with its load
// request.
func (s *session) firstBatch() ([][]any, error) {
	line, err := s.c.reqs.ReadBytes('\n')
	if err != nil {
		return nil, exit.Errorf(exit.Handler, "the script ended in the middle of a load")
	}
	if len(line) == 0 || line[0] != rowsPrefix {
		return nil, exit.Errorf(exit.Handler, "the script's load request was not followed by its first batch of rows")
	}
	rows, err := parseRows(line[1:])
	return rows, exit.Wrap(exit.Handler, err, "the script sent an unreadable batch of rows")
}

// rowMessages yields the batches of COPY text the script sends until its
// end message, decoded into rows when decode is not nil; an abort message
// (the script's iterator failed) ends them with the script's error. A
// goroutine reads and decodes a few batches ahead, so the script keeps
// writing and the engine decoding while the warehouse loads.
func (s *session) rowMessages(decode func([]byte) ([][]any, error)) iter.Seq2[rowBatch, error] {
	type batch struct {
		rowBatch
		err error
	}
	ahead := make(chan batch, 4)
	go func() {
		defer close(ahead)
		for {
			line, err := s.c.reqs.ReadBytes('\n')
			if err != nil {
				ahead <- batch{err: exit.Errorf(exit.Handler, "the script ended in the middle of a load")}
				return
			}
			if len(line) > 0 && line[0] == copyPrefix {
				n, err := strconv.Atoi(strings.TrimSpace(string(line[1:])))
				if err != nil || n < 0 {
					ahead <- batch{err: exit.Errorf(exit.Handler, "the script sent an unreadable batch header %q", line)}
					return
				}
				text := make([]byte, n)
				if _, err := io.ReadFull(s.c.reqs, text); err != nil {
					ahead <- batch{err: exit.Errorf(exit.Handler, "the script ended in the middle of a load")}
					return
				}
				if decode == nil {
					ahead <- batch{rowBatch: rowBatch{text: text}}
					continue
				}
				rows, err := decode(text)
				ahead <- batch{rowBatch: rowBatch{rows: rows}, err: err}
				if err != nil {
					return
				}
				continue
			}
			var req request
			if err := decodeJSON(line, &req); err != nil {
				ahead <- batch{err: exit.Wrap(exit.Handler, err, "the script sent an unreadable batch of rows")}
				return
			}
			switch req.Op {
			case "abort":
				ahead <- batch{err: exit.Errorf(exit.Handler, "the script's rows failed: %s", req.Error)}
				return
			default:
				return
			}
		}
	}()
	return func(yield func(rowBatch, error) bool) {
		for b := range ahead {
			if !yield(b.rowBatch, b.err) || b.err != nil {
				return
			}
		}
	}
}

// stageLoad stages one load (see load): it creates the staging table,
// bulk-loads the first batch, and calls ready with the staged columns and
// the decoder of the COPY text of the rest, nil where the server reads it;
// ready returns the rest of the batches.
func (s *session) stageLoad(ctx context.Context, req *request, first [][]any,
	ready func(cols []warehouse.Column, decode func([]byte) ([][]any, error)) (iter.Seq2[rowBatch, error], error)) error {
	if req.Mode != modeAppend && req.Mode != modeReplace {
		return exit.Errorf(exit.Handler, "task.load mode %q: use %q or %q", req.Mode, modeAppend, modeReplace)
	}
	if err := s.use(ctx); err != nil {
		return err
	}
	defer s.idle()
	target, err := s.table(req.Table)
	if err != nil {
		return err
	}
	a, err := warehouse.ActionsOf(s.w)
	if err != nil {
		return err
	}
	tx, err := s.w.Begin(ctx)
	if err != nil {
		return exit.Wrap(exit.Handler, err, "could not begin the load of %s", target.Full())
	}
	defer tx.Rollback()
	existing, err := a.DescribeTable(ctx, tx, target)
	if err != nil {
		return exit.Wrap(exit.Handler, err, "could not describe %s", target.Full())
	}
	cols, err := loadColumns(target, req.Columns, existing, first)
	if err != nil {
		return err
	}
	l := &load{seq: len(s.loads) + 1, target: target, mode: req.Mode, cols: cols}
	l.stage = warehouse.Table{Catalog: target.Catalog, Schema: target.Schema, Name: s.w.Fold(stageName(s.taskID, s.t.AttemptID, l.seq))}
	if _, err := tx.Exec(ctx, s.w.CreateTable(l.stage, cols)); err != nil {
		return exit.Wrap(exit.Handler, err, "could not create the staging table %s", l.stage.Full())
	}
	stageErr := func(err error) error {
		return exit.Wrap(exit.Handler, err, "could not stage the rows for %s", target.Full())
	}
	firstRows, err := jsonRows(target, cols, first)
	if err != nil {
		return err
	}
	n, err := tx.BulkLoad(ctx, l.stage, cols, batchRows(func(yield func(rowBatch, error) bool) { yield(rowBatch{rows: firstRows}, nil) }))
	if err != nil {
		return stageErr(err)
	}
	copier, forward := warehouse.TextCopierOf(tx)
	decode := func(text []byte) ([][]any, error) { return copyRows(target, cols, text) }
	if forward {
		decode = nil
		// The server reads a timestamp's text without a zone in the
		// session's zone; the engine's values without one are UTC.
		if _, err := tx.Exec(ctx, "SET LOCAL TIME ZONE 'UTC'"); err != nil {
			return stageErr(err)
		}
	}
	rest, err := ready(cols, decode)
	if err != nil {
		return err
	}
	var more int64
	switch pl, parts := warehouse.PartLoaderOf(tx); {
	case forward:
		pull, stop := iter.Pull2(rest)
		defer stop()
		more, err = copier.CopyText(ctx, l.stage, cols, &copyReader{pull: pull})
	case parts:
		shared, stop := sharedParts(rest, loadParts)
		defer stop()
		more, err = pl.BulkLoadParts(ctx, l.stage, cols, shared)
	default:
		more, err = tx.BulkLoad(ctx, l.stage, cols, batchRows(rest))
	}
	if err != nil {
		return stageErr(err)
	}
	if err := tx.Commit(); err != nil {
		return exit.Wrap(exit.Handler, err, "could not commit the staging table %s", l.stage.Full())
	}
	l.rows = n + more
	s.loads = append(s.loads, l)
	s.log.Info("rows staged", "target", target.Full(), "mode", l.mode, "rows", l.rows, "staging_table", l.stage.Full())
	return nil
}

// jsonRows converts each value of decoded JSON rows for its column, in
// place.
func jsonRows(target warehouse.Table, cols []warehouse.Column, rows [][]any) ([][]any, error) {
	for _, r := range rows {
		if len(r) != len(cols) {
			return nil, exit.Errorf(exit.Handler, "a row of the load of %s has %d values for its %d columns", target.Full(), len(r), len(cols))
		}
		for i, v := range r {
			var err error
			if r[i], err = loadValue(v, cols[i].Type); err != nil {
				return nil, exit.Wrap(exit.Handler, err, "column %s of the load of %s", cols[i].Name, target.Full())
			}
		}
	}
	return rows, nil
}

// batchRows gives the rows of batches of rows whose values are converted
// for their columns.
func batchRows(batches iter.Seq2[rowBatch, error]) warehouse.Rows {
	return func(yield func([]any, error) bool) {
		for b, err := range batches {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, r := range b.rows {
				if !yield(r, nil) {
					return
				}
			}
		}
	}
}

// loadParts is how many parts of a DuckDB load share the decoded batches:
// two of DuckDB's threads fill its vectors from them beside the goroutine
// decoding them, where its appender would use one; a single stream of
// batches gains little from more.
const loadParts = 2

// sharedParts returns n parts that take the batches in turn, a whole batch
// at a time, and the function ending them early. A goroutine hands the
// batches over: DuckDB's threads, which call the parts, cannot resume the
// iterator themselves. The rows of different batches interleave.
func sharedParts(batches iter.Seq2[rowBatch, error], n int) ([]warehouse.Part, func()) {
	type batch struct {
		rows [][]any
		err  error
	}
	ch := make(chan batch)
	done := make(chan struct{})
	go func() {
		defer close(ch)
		for b, err := range batches {
			select {
			case ch <- batch{b.rows, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	parts := make([]warehouse.Part, n)
	for i := range parts {
		var rows [][]any
		parts[i] = func() ([]any, error) {
			for len(rows) == 0 {
				b, more := <-ch
				if !more {
					return nil, nil
				}
				if b.err != nil {
					return nil, b.err
				}
				rows = b.rows
			}
			r := rows[0]
			rows = rows[1:]
			return r, nil
		}
	}
	return parts, func() { close(done) }
}

// copyReader reads the COPY text of the batches pull gives, one after the
// other; the script's failure is an error, which aborts the COPY.
type copyReader struct {
	pull func() (rowBatch, error, bool)
	text []byte
}

func (r *copyReader) Read(p []byte) (int, error) {
	for len(r.text) == 0 {
		b, err, more := r.pull()
		switch {
		case err != nil:
			return 0, err
		case !more:
			return 0, io.EOF
		}
		r.text = b.text
	}
	n := copy(p, r.text)
	r.text = r.text[n:]
	return n, nil
}

// loadColumns chooses the staged columns: those the rows name (the
// target's when they name none), typed as the target's columns, or, for a
// new table, as the first rows' values.
func loadColumns(target warehouse.Table, named *[]string, existing []warehouse.ColumnInfo, first [][]any) ([]warehouse.Column, error) {
	if named == nil {
		if len(existing) == 0 {
			return nil, exit.Errorf(exit.Handler, "task.load into %s, which does not exist, was given rows without column names: pass dicts, or a CSV file with a header", target.Full())
		}
		cols := make([]warehouse.Column, len(existing))
		for i, c := range existing {
			cols[i] = warehouse.Column{Name: c.Name, Type: portable(c.Type)}
		}
		return cols, nil
	}
	if len(*named) == 0 {
		return nil, exit.Errorf(exit.Handler, "task.load into %s was given rows without columns", target.Full())
	}
	cols := make([]warehouse.Column, len(*named))
	for i, name := range *named {
		cols[i].Name = name
		if len(existing) > 0 {
			j := -1
			for k, c := range existing {
				if strings.EqualFold(c.Name, name) {
					j = k
				}
			}
			if j < 0 {
				return nil, exit.Errorf(exit.Handler, "task.load: %s has no column %s", target.Full(), name)
			}
			cols[i] = warehouse.Column{Name: existing[j].Name, Type: portable(existing[j].Type)}
			continue
		}
		cols[i].Type = warehouse.String
		for _, r := range first {
			if i < len(r) && r[i] != nil {
				cols[i].Type = inferred(r[i])
				break
			}
		}
	}
	return cols, nil
}

// publish makes the staged loads of a successful script visible: append
// adds the staged rows to the target (or renames the staging table into
// place when there is no target), replace drops the target and renames the
// staging table in its place. A load an earlier attempt of the task run
// already published, and whose outcome was never recorded, is not
// published again.
//
// Where the warehouse is the Engine DB's own database and the Engine DB's
// role may write the loads' tables (withOutcome), nothing is published
// here: publish returns the function that publishes the loads inside the
// Engine DB transaction recording the attempt's SUCCESS and offset, so all
// commit together or not at all. Otherwise each load is published now, in a
// warehouse transaction of its own that notes it in the ledger, and inTx is
// nil.
func (s *session) publish(ctx context.Context) (loaded int64, inTx func(context.Context, *engine.Tx) error, err error) {
	if len(s.loads) == 0 {
		return 0, nil, nil
	}
	if s.withOutcome(ctx) {
		return s.publishWithOutcome(ctx)
	}
	for _, l := range s.loads {
		n, err := s.publishOne(ctx, l)
		if err != nil {
			return loaded, nil, err
		}
		loaded += n
	}
	return loaded, nil, fault.Point(FaultAfterLoad)
}

// withOutcome reports whether the loads publish in the Engine DB
// transaction that records the attempt's outcome: the warehouse is in the
// Engine DB's own PostgreSQL database (clone.SameDatabase), and the Engine
// DB's role may do what publishing every load does (engineMayPublish). It
// logs which path the loads take, and why.
func (s *session) withOutcome(ctx context.Context) bool {
	twoSteps := func(why string, args ...any) bool {
		s.log.Info("the loads publish in the warehouse before the attempt's outcome and offset commit in the Engine DB: "+why, args...)
		return false
	}
	if err := s.use(ctx); err != nil {
		return twoSteps("the warehouse could not be asked whether it is the Engine DB's database", "error", err)
	}
	defer s.idle()
	same, _, err := clone.SameDatabase(ctx, s.h.db, warehouse.Kind(s.w.Name()), s.w)
	switch {
	case err != nil:
		return twoSteps("it could not be told whether the warehouse is the Engine DB's database", "error", err)
	case !same:
		return twoSteps("the warehouse is not the Engine DB's database")
	}
	for _, l := range s.loads {
		why, err := s.engineMayPublish(ctx, l)
		if err != nil {
			why = err.Error()
		}
		if why != "" {
			return twoSteps("the warehouse is the Engine DB's database, but the Engine DB's role cannot publish the load there",
				"target", l.target.Full(), "reason", why)
		}
	}
	s.log.Info("the loads publish in the Engine DB transaction that records the attempt's SUCCESS and offset: the warehouse is the Engine DB's database")
	return true
}

// rightsQuery tells, through the Engine DB, what its role may do in a
// schema of its database ($1) to two tables of it ($2, $3): its name,
// USAGE on the schema, and for each table whether it exists, whether the
// role owns it (or is a member of its owner), and whether it may insert
// into it.
const rightsQuery = `SELECT current_user, has_schema_privilege(n.oid, 'USAGE'),
	COALESCE(bool_or(c.relname = $2), false), COALESCE(bool_or(c.relname = $2 AND pg_has_role(c.relowner, 'USAGE')), false),
	COALESCE(bool_or(c.relname = $3), false), COALESCE(bool_or(c.relname = $3 AND pg_has_role(c.relowner, 'USAGE')), false),
	COALESCE(bool_or(c.relname = $3 AND has_table_privilege(c.oid, 'INSERT')), false)
FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relname IN ($2, $3)
WHERE n.nspname = $1 GROUP BY n.oid`

// engineMayPublish returns why the Engine DB's role cannot publish a load
// in its own database, "" when it can: it needs USAGE on the schema and to
// own the staging table (which it drops or renames), and, for an existing
// target, to own it when it replaces it or to insert into it when it
// appends to it.
func (s *session) engineMayPublish(ctx context.Context, l *load) (string, error) {
	schema := s.w.Fold(l.target.Schema)
	var role string
	var usage, stage, ownsStage, target, ownsTarget, inserts bool
	if err := s.h.db.QueryRowContext(ctx, rightsQuery, schema, l.stage.Name, l.target.Name).
		Scan(&role, &usage, &stage, &ownsStage, &target, &ownsTarget, &inserts); err != nil {
		return "", exit.Wrap(exit.EngineDB, err, "could not read what the Engine DB's role may do in schema %s", schema)
	}
	switch {
	case !usage:
		return fmt.Sprintf("role %s has no USAGE on schema %s", role, schema), nil
	case !stage:
		return fmt.Sprintf("role %s does not see the staging table %s", role, l.stage.Full()), nil
	case !ownsStage:
		return fmt.Sprintf("role %s does not own the staging table %s", role, l.stage.Full()), nil
	case target && l.mode == modeReplace && !ownsTarget:
		return fmt.Sprintf("role %s does not own %s, which replace drops", role, l.target.Full()), nil
	case target && l.mode == modeAppend && !inserts:
		return fmt.Sprintf("role %s has no INSERT on %s", role, l.target.Full()), nil
	}
	return "", nil
}

// publishWithOutcome reads the ledger of each load (where an earlier
// attempt of the task run that published in two steps may have noted it),
// and returns the function publishing the loads in the Engine DB
// transaction that records the attempt's SUCCESS, with fully qualified
// names. There the loads' targets are guarded first, as a warehouse
// transaction guards them (the Engine DB is the warehouse's database), and
// read only then: loads of other tasks publishing into the same targets at
// once publish one after the other, each seeing the target the one before
// it left. The loads are not noted in the ledger: they commit with the
// outcome, so no retry can find them published and not recorded.
func (s *session) publishWithOutcome(ctx context.Context) (int64, func(context.Context, *engine.Tx) error, error) {
	if err := s.use(ctx); err != nil {
		return 0, nil, err
	}
	defer s.idle()
	a, err := warehouse.ActionsOf(s.w)
	if err != nil {
		return 0, nil, err
	}
	tx, err := s.w.Begin(ctx)
	if err != nil {
		return 0, nil, exit.Wrap(exit.Handler, err, "could not begin reading the loads' tables")
	}
	defer tx.Rollback()
	var loaded int64
	done := make([]bool, len(s.loads))
	targets := make([]warehouse.Table, len(s.loads))
	for i, l := range s.loads {
		ledger := s.ledger(l)
		noted, err := a.DescribeTable(ctx, tx, ledger)
		if err != nil {
			return 0, nil, exit.Wrap(exit.Handler, err, "could not describe the load ledger %s", ledger.Full())
		}
		if len(noted) > 0 {
			if done[i], err = s.published(ctx, tx, ledger, l); err != nil {
				return 0, nil, err
			}
		}
		targets[i] = l.target
		loaded += l.rows
	}
	w := s.w // the dialect, once the warehouse is given back
	return loaded, func(ctx context.Context, etx *engine.Tx) error {
		failed := func(l *load, err error) error {
			return exit.Wrap(exit.Handler, err, "could not publish the load of %s in the Engine DB transaction recording the attempt's SUCCESS", l.target.Full())
		}
		for _, st := range warehouse.GuardStatements(w, targets...) {
			if err := etx.ExecRaw(ctx, st); err != nil {
				return failed(s.loads[0], err)
			}
		}
		for i, l := range s.loads {
			exists, err := tableExists(ctx, etx, w, l.target)
			if err != nil {
				return failed(l, err)
			}
			for _, st := range publishStatements(w, l, exists, done[i]) {
				if err := etx.ExecRaw(ctx, st); err != nil {
					return failed(l, err)
				}
			}
		}
		return fault.Point(FaultAfterLoad)
	}, nil
}

// tableExists reports whether the table t of the warehouse d exists, read
// in the Engine DB transaction tx in the warehouse's own database.
func tableExists(ctx context.Context, tx *engine.Tx, d warehouse.Dialect, t warehouse.Table) (bool, error) {
	q, args := warehouse.ColumnsQuery(d, t)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	return rows.Next(), rows.Err()
}

// ledger is the load ledger in a load's target schema.
func (s *session) ledger(l *load) warehouse.Table {
	return warehouse.Table{Catalog: l.target.Catalog, Schema: l.target.Schema, Name: s.w.Fold(ledgerName)}
}

// publishStatements returns the statements publishing a load into its
// target, which exists or not; for a load an earlier attempt published
// (done), the one dropping its staging table.
func publishStatements(d warehouse.Dialect, l *load, exists, done bool) []string {
	q := func(t warehouse.Table) string { return warehouse.Qualify(d, t) }
	switch {
	case done:
		return []string{"DROP TABLE IF EXISTS " + q(l.stage)}
	case l.mode == modeAppend && exists:
		names := make([]string, len(l.cols))
		for i, c := range l.cols {
			names[i] = d.Quote(c.Name)
		}
		list := strings.Join(names, ", ")
		return []string{"INSERT INTO " + q(l.target) + " (" + list + ") SELECT " + list + " FROM " + q(l.stage),
			"DROP TABLE " + q(l.stage)}
	case exists: // replace
		return []string{"DROP TABLE " + q(l.target), "ALTER TABLE " + q(l.stage) + " RENAME TO " + d.Quote(l.target.Name)}
	}
	return []string{"ALTER TABLE " + q(l.stage) + " RENAME TO " + d.Quote(l.target.Name)}
}

// publishOne publishes one load in a warehouse transaction of its own that
// notes it in the ledger.
func (s *session) publishOne(ctx context.Context, l *load) (int64, error) {
	if err := s.use(ctx); err != nil {
		return 0, err
	}
	defer s.idle()
	a, err := warehouse.ActionsOf(s.w)
	if err != nil {
		return 0, err
	}
	// The ledger and the target are guarded: loads publishing at once, of
	// this task or others, create the ledger (and a new target) once, and
	// publish one after the other.
	ledger := s.ledger(l)
	tx, err := s.w.Begin(ctx, ledger, l.target)
	if err != nil {
		return 0, exit.Wrap(exit.Handler, err, "could not begin publishing the load of %s", l.target.Full())
	}
	defer tx.Rollback()
	q := func(t warehouse.Table) string { return warehouse.Qualify(s.w, t) }
	if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+q(ledger)+" (task_run_id BIGINT, attempt_id BIGINT, load_number INTEGER, "+
		"target VARCHAR(1000), load_mode VARCHAR(20), loaded_rows BIGINT)"); err != nil {
		return 0, exit.Wrap(exit.Handler, err, "could not create the load ledger %s", ledger.Full())
	}
	done, err := s.published(ctx, tx, ledger, l)
	if err != nil {
		return 0, err
	}
	existing, err := a.DescribeTable(ctx, tx, l.target)
	if err != nil {
		return 0, exit.Wrap(exit.Handler, err, "could not describe %s", l.target.Full())
	}
	for _, st := range publishStatements(s.w, l, len(existing) > 0, done) {
		if _, err := tx.Exec(ctx, st); err != nil {
			return 0, exit.Wrap(exit.Handler, err, "could not publish the load of %s", l.target.Full())
		}
	}
	if done {
		return l.rows, exit.Wrap(exit.Handler, tx.Commit(), "could not drop the staging table %s", l.stage.Full())
	}
	if _, err := tx.Exec(ctx, "INSERT INTO "+q(ledger)+" (task_run_id, attempt_id, load_number, target, load_mode, loaded_rows) VALUES ("+
		s.w.Placeholder(1, warehouse.BigInt)+", "+s.w.Placeholder(2, warehouse.BigInt)+", "+s.w.Placeholder(3, warehouse.BigInt)+", "+
		s.w.Placeholder(4, warehouse.String)+", "+s.w.Placeholder(5, warehouse.String)+", "+s.w.Placeholder(6, warehouse.BigInt)+")",
		s.t.TaskRunID, s.t.AttemptID, l.seq, strings.ToLower(l.target.Full()), l.mode, l.rows); err != nil {
		return 0, exit.Wrap(exit.Handler, err, "could not note the load of %s in %s", l.target.Full(), ledger.Full())
	}
	if err := tx.Commit(); err != nil {
		return 0, exit.Wrap(exit.Handler, err, "could not commit the load of %s", l.target.Full())
	}
	s.log.Info("load published", "target", l.target.Full(), "mode", l.mode, "rows", l.rows)
	return l.rows, nil
}

// published reports whether an earlier attempt of this task run published
// the same load (number, target) and its outcome was never recorded
// SUCCESS: the rows are in the target already.
func (s *session) published(ctx context.Context, tx warehouse.Tx, ledger warehouse.Table, l *load) (bool, error) {
	rows, err := tx.Query(ctx, "SELECT attempt_id, loaded_rows FROM "+warehouse.Qualify(s.w, ledger)+" WHERE task_run_id = "+
		s.w.Placeholder(1, warehouse.BigInt)+" AND load_number = "+s.w.Placeholder(2, warehouse.BigInt)+" AND target = "+
		s.w.Placeholder(3, warehouse.String)+" AND attempt_id <> "+s.w.Placeholder(4, warehouse.BigInt),
		s.t.TaskRunID, l.seq, strings.ToLower(l.target.Full()), s.t.AttemptID)
	if err != nil {
		return false, exit.Wrap(exit.Handler, err, "could not read the load ledger %s", ledger.Full())
	}
	type earlier struct{ attempt, rows int64 }
	var found []earlier
	for rows.Next() {
		var e earlier
		if err := rows.Scan(&e.attempt, &e.rows); err != nil {
			rows.Close()
			return false, err
		}
		found = append(found, e)
	}
	rows.Close()
	for _, e := range found {
		var status records.AttemptStatus
		err := s.h.db.QueryRowContext(ctx, "SELECT STATUS FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = $1", e.attempt).Scan(&status)
		if err != nil {
			return false, exit.Wrap(exit.EngineDB, err, "could not read attempt_id=%d", e.attempt)
		}
		if status != records.AttemptSuccess {
			s.log.Warn("an earlier attempt published this load but its outcome was never recorded SUCCESS: the load is not published again",
				"target", l.target.Full(), "attempt_id", e.attempt, "rows", e.rows)
			l.rows = e.rows
			return true, nil
		}
	}
	return false, nil
}

// dropStale drops the staging tables of this task left by attempts that
// are no longer active (a killed supervisor's), in every schema.
func (s *session) dropStale(ctx context.Context) error {
	if err := s.use(ctx); err != nil {
		return err
	}
	defer s.idle()
	tx, err := s.w.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.Query(ctx, "SELECT table_schema, table_name FROM information_schema.tables WHERE lower(table_name) LIKE 'etl\\_load\\_%' ESCAPE '\\'")
	if err != nil {
		return err
	}
	var stale []warehouse.Table
	for rows.Next() {
		var schema, name string
		if err := rows.Scan(&schema, &name); err != nil {
			rows.Close()
			return err
		}
		task, attempt, ok := stageAttempt(name)
		if !ok || task != s.taskID || attempt == s.t.AttemptID {
			continue
		}
		var active int
		err := s.h.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_ID = $1 AND STATUS IN ("+
			records.SQLActiveAttempts+")", attempt).Scan(&active)
		if err != nil || active > 0 {
			continue
		}
		stale = append(stale, warehouse.Table{Catalog: s.w.Catalog(), Schema: schema, Name: name})
	}
	rows.Close()
	for _, t := range stale {
		if _, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+warehouse.Qualify(s.w, t)); err != nil {
			return err
		}
		s.log.Info("dropped the staging table of an earlier attempt", "table", t.Full())
	}
	return tx.Commit()
}

// dropStages drops this attempt's staging tables (the script failed).
func (s *session) dropStages(ctx context.Context) {
	if len(s.loads) == 0 {
		return
	}
	if err := s.use(ctx); err != nil {
		return
	}
	defer s.idle()
	for _, l := range s.loads {
		tx, err := s.w.Begin(ctx)
		if err != nil {
			return
		}
		tx.Exec(ctx, "DROP TABLE IF EXISTS "+warehouse.Qualify(s.w, l.stage))
		tx.Commit()
	}
}
