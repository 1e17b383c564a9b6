package warehouse

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duckdb/duckdb-go/v2"
)

// A parallel bulk load into DuckDB: the rows come from a table function of
// this process's own (partsFunction), which DuckDB runs on its threads, each
// taking one part at a time and filling DuckDB's vectors from it, into
// INSERT INTO … SELECT * FROM the function, in the transaction's one
// statement. DuckDB then inserts in parallel as well, which its appender,
// fed by one goroutine, does not.

// Part is one part of the rows of a parallel bulk load: each call returns
// the next row's values in column order (the slice may be reused), or nil
// after the last row. One part is read by one thread at a time.
type Part func() ([]any, error)

// PartLoader is a transaction that loads the rows of several parts at once.
type PartLoader interface {
	// BulkLoadParts appends the rows of every part to the existing table t,
	// filling cols, as BulkLoad does, and returns how many it loaded. The
	// first error of a part (or ctx's) stops the load and is returned as it
	// is.
	BulkLoadParts(ctx context.Context, t Table, cols []Column, parts []Part) (int64, error)
}

// PartLoaderOf returns tx's PartLoader when it has one: only a DuckDB
// transaction does.
func PartLoaderOf(tx Tx) (PartLoader, bool) {
	t, ok := tx.(*sqlTx)
	if !ok {
		return nil, false
	}
	if _, ok := t.w.Dialect.(duckdbDialect); !ok {
		return nil, false
	}
	return duckdbParts{tx: t}, true
}

// partsFunction is the name of the table function; its one argument is the
// id of a load in partsLoads.
const partsFunction = "etl_craft_parts"

// partsLoads holds the loads running in this process by id, for the table
// function to find when DuckDB binds it.
var (
	partsLoads  sync.Map // int64 → *partsLoad
	partsLoadID atomic.Int64
)

// duckdbParts is a DuckDB transaction's PartLoader.
type duckdbParts struct{ tx *sqlTx }

func (p duckdbParts) BulkLoadParts(ctx context.Context, t Table, cols []Column, parts []Part) (int64, error) {
	if len(cols) == 0 {
		return 0, fmt.Errorf("a bulk load needs at least one column")
	}
	l := &partsLoad{ctx: ctx, cols: cols, parts: parts, threads: len(parts)}
	id := partsLoadID.Add(1)
	partsLoads.Store(id, l)
	defer partsLoads.Delete(id)
	// DuckDB inserts in parallel only rows whose order need not be kept; a
	// mirror's rows have no order. The setting is this connection's, and
	// is put back when the transaction ends.
	if _, err := p.tx.q.ExecContext(ctx, "SET SESSION preserve_insertion_order = false"); err != nil {
		return 0, err
	}
	if reset := "RESET SESSION preserve_insertion_order"; !slices.Contains(p.tx.after, reset) {
		p.tx.after = append(p.tx.after, reset)
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = p.tx.w.Quote(c.Name)
	}
	_, err := p.tx.q.ExecContext(ctx, "INSERT INTO "+Qualify(p.tx.w, t)+" ("+strings.Join(names, ", ")+
		") SELECT * FROM "+partsFunction+"("+strconv.FormatInt(id, 10)+")")
	if lerr := l.error(); lerr != nil {
		return 0, lerr
	}
	if err != nil {
		return 0, err
	}
	return l.loaded.Load(), nil
}

// registerParts registers the table function in a database just opened,
// before anything else uses it: once per database, as registering changes
// the catalog, which two registrations at once (two loads starting
// together) would both change, and one of them fail.
func registerParts(db *sql.DB) error {
	conn, err := db.Conn(context.Background())
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := duckdb.RegisterTableUDF(conn, partsFunction, duckdb.ParallelChunkTableFunction{
		Config:        duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{duckdbTypeInfo(BigInt)}},
		BindArguments: bindParts,
	}); err != nil {
		return fmt.Errorf("registering the DuckDB table function %s: %w", partsFunction, err)
	}
	return nil
}

