// Package lock gives etl-craft processes named locks that exclude each other
// across processes and machines sharing one Engine DB: "migrate" serializes
// init-db and migrate, "clone" serializes cloning, "warehouse" queues the
// writers of a single-writer warehouse, and Target names the lock of one
// warehouse target.
//
// On PostgreSQL a lock is a transaction-level advisory lock held by a
// connection of its own; on SQLite it is an exclusive OS file lock on
// <database file>.<name>.lock beside the database. Either way the lock ends
// with Release, or with the process when it dies, so a crashed holder never
// leaves it taken.
//
// The PostgreSQL advisory-lock keys are fixed for the engine's own locks
// (migrate 8241007, clone 8241008, warehouse 0x6574637761); a Target name's
// key is the number its 16 hex digits spell, and any other name's key is the
// signed big-endian BLAKE2b digest, 8 bytes long, of the lower-cased name.
package lock

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/blake2b"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// Names of the engine's locks.
const (
	// Migrate serializes init-db and migrate.
	Migrate = "migrate"
	// Clone serializes cloning the Engine DB into the warehouse.
	Clone = "clone"
	// Warehouse queues the writers of a single-writer warehouse (a DuckDB file).
	Warehouse = "warehouse"
)

// Held is a lock this process holds. Release it when the work it guards is
// done; releasing twice does nothing.
type Held struct {
	once    sync.Once
	release func() error
	err     error
	// check reports the lock lost; nil for a lock that lasts as long as
	// the process.
	check func(ctx context.Context) error
}

// Release gives the lock up. A second call does nothing and returns the
// first call's result.
func (h *Held) Release() error {
	h.once.Do(func() { h.err = h.release() })
	return h.err
}

// Check returns an error when the lock was lost without Release: a
// PostgreSQL advisory lock ends with the connection it was taken on, which
// a restart of the database, or an administrator ending the session, cuts.
// A file lock lasts as long as the process, and Check returns nil.
func (h *Held) Check(ctx context.Context) error {
	if h.check == nil {
		return nil
	}
	return h.check(ctx)
}

// Acquire takes the named lock for this Engine DB, waiting at most wait
// (0 or less: until it is free or ctx ends). A lock still taken when the wait ends is
// a LockTimeout error, "timed out after <N>s waiting for <name>"; any other
// failure to take it is an EngineDB error naming the lock. When ctx ends
// first, the error wraps ctx.Err(). The name must not be empty nor hold a
// path separator: on SQLite it is part of a file name.
func Acquire(ctx context.Context, db *engine.DB, name string, wait time.Duration) (*Held, error) {
	return acquire(ctx, db, name, wait, func() {
		slog.InfoContext(ctx, "waiting for a lock held by another etl-craft command", "lock", name)
	})
}

// acquire is Acquire with the function it calls once, when it finds the lock
// taken and starts waiting.
func acquire(ctx context.Context, db *engine.DB, name string, wait time.Duration, waiting func()) (*Held, error) {
	if name == "" || strings.ContainsAny(name, "/\\\x00") {
		return nil, exit.Errorf(exit.Unexpected, "%q is not a valid lock name", name)
	}
	if wait < 0 {
		wait = 0
	}
	if db.Capabilities().Server { // advisory locks on the server; file locks beside a SQLite file
		return acquireAdvisory(ctx, db, name, wait, waiting)
	}
	release, err := acquireFile(ctx, db.Options().Path, name, wait, waiting)
	if err != nil {
		return nil, err
	}
	return &Held{release: release}, nil
}

// Target returns the lock name of a warehouse target ("target-<16 hex>"),
// from the target's qualified name in any letter case.
func Target(qualifiedTarget string) string {
	return fmt.Sprintf("target-%016x", uint64(hashKey(qualifiedTarget)))
}

// fixedKeys are the PostgreSQL advisory-lock keys of the engine's own locks.
var fixedKeys = map[string]int64{
	Migrate:   8241007,
	Clone:     8241008,
	Warehouse: 0x6574637761,
}

// key returns the PostgreSQL advisory-lock key of a lock name: a fixed key
// for the engine's own locks, the key a Target name carries in its hex digits,
// and otherwise the hash of the lower-cased name.
func key(name string) int64 {
	if k, ok := fixedKeys[name]; ok {
		return k
	}
	if hex, ok := strings.CutPrefix(name, "target-"); ok && len(hex) == 16 {
		if k, err := strconv.ParseUint(hex, 16, 64); err == nil {
			return int64(k)
		}
	}
	return hashKey(name)
}

// hashKey returns the signed big-endian 64-bit BLAKE2b digest (8-byte digest
// size) of the lower-cased text.
func hashKey(text string) int64 {
	h, err := blake2b.New(8, nil)
	if err != nil {
		panic(err) // only for a size outside 1..64 or a key longer than 64 bytes
	}
	h.Write([]byte(strings.ToLower(text)))
	return int64(binary.BigEndian.Uint64(h.Sum(nil)))
}

// timedOut is the error of a lock still taken when the wait ended.
func timedOut(name string, wait time.Duration) error {
	return exit.Errorf(exit.LockTimeout,
		"timed out after %ss waiting for %s: another etl-craft command holds that lock; try again when it has finished",
		strconv.FormatFloat(wait.Seconds(), 'f', -1, 64), name)
}

// stopped is the error of a wait that ctx ended.
func stopped(ctx context.Context, name string) error {
	return fmt.Errorf("stopped waiting for the %s lock: %w", name, context.Cause(ctx))
}

// Overseer returns the name of the lock the one server of the Engine DB
// holds: "overseer", beside a SQLite file (<database file>.overseer.lock),
// and "overseer:<schema>" on a PostgreSQL server, whose advisory locks are
// shared by every schema of the database.
func Overseer(db *engine.DB) string {
	if db.Capabilities().Server {
		return "overseer:" + db.Schema()
	}
	return "overseer"
}
