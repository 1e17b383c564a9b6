package enginetest

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
)

// HoldWriteLock starts another process that holds what a long migration
// holds: on SQLite the database's write lock (BEGIN IMMEDIATE in the
// sqlite3 shell), on PostgreSQL an ACCESS EXCLUSIVE lock on AUD_ACTIONS
// (in psql). It returns once the lock is held; release ends that process's
// transaction and waits for the process to exit. The test's end releases it
// too.
func HoldWriteLock(t testing.TB, opts engine.Options) (release func()) {
	t.Helper()
	var cmd *exec.Cmd
	hold, end := "BEGIN IMMEDIATE;\n", "ROLLBACK;\n.quit\n"
	if opts.Kind == engine.SQLite {
		cmd = exec.Command(Client(t, "sqlite3"), opts.Path)
	} else {
		cmd = exec.Command(Client(t, "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", opts.DSN)
		cmd.Env = append(os.Environ(), "PGOPTIONS=-c search_path="+opts.Schema)
		hold, end = "BEGIN;\nLOCK TABLE AUD_ACTIONS IN ACCESS EXCLUSIVE MODE;\n", "ROLLBACK;\n\\q\n"
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, hold); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		io.WriteString(stdin, end)
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the process holding the lock: %v: %s", err, out.String())
		}
	}
	t.Cleanup(release)
	if err := waitHeld(opts); err != nil {
		release()
		t.Fatalf("the other process did not take the lock: %v: %s", err, out.String())
	}
	return release
}

// waitHeld waits until another connection finds the lock taken.
func waitHeld(opts engine.Options) error {
	var db *sql.DB
	var err error
	probe := "BEGIN IMMEDIATE"
	if opts.Kind == engine.SQLite {
		db, err = sql.Open("sqlite3", opts.Path+"?_busy_timeout=0")
	} else {
		db, err = sql.Open("pgx", opts.DSN+searchPath(opts.DSN, opts.Schema))
		probe = `SELECT 1 / (SELECT COUNT(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE c.relname = 'aud_actions' AND l.mode = 'AccessExclusiveLock' AND l.granted)`
	}
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	for range 500 {
		conn, err := db.Conn(ctx)
		if err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, probe)
		held := err == nil // PostgreSQL: the lock is in pg_locks
		if opts.Kind == engine.SQLite {
			// SQLite: this connection cannot take the write lock.
			held = err != nil
			if err == nil {
				conn.ExecContext(ctx, "ROLLBACK")
			}
		}
		conn.Close()
		if held {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no lock after 10 s")
}
