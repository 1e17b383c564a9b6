package warehouse

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
)

// Guarding the objects a transaction creates or writes.
//
// Handlers create objects in the warehouse on first use (a target, the
// load ledger, a ROW_ID sequence) and write their targets, and tasks
// running at once may do either for the same object. Two transactions
// creating one table at once fail on every warehouse (DuckDB: a catalog
// write-write conflict; PostgreSQL: a duplicate key in pg_type), and two
// replacing or merging into one target at once fail or leave what neither
// would alone. So a transaction names the objects it will create or write
// when it begins (Begin's guard), and holds them until it ends: the
// transactions guarding one object run one after the other, and each sees
// what the one before it committed, as tasks run one by one would.
//
// In this process an object's guard is a lock of its own, taken before the
// transaction begins (a DuckDB transaction sees the catalog as it was when
// it began). A warehouse other processes write at once (PostgreSQL) also
// takes a transaction-level advisory lock per object, right after BEGIN,
// which the server releases with the transaction or the connection.

// guardLocks are this process's guards, by warehouse and object.
var guardLocks = struct {
	sync.Mutex
	held map[string]*guardLock
}{held: map[string]*guardLock{}}

// guardLock is one object's guard: a token channel, so a wait can end with
// its context, and how many transactions hold or wait for it.
type guardLock struct {
	token chan struct{}
	refs  int
}

// guardName is an object's name in the guard of its warehouse: the
// qualified name in lower case, as it is written in SQL.
func guardName(d Dialect, t Table) string { return strings.ToLower(Qualify(d, t)) }

// guardKeys returns the process-wide keys of the objects' guards, without
// duplicates, in the one order every transaction takes them in.
func (w *sqlWarehouse) guardKeys(objects []Table) []string {
	keys := make([]string, 0, len(objects))
	for _, t := range objects {
		keys = append(keys, w.desc+"\x00"+guardName(w, t))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// holdGuards takes this process's guards of the keys in order, waiting at
// most until ctx ends, and returns the function that gives them back.
func holdGuards(ctx context.Context, keys []string) (func(), error) {
	var held []string
	release := func() {
		for _, k := range held {
			releaseGuard(k)
		}
	}
	for _, k := range keys {
		guardLocks.Lock()
		g := guardLocks.held[k]
		if g == nil {
			g = &guardLock{token: make(chan struct{}, 1)}
			guardLocks.held[k] = g
		}
		g.refs++
		guardLocks.Unlock()
		select {
		case g.token <- struct{}{}:
			held = append(held, k)
		case <-ctx.Done():
			forgetGuard(k, g)
			release()
			return nil, fmt.Errorf("stopped waiting for another task writing %s: %w", strings.SplitN(k, "\x00", 2)[1], context.Cause(ctx))
		}
	}
	return release, nil
}

// releaseGuard gives back a guard this process holds.
func releaseGuard(k string) {
	guardLocks.Lock()
	g := guardLocks.held[k]
	guardLocks.Unlock()
	<-g.token
	forgetGuard(k, g)
}

// forgetGuard drops a holder or waiter of g, and g itself after the last.
func forgetGuard(k string, g *guardLock) {
	guardLocks.Lock()
	defer guardLocks.Unlock()
	if g.refs--; g.refs == 0 {
		delete(guardLocks.held, k)
	}
}

// advisoryClass is the first key of the PostgreSQL advisory locks guarding
// objects ("etlc"). The two-key form's locks are apart from the one-key
// form's, which the Engine DB's named locks use, should both live in one
// database.
const advisoryClass = 0x65746c63

// advisoryKey is the second key of an object's advisory lock: the FNV-1a
// hash of its guard name. Two names of one hash only wait for each other.
func advisoryKey(name string) int32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int32(h.Sum32())
}

// postgresGuard takes the transaction-level advisory lock of each object,
// in the order of their keys, so that two transactions never wait for each
// other's.
func postgresGuard(ctx context.Context, tx *sqlTx, objects []Table) error {
	for _, st := range advisoryLocks(tx.w, objects) {
		if _, err := tx.q.ExecContext(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

// advisoryLocks returns the statements taking the objects' advisory locks,
// one per key, in the order of the keys.
func advisoryLocks(d Dialect, objects []Table) []string {
	keys := make([]int32, 0, len(objects))
	for _, t := range objects {
		keys = append(keys, advisoryKey(guardName(d, t)))
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("SELECT pg_advisory_xact_lock(%d, %d)", advisoryClass, k)
	}
	return out
}

// GuardStatements returns the statements that guard the objects across
// processes, as Begin does, in a transaction that writes them on another
// connection to the warehouse's database (the Engine DB's, when the
// warehouse is in it): none where the warehouse guards objects in its own
// process only. Take every object's guard with one call, before the first
// statement writing one.
func GuardStatements(w Warehouse, objects ...Table) []string {
	if sw, ok := w.(*sqlWarehouse); ok && sw.guard != nil {
		return advisoryLocks(w, objects)
	}
	return nil
}

// ColumnsQuery returns the query listing the table's columns (name, type),
// matched without case, and its arguments, for a connection other than the
// warehouse's own to its database; no row means no table.
func ColumnsQuery(d Dialect, t Table) (string, []any) { return d.columnsQuery(t) }
