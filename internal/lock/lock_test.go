package lock

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// short is the wait of an acquire expected to find the lock taken.
const short = 200 * time.Millisecond

// helperVariable makes the test binary a helper process that holds a lock:
// its value is "<kind>\t<path or DSN>\t<lock name>".
const helperVariable = "ETL_CRAFT_LOCK_HELPER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperVariable); spec != "" {
		os.Exit(holdForParent(spec))
	}
	os.Exit(m.Run())
}

// holdForParent opens the Engine DB, takes the lock, says "held" on stdout
// and keeps the lock until stdin closes (or the process is killed).
func holdForParent(spec string) int {
	parts := strings.Split(spec, "\t")
	if len(parts) != 3 {
		fmt.Fprintf(os.Stderr, "bad %s %q\n", helperVariable, spec)
		return 2
	}
	opts := engine.Options{Kind: engine.Kind(parts[0]), Path: parts[1]}
	if opts.Kind == engine.Postgres {
		opts = engine.Options{Kind: engine.Postgres, DSN: parts[1], Schema: "public"}
	}
	ctx := context.Background()
	db, err := engine.Open(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer db.Close()
	h, err := Acquire(ctx, db, parts[2], 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("held")
	bufio.NewReader(os.Stdin).ReadString('\n')
	if err := h.Release(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func mustAcquire(t *testing.T, db *engine.DB, name string, wait time.Duration) *Held {
	t.Helper()
	h, err := Acquire(context.Background(), db, name, wait)
	if err != nil {
		t.Fatalf("acquiring %s: %v", name, err)
	}
	t.Cleanup(func() { h.Release() })
	return h
}

func assertTimedOut(t *testing.T, err error, name string) {
	t.Helper()
	if !exit.Is(err, exit.LockTimeout) {
		t.Fatalf("acquiring a held %s lock: got %v (code %v), want a lock timeout", name, err, exit.CodeOf(err))
	}
	for _, want := range []string{"timed out after 0.2s", "waiting for " + name} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestHolderExcludesOthersUntilReleased(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		first := mustAcquire(t, db, Migrate, short)

		_, err := Acquire(ctx, db, Migrate, short)
		assertTimedOut(t, err, Migrate)

		other := mustAcquire(t, db, Clone, short)
		target := mustAcquire(t, db, Target("wh.public.orders"), short)

		if err := first.Release(); err != nil {
			t.Fatalf("release: %v", err)
		}
		if err := first.Release(); err != nil {
			t.Fatalf("second release: %v", err)
		}
		again := mustAcquire(t, db, Migrate, short)
		_, err = Acquire(ctx, db, Migrate, short)
		assertTimedOut(t, err, Migrate)
		for _, h := range []*Held{again, other, target} {
			if err := h.Release(); err != nil {
				t.Fatalf("release: %v", err)
			}
		}
		mustAcquire(t, db, Migrate, short)
	})
}

// waitResult is what a waiter's acquire returned.
type waitResult struct {
	h   *Held
	err error
}

// startWaiter starts acquiring name with no wait limit in a goroutine and
// returns once that acquire is blocked on the taken lock; its result then
// arrives on the channel.
func startWaiter(t *testing.T, ctx context.Context, db *engine.DB, name string) <-chan waitResult {
	t.Helper()
	waiting := make(chan struct{})
	done := make(chan waitResult, 1)
	go func() {
		h, err := acquire(ctx, db, name, 0, func() { close(waiting) })
		done <- waitResult{h, err}
	}()
	<-waiting
	untilBlocked(t, db)
	return done
}

func TestWaitZeroWaitsUntilFree(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		holder := mustAcquire(t, db, Warehouse, 0)
		done := startWaiter(t, context.Background(), db, Warehouse)
		select {
		case r := <-done:
			t.Fatalf("the waiter returned while the lock was held: %v", r.err)
		default:
		}
		if err := holder.Release(); err != nil {
			t.Fatalf("release: %v", err)
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("waiting for the freed lock: %v", r.err)
		}
		if err := r.h.Release(); err != nil {
			t.Fatalf("release: %v", err)
		}
	})
}

func TestCancelEndsTheWait(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		mustAcquire(t, db, Clone, 0)
		ctx, cancel := context.WithCancel(context.Background())
		done := startWaiter(t, ctx, db, Clone)
		cancel()
		r := <-done
		if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "clone") {
			t.Fatalf("cancelled wait: got %v, want a cancellation naming the lock", r.err)
		}
		mustAcquire(t, db, Target("x"), short) // the connection pool still works
	})
}

