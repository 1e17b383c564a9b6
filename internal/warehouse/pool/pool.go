// Package pool shares one warehouse connection among the writers of this
// process (the attempts of runs, and clones) and, on a single-writer
// warehouse, queues the writers of every process on the Engine DB's
// warehouse lock.
package pool

import (
	"context"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Linger is how long a single-writer warehouse (a DuckDB file) stays open
// after its last user is done, so the next task of a chain does not pay for
// closing and opening it again.
const Linger = time.Second

// Pool gives the writers of this process one warehouse connection. A
// single-writer warehouse (a DuckDB file) has one writer process at a time:
// it is opened only while this process holds the Engine DB's warehouse
// lock, taken when the first writer needs it and given back, with the file,
// once nobody has used it for Linger, so writers of other processes queue
// on the lock. Other warehouses are opened on first use and stay open until
// Close.
type Pool struct {
	// CheckTarget, when set, is how Check checks the schema it is given
	// once the warehouse answers (project sets clone.CheckTarget). Nil
	// checks no schema.
	CheckTarget func(ctx context.Context, w warehouse.Warehouse, schema string) error

	db   *engine.DB
	opts warehouse.Options
	caps warehouse.Capabilities

	mu    sync.Mutex
	w     warehouse.Warehouse
	held  *lock.Held
	users int
	idle  *time.Timer
}

// New returns the pool of the warehouse the options describe; db holds the
// warehouse lock. Nothing connects before the first Acquire.
func New(db *engine.DB, opts warehouse.Options) *Pool {
	p := &Pool{db: db, opts: opts}
	// A dialect the options cannot have fails at Open, with its reason.
	if d, err := warehouse.NewDialect(opts.Kind, opts.TableFormat, opts.Storage); err == nil {
		p.caps = d.Capabilities()
	}
	return p
}

// queues reports whether this process's writers queue with other
// processes' on the warehouse lock: a single-writer warehouse in a file
// (one in memory is this process's alone).
func (p *Pool) queues() bool {
	return p.caps.SingleWriter && p.opts.Path != ""
}

// Acquire returns the warehouse and the function that gives it back. A
// warehouse nobody uses whose file is no longer the one it opened
// (Warehouse.Verify) is closed and opened again.
func (p *Pool) Acquire(ctx context.Context) (warehouse.Warehouse, func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.idle != nil {
		p.idle.Stop()
		p.idle = nil
	}
	if p.w != nil && p.users == 0 && p.w.Verify() != nil {
		// Its file was removed or replaced while it lingered: open the one
		// at the path now.
		p.closeLocked()
	}
	if p.w == nil {
		if p.queues() {
			held, err := lock.Acquire(ctx, p.db, lock.Warehouse, 0)
			if err != nil {
				return nil, nil, err
			}
			p.held = held
		}
		w, err := warehouse.Open(ctx, p.opts)
		if err != nil {
			if p.held != nil {
				p.held.Release()
				p.held = nil
			}
			return nil, nil, err
		}
		p.w = w
	}
	p.users++
	var once sync.Once
	return p.w, func() { once.Do(p.release) }, nil
}

// release gives one use back; a single-writer file left unused for Linger
// is closed and its lock given up.
func (p *Pool) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users--
	if p.users == 0 && p.queues() {
		p.idle = time.AfterFunc(Linger, p.closeIdle)
	}
}

// closeIdle closes the single-writer file when nobody took it up again.
func (p *Pool) closeIdle() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.users == 0 && p.w != nil {
		p.closeLocked()
	}
}

// closeLocked closes the warehouse and gives up the lock; p.mu is held.
func (p *Pool) closeLocked() error {
	if p.idle != nil {
		p.idle.Stop()
		p.idle = nil
	}
	err := p.w.Close()
	p.w = nil
	if p.held != nil {
		p.held.Release()
		p.held = nil
	}
	return err
}

// Check tests the connection and, when schema is not empty (cloning is
// on), the schema the after-run clone writes into, with CheckTarget.
// Without a schema a single-writer warehouse is not tested, so the test
// does not queue behind the process writing it; with one it is, as the
// clone will be.
func (p *Pool) Check(ctx context.Context, schema string) error {
	if schema == "" && p.caps.SingleWriter {
		return nil
	}
	w, release, err := p.Acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	if err := w.Ping(ctx); err != nil {
		return err
	}
	if schema == "" || p.CheckTarget == nil {
		return nil
	}
	return p.CheckTarget(ctx, w, schema)
}

// Close closes the warehouse when it is open.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w == nil {
		return nil
	}
	return p.closeLocked()
}
