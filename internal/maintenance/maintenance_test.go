package maintenance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/maintenance"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func acting() context.Context {
	return actor.With(context.Background(), actor.Actor{Name: "ops@host", Kind: actor.Human})
}

// The leader lock admits one holder per Engine DB; the overseer row is
// written at start, its heartbeat refreshed, and its stop recorded. A second
// leader is refused naming the first's row, and takes over once it stopped.
func TestLeaderAndHeartbeat(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := acting()
		first := &maintenance.Leader{DB: db}
		if err := first.Start(ctx); err != nil {
			t.Fatal(err)
		}
		hb := &maintenance.Heartbeat{DB: db, Version: "test", Every: 20 * time.Millisecond}
		if err := hb.Start(ctx); err != nil {
			t.Fatal(err)
		}
		second := &maintenance.Leader{DB: db}
		err := second.Start(ctx)
		if exit.CodeOf(err) != exit.LockTimeout || !strings.Contains(err.Error(), "overseer_id=1 host=") {
			t.Fatalf("a second leader: %v", err)
		}
		beat := func() time.Time {
			var at engine.Time
			if err := db.QueryRowContext(ctx, "SELECT HEARTBEAT_AT FROM AUD_OVERSEERS WHERE OVERSEER_ID = 1").Scan(&at); err != nil {
				t.Fatal(err)
			}
			return at.Time
		}
		started := beat()
		deadline := time.Now().Add(10 * time.Second)
		for !beat().After(started) {
			if time.Now().After(deadline) {
				t.Fatal("the heartbeat was never refreshed")
			}
			time.Sleep(10 * time.Millisecond)
		}
		hb.Stop()
		first.Stop()
		var by, kind string
		if err := db.QueryRowContext(ctx, "SELECT STOPPED_BY, STOPPED_BY_KIND FROM AUD_OVERSEERS WHERE OVERSEER_ID = 1 AND STOPPED_AT IS NOT NULL").
			Scan(&by, &kind); err != nil || by != "ops@host" || kind != "HUMAN" {
			t.Fatalf("stop recorded as %q %q: %v", by, kind, err)
		}
		if err := second.Start(ctx); err != nil {
			t.Fatalf("the second leader after the first stopped: %v", err)
		}
		second.Stop()
	})
}

// The ticker sees a schedule set without a restart: the due tick becomes a
// run, recorded once however many passes see it.
func TestTickerFollowsMetadataChanges(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := acting()
		b := pipelinetest.New(t, db)
		b.Pipeline("TK", "FULL")
		queued := make(chan struct{}, 10)
		tk := &maintenance.Ticker{DB: db, Every: 20 * time.Millisecond, Queued: func() { queued <- struct{}{} }}
		if err := tk.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tk.Stop()
		runs := func() int {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE TRIGGER_KIND = 'SCHEDULE' AND STATUS = 'QUEUED'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}
		time.Sleep(100 * time.Millisecond)
		if n := runs(); n != 0 {
			t.Fatalf("%d runs of an unscheduled pipeline", n)
		}
		start := time.Now().UTC().Format(time.DateOnly)
		b.Exec("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 0 * * *', SCHEDULE_TIMEZONE = 'UTC', SCHEDULE_START_DATE = $1 WHERE PIPELINE_CODE = 'TK'", start)
		select {
		case <-queued:
		case <-time.After(10 * time.Second):
			t.Fatal("the new schedule was not seen")
		}
		time.Sleep(100 * time.Millisecond)
		var key string
		if err := db.QueryRowContext(ctx, "SELECT RUN_KEY FROM AUD_PIPELINES_RUN_LOG").Scan(&key); err != nil || runs() != 1 ||
			key != "schedule:"+start+"T00:00:00+00:00" {
			t.Fatalf("runs %d, key %q: %v", runs(), key, err)
		}
	})
}