// untilBlocked returns once a waiter is blocked on a lock: on PostgreSQL,
// once the server shows an advisory lock not granted; on SQLite the waiter
// is retrying as soon as it has said it is waiting.
func untilBlocked(t *testing.T, db *engine.DB) {
	t.Helper()
	if db.Kind() != engine.Postgres {
		return
	}
	for {
		var waiters int
		err := db.QueryRowContext(context.Background(),
			"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted").Scan(&waiters)
		if err != nil {
			t.Fatalf("reading pg_locks: %v", err)
		}
		if waiters > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestOtherProcesses(t *testing.T) {
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		where := db.Options().Path
		if db.Kind() == engine.Postgres {
			where = db.Options().DSN
		}
		helper := exec.Command(os.Args[0], "-test.run=^$")
		helper.Env = append(os.Environ(), helperVariable+"="+strings.Join([]string{string(db.Kind()), where, Migrate}, "\t"))
		helper.Stderr = os.Stderr
		stdin, err := helper.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := helper.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := helper.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { stdin.Close(); helper.Process.Kill(); helper.Wait() })
		if line, err := bufio.NewReader(stdout).ReadString('\n'); line != "held\n" {
			t.Fatalf("helper process did not take the lock: %q, %v", line, err)
		}

		_, err = Acquire(context.Background(), db, Migrate, short)
		assertTimedOut(t, err, Migrate)

		if err := helper.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		helper.Wait()
		// The server or the OS frees the dead holder's lock; the test's own
		// deadline stops a wait that would never end.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		h, err := Acquire(ctx, db, Migrate, 0)
		if err != nil {
			t.Fatalf("acquiring the lock of a killed holder: %v", err)
		}
		if err := h.Release(); err != nil {
			t.Fatal(err)
		}
	})
}

func TestFileLockNeedsAPath(t *testing.T) {
	_, err := acquireFile(context.Background(), "", Migrate, short, func() {})
	if !exit.Is(err, exit.EngineDB) || !strings.Contains(err.Error(), "has no file path") {
		t.Fatalf("got %v, want an Engine DB error saying it has no file path", err)
	}
}

func TestFileLockBesideTheDatabase(t *testing.T) {
	db := enginetest.Open(t, engine.SQLite)
	h := mustAcquire(t, db, Clone, short)
	if _, err := os.Stat(db.Options().Path + ".clone.lock"); err != nil {
		t.Fatalf("lock file: %v", err)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidName(t *testing.T) {
	db := enginetest.Open(t, engine.SQLite)
	for _, name := range []string{"", "a/b", `a\b`} {
		if _, err := Acquire(context.Background(), db, name, short); err == nil || !strings.Contains(err.Error(), "not a valid lock name") {
			t.Errorf("name %q: got %v, want it refused", name, err)
		}
	}
}

func TestKeys(t *testing.T) {
	cases := map[string]int64{
		Migrate:                   8241007,
		Clone:                     8241008,
		Warehouse:                 0x6574637761,         // "etcwa"
		"target-bd9bed886b7ed609": -4783969008976210423, // its hex digits as a signed int64
	}
	for name, want := range cases {
		if got := key(name); got != want {
			t.Errorf("key(%q) = %d, want %d", name, got, want)
		}
	}
	// BLAKE2b with an 8-byte digest of "wh.public.orders" is bd9bed886b7ed609.
	if got := Target("WH.Public.Orders"); got != "target-bd9bed886b7ed609" {
		t.Errorf("Target = %q, want target-bd9bed886b7ed609", got)
	}
	if key("overseer:main") != key("OVERSEER:MAIN") || key("overseer:main") == key("overseer:other") {
		t.Error("hashed keys must ignore letter case and tell names apart")
	}
}