// bindParts finds the load whose id the table function is called with.
func bindParts(_ map[string]any, args ...any) (duckdb.ParallelChunkTableSource, error) {
	id, _ := args[0].(int64)
	l, ok := partsLoads.Load(id)
	if !ok {
		return nil, fmt.Errorf("%s: no bulk load %v is running", partsFunction, args[0])
	}
	return l.(*partsLoad), nil
}

// partsLoad is one parallel bulk load: the parts not yet taken by a DuckDB
// thread, and the first error.
type partsLoad struct {
	ctx     context.Context
	cols    []Column
	threads int
	loaded  atomic.Int64
	failed  atomic.Bool

	mu    sync.Mutex
	parts []Part
	err   error
}

// fail records err unless an error is recorded already, and returns the
// first one.
func (l *partsLoad) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
		l.failed.Store(true)
	}
	return l.err
}

func (l *partsLoad) error() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// take hands a thread the next part nobody reads yet; nil when none is left.
func (l *partsLoad) take() Part {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.parts) == 0 {
		return nil
	}
	p := l.parts[0]
	l.parts = l.parts[1:]
	return p
}

// duckdbTypeInfo is the DuckDB type of the function's column of type t: the type
// DuckDB's mirror of t has (see duckdbDialect.TypeName).
func duckdbTypeInfo(t Type) duckdb.TypeInfo {
	var ti duckdb.TypeInfo
	var err error
	switch t {
	case Decimal:
		ti, err = duckdb.NewDecimalInfo(38, DecimalScale)
	case BigInt:
		ti, err = duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	case Boolean:
		ti, err = duckdb.NewTypeInfo(duckdb.TYPE_BOOLEAN)
	case Date:
		ti, err = duckdb.NewTypeInfo(duckdb.TYPE_DATE)
	case Timestamp:
		ti, err = duckdb.NewTypeInfo(duckdb.TYPE_TIMESTAMP_TZ)
	default:
		ti, err = duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	}
	if err != nil {
		panic(fmt.Sprintf("warehouse: DuckDB type of %s: %v", t, err)) // fixed types: never
	}
	return ti
}

// ColumnInfos names the function's columns c0, c1, …: the INSERT names the
// table's.
func (l *partsLoad) ColumnInfos() []duckdb.ColumnInfo {
	out := make([]duckdb.ColumnInfo, len(l.cols))
	for i, c := range l.cols {
		out[i] = duckdb.ColumnInfo{Name: "c" + strconv.Itoa(i), T: duckdbTypeInfo(c.Type)}
	}
	return out
}

// Cardinality is unknown.
func (l *partsLoad) Cardinality() *duckdb.CardinalityInfo { return nil }

// Init lets DuckDB run one thread per part.
func (l *partsLoad) Init() duckdb.ParallelTableSourceInfo {
	return duckdb.ParallelTableSourceInfo{MaxThreads: l.threads}
}

// partThread is a DuckDB thread's state: the part it reads, and its row of
// canonical values.
type partThread struct {
	part Part
	row  []any
}

// NewLocalState starts a DuckDB thread with no part.
func (l *partsLoad) NewLocalState() any { return &partThread{} }

// FillChunk fills a chunk with the next rows of the thread's part, taking
// the next part when it ends; a chunk of no rows ends the thread. Every part
// is read to its end by some thread, however many DuckDB runs.
func (l *partsLoad) FillChunk(state any, chunk duckdb.DataChunk) error {
	th := state.(*partThread)
	if l.failed.Load() {
		return l.error()
	}
	if err := l.ctx.Err(); err != nil {
		return l.fail(err)
	}
	capacity := duckdb.GetDataChunkCapacity()
	n := 0
	for n < capacity {
		if th.part == nil {
			if th.part = l.take(); th.part == nil {
				break
			}
		}
		row, err := th.part()
		if err == nil && row == nil {
			th.part = nil
			continue
		}
		if err == nil {
			th.row, err = canonicalRow(th.row[:0], l.cols, row)
		}
		for i := 0; err == nil && i < len(th.row); i++ {
			err = chunk.SetValue(i, n, duckdbValue(th.row[i]))
		}
		if err != nil {
			return l.fail(err)
		}
		n++
	}
	l.loaded.Add(int64(n))
	return chunk.SetSize(n)
}
