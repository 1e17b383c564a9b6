package lock

import (
	"context"
	"time"

	"github.com/gofrs/flock"

	"github.com/etl-craft/etl-craft/internal/exit"
)

// retryDelay is how often a busy file lock is tried again.
const retryDelay = 50 * time.Millisecond

// acquireFile takes an exclusive OS file lock on <dbPath>.<name>.lock,
// created when missing, trying every retryDelay without blocking. The OS
// releases the lock when the process dies.
func acquireFile(ctx context.Context, dbPath, name string, wait time.Duration, waiting func()) (func() error, error) {
	if dbPath == "" {
		return nil, exit.Errorf(exit.EngineDB, "the Engine DB has no file path, so it cannot hold the %s lock", name)
	}
	path := dbPath + "." + name + ".lock"
	f := flock.New(path, flock.SetPermissions(0o666)) // less the umask, like any new file
	got, err := f.TryLock()
	if err == nil && !got {
		waiting()
		tryCtx := ctx
		if wait > 0 {
			var cancel context.CancelFunc
			tryCtx, cancel = context.WithTimeout(ctx, wait)
			defer cancel()
		}
		got, err = f.TryLockContext(tryCtx, retryDelay)
		switch {
		case got:
		case ctx.Err() != nil:
			return nil, stopped(ctx, name)
		case tryCtx.Err() != nil:
			return nil, timedOut(name, wait)
		}
	}
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "could not take the %s lock file %s", name, path)
	}
	return func() error {
		return exit.Wrap(exit.EngineDB, f.Unlock(), "could not release the %s lock file %s", name, path)
	}, nil
}
