package run

import "context"

// Pool is a worker pool shared by every run one process supervises at once
// (the server's): at most its size of attempts run at a time across those
// runs. A task waiting for a worker has claimed nothing yet; waiting
// retries and gates never take one.
type Pool struct {
	slots chan struct{}
}

// NewPool returns a pool of n workers (at least 1).
func NewPool(n int) *Pool {
	return &Pool{slots: make(chan struct{}, max(n, 1))}
}

// acquire waits for a free worker. It gives up, returning false, when ctx
// ends or stop is closed (the server winds down): nothing more starts. A nil
// Pool has a worker for every attempt its run allows.
func (p *Pool) acquire(ctx context.Context, stop <-chan struct{}) bool {
	if p == nil {
		return true
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
	select {
	case <-stop: // both were ready: stopping wins
		p.release()
		return false
	default:
		return true
	}
}

// Size is how many workers the pool has.
func (p *Pool) Size() int { return cap(p.slots) }

// Busy is how many of its workers run an attempt now.
func (p *Pool) Busy() int { return len(p.slots) }

// release gives a worker back.
func (p *Pool) release() {
	if p != nil {
		<-p.slots
	}
}
