package maintenance

import (
	"context"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// outageDB returns a PostgreSQL Engine DB on a cluster of the test's own,
// which the test stops and starts.
func outageDB(t *testing.T) (*engine.DB, *enginetest.Cluster) {
	t.Helper()
	c := enginetest.NewCluster(t)
	db := enginetest.OpenWith(t, engine.Options{Kind: engine.Postgres, DSN: c.NewDatabase("engine"), Schema: "public"})
	pipelinetest.Init(t, db)
	return db, c
}

// advisoryLocks counts the advisory locks granted on the cluster.
func advisoryLocks(t *testing.T, db *engine.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The Engine DB restarts under a leader: its advisory lock ends with its
// connection, and the leader takes it again once the database is back, so
// a second server is still refused.
func TestLeaderTakesItsLockAgainAfterAnOutage(t *testing.T) {
	t.Parallel()
	db, c := outageDB(t)
	ctx := context.Background()
	first := &Leader{DB: db, Every: 50 * time.Millisecond}
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer first.Stop()
	c.Outage(2 * time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for advisoryLocks(t, db) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the leader did not take its lock again after the outage")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := (&Leader{DB: db}).Start(ctx); exit.CodeOf(err) != exit.LockTimeout {
		t.Fatalf("a second leader after the outage: %v", err)
	}
}

// Another server took the lock while it was lost: the first leader says it
// is no longer the overseer, once, and stops checking.
func TestLeaderThatLostItsLockToAnotherIsDeposed(t *testing.T) {
	t.Parallel()
	db, c := outageDB(t)
	ctx := context.Background()
	var lost []error
	first := &Leader{DB: db, Every: time.Hour, Lost: func(err error) { lost = append(lost, err) }}
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer first.Stop()
	c.Outage(time.Second)
	second := &Leader{DB: db, Every: time.Hour}
	if err := second.Start(ctx); err != nil {
		t.Fatalf("a second leader while the first's lock is lost: %v", err)
	}
	defer second.Stop()
	first.check(ctx)
	first.check(ctx)
	if len(lost) != 1 || exit.CodeOf(lost[0]) != exit.LockTimeout || first.held != nil {
		t.Fatalf("the deposed leader reported %v (held %v)", lost, first.held != nil)
	}
}