// On PostgreSQL the overseer lock survives a database whose
// idle_in_transaction_session_timeout would end an idle transaction.
func TestLeaderOutlivesIdleTransactionTimeout(t *testing.T) {
	db := pipelinetest.DB(t, engine.Postgres)
	ctx := acting()
	if _, err := db.ExecContext(ctx, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET idle_in_transaction_session_timeout = 200', current_database()); END $$"); err != nil {
		t.Fatal(err)
	}
	db.SQL().SetMaxIdleConns(0) // new connections read the database's setting
	db.SQL().SetMaxIdleConns(8)
	first := &maintenance.Leader{DB: db}
	if err := first.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer first.Stop()
	time.Sleep(600 * time.Millisecond)
	if err := (&maintenance.Leader{DB: db}).Start(ctx); exit.CodeOf(err) != exit.LockTimeout {
		t.Fatalf("a second leader after the idle timeout: %v", err)
	}
}

// A minute on which more pipelines tick than one commit records: every tick
// becomes one run, a tick recorded before is left as it is, and the ticker
// says it queued runs.
func TestTickerRecordsAManyPipelineMinuteInBatches(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := acting()
		b := pipelinetest.New(t, db)
		const n = 250 // more than one commit's worth
		for i := range n {
			b.Pipeline(fmt.Sprintf("M%03d", i), "FULL")
		}
		start := time.Now().UTC().Format(time.DateOnly)
		key := "schedule:" + start + "T00:00:00+00:00"
		b.Exec("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 0 * * *', SCHEDULE_TIMEZONE = 'UTC', SCHEDULE_START_DATE = $1", start)
		// Another server recorded M007's tick already.
		b.Exec(`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_DATE, BACKFILL, RUN_KEY, TRIGGER_KIND)
			VALUES ($1, 'QUEUED', $2, 'N', $3, 'SCHEDULE')`, b.PipelineID("M007"), start, key)
		queued := make(chan struct{}, n)
		tk := &maintenance.Ticker{DB: db, Every: 20 * time.Millisecond, Queued: func() { queued <- struct{}{} }}
		if err := tk.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tk.Stop()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var runs, keyed, pipelines int
			if err := db.QueryRowContext(ctx, `SELECT count(*), count(CASE WHEN RUN_KEY = $1 THEN 1 END), count(DISTINCT PIPELINE_ID)
				FROM AUD_PIPELINES_RUN_LOG WHERE TRIGGER_KIND = 'SCHEDULE' AND STATUS = 'QUEUED'`, key).Scan(&runs, &keyed, &pipelines); err != nil {
				t.Fatal(err)
			}
			if runs == n && keyed == n && pipelines == n {
				break
			}
			if time.Now().After(deadline) || runs > n {
				t.Fatalf("%d queued runs (%d with key %s) of %d pipelines; want one each of %d", runs, keyed, key, pipelines, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(100 * time.Millisecond) // more passes record nothing more
		var runs, notes int
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG").Scan(&runs); err != nil || runs != n {
			t.Fatalf("%d runs after more passes, want %d: %v", runs, n, err)
		}
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM AUD_RUN_INTERVENTIONS WHERE ACTION = 'NEW_RUN'").Scan(&notes); err != nil || notes != n-1 {
			t.Fatalf("%d NEW_RUN interventions, want %d (none for the tick recorded before): %v", notes, n-1, err)
		}
		if len(queued) == 0 || len(queued) >= n-1 {
			t.Fatalf("Queued was called %d times for %d runs queued in commits of many", len(queued), n-1)
		}
	})
}

// The ticker records a tick the moment it is due, not at its next pass: a
// pipeline due every minute gets its next minute's run although the
// ticker's passes are an hour apart.
func TestTickerWakesAtTheNextTick(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		t.Parallel()
		ctx := acting()
		b := pipelinetest.New(t, db)
		b.Pipeline("EVERY", "FULL")
		b.Exec("UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '* * * * *', SCHEDULE_TIMEZONE = 'UTC', SCHEDULE_START_DATE = $1",
			time.Now().UTC().Format(time.DateOnly))
		tk := &maintenance.Ticker{DB: db, Every: time.Hour}
		if err := tk.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer tk.Stop()
		// The first pass records the current minute; the next minute's
		// tick comes within a minute, and the wait allows two.
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE TRIGGER_KIND = 'SCHEDULE'").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n >= 2 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d scheduled runs after two minutes of a ticker passing every hour, want the next minute's", n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}
