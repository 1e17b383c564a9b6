package run

import (
	"context"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/lock"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// WarehouseLinger is how long a DuckDB file stays open after its last user
// is done, so the next task of a chain does not pay for closing and opening
// it again.
const WarehouseLinger = time.Second

// SharedWarehouse gives the attempts of this process one warehouse
// connection. A DuckDB file has one writer process at a time: it is opened
// only while this process holds the Engine DB's warehouse lock, taken when
// the first attempt needs it and given back, with the file, once no attempt
// has used it for WarehouseLinger, so writers of other processes queue on
// the lock. Other warehouses are opened on first use and stay open until
// Close.
type SharedWarehouse struct {
	// CheckTarget, when set, is how Check checks the schema it is given
	// once the warehouse answers: the command sets clone.CheckTarget. Nil
	// checks no schema.
	CheckTarget func(ctx context.Context, w warehouse.Warehouse, schema string) error

	db   *engine.DB
	opts warehouse.Options

	mu    sync.Mutex
	w     warehouse.Warehouse
	held  *lock.Held
	users int
	idle  *time.Timer
}

// NewSharedWarehouse returns the warehouse source of the options; db holds
// the warehouse lock.
func NewSharedWarehouse(db *engine.DB, opts warehouse.Options) *SharedWarehouse {
	return &SharedWarehouse{db: db, opts: opts}
}

// singleWriter reports whether the warehouse is a DuckDB file.
func (s *SharedWarehouse) singleWriter() bool {
	return s.opts.Kind == warehouse.DuckDB && s.opts.Path != ""
}

// Acquire returns the warehouse and the function that gives it back.
func (s *SharedWarehouse) Acquire(ctx context.Context) (warehouse.Warehouse, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if s.w == nil {
		if s.singleWriter() {
			held, err := lock.Acquire(ctx, s.db, lock.Warehouse, 0)
			if err != nil {
				return nil, nil, err
			}
			s.held = held
		}
		w, err := warehouse.Open(ctx, s.opts)
		if err != nil {
			if s.held != nil {
				s.held.Release()
				s.held = nil
			}
			return nil, nil, err
		}
		s.w = w
	}
	s.users++
	var once sync.Once
	return s.w, func() { once.Do(s.release) }, nil
}

// release gives one use back; a DuckDB file left unused for
// WarehouseLinger is closed and its lock given up.
func (s *SharedWarehouse) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.users == 0 && s.singleWriter() {
		s.idle = time.AfterFunc(WarehouseLinger, s.closeIdle)
	}
}

// closeIdle closes the DuckDB file when nobody took it up again.
func (s *SharedWarehouse) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == 0 && s.w != nil {
		s.closeLocked()
	}
}

// closeLocked closes the warehouse and gives up the lock; s.mu is held.
func (s *SharedWarehouse) closeLocked() error {
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	err := s.w.Close()
	s.w = nil
	if s.held != nil {
		s.held.Release()
		s.held = nil
	}
	return err
}

// Check tests the connection and, when schema is not empty (cloning is
// on), the schema the after-run clone writes into, with CheckTarget.
// Without a schema a DuckDB file is not tested, so the test does not queue
// behind the process writing it; with one it is, as the clone will be.
func (s *SharedWarehouse) Check(ctx context.Context, schema string) error {
	if schema == "" && s.opts.Kind == warehouse.DuckDB {
		return nil
	}
	w, release, err := s.Acquire(ctx)
	if err != nil {
		return err
	}
	defer release()
	if err := w.Ping(ctx); err != nil {
		return err
	}
	if schema == "" || s.CheckTarget == nil {
		return nil
	}
	return s.CheckTarget(ctx, w, schema)
}

// Close closes the warehouse when it is open.
func (s *SharedWarehouse) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.w == nil {
		return nil
	}
	return s.closeLocked()
}
