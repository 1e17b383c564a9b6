package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
)

// scopeQuery reads the guard context as the triggers see it.
func scopeQuery(k engine.Kind) string {
	if k == engine.SQLite {
		return "SELECT etl_craft_actor(), etl_craft_actor_kind(), etl_craft_purpose(), etl_craft_migration()"
	}
	return `SELECT current_setting('etl_craft.actor', true), current_setting('etl_craft.actor_kind', true),
	               current_setting('etl_craft.purpose', true), current_setting('etl_craft.migration', true)`
}

func TestTransactionsCarryTheActor(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := actor.With(context.Background(), actor.Actor{Name: "alice", Kind: actor.Human})
		ctx = engine.WithMigration(ctx, "0001_x.sql")
		var name, kind, purpose, migration string
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			return tx.QueryRowContext(ctx, scopeQuery(db.Kind())).Scan(&name, &kind, &purpose, &migration)
		})
		if err != nil {
			t.Fatal(err)
		}
		if name != "alice" || kind != "HUMAN" || purpose != "" || migration != "0001_x.sql" {
			t.Fatalf("scope = %q %q %q %q", name, kind, purpose, migration)
		}
		// With no actor in scope, the engine acts as SYSTEM.
		err = db.Tx(context.Background(), func(tx *engine.Tx) error {
			return tx.QueryRowContext(ctx, scopeQuery(db.Kind())).Scan(&name, &kind, &purpose, &migration)
		})
		if err != nil || name != "etl-craft" || kind != "SYSTEM" || migration != "" {
			t.Fatalf("default scope = %q %q %q (%v)", name, kind, migration, err)
		}
	})
}

func TestTransactionRollsBackDDLAndRows(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		boom := errors.New("boom")
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			if err := tx.ExecRaw(ctx, "CREATE TABLE t (id INTEGER)"); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO t (id) VALUES ($1)", 1); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v", err)
		}
		var n int
		err = db.QueryRowContext(ctx,
			"SELECT count(*) FROM information_schema.tables WHERE table_name = 't'").Scan(&n)
		if db.Kind() == engine.SQLite {
			err = db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = 't'").Scan(&n)
		}
		if err != nil || n != 0 {
			t.Fatalf("table survived a rolled-back transaction: n=%d err=%v", n, err)
		}
	})
}

func TestTimestampsRoundTripAsUTCText(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		typ := "TIMESTAMPTZ"
		if db.Kind() == engine.SQLite {
			typ = "TIMESTAMP"
		}
		want := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.FixedZone("x", 5*3600+1800))
		err := db.Tx(ctx, func(tx *engine.Tx) error {
			if err := tx.ExecRaw(ctx, "CREATE TABLE ts (at "+typ+")"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO ts (at) VALUES ($1)", tx.TimeArg(want))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var got engine.Time
		if err := db.QueryRowContext(ctx, "SELECT at FROM ts").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if !got.Valid || !got.Time.Equal(want) || got.Time.Location() != time.UTC {
			t.Fatalf("got %v, want %v", got.Time, want.UTC())
		}
		if db.Kind() == engine.SQLite {
			var text string
			db.QueryRowContext(ctx, "SELECT CAST(at AS TEXT) FROM ts").Scan(&text)
			if text != "2026-03-03 23:36:07.123456+00:00" {
				t.Fatalf("stored text %q", text)
			}
		}
	})
}

func TestMissingPostgresSchemaIsAConfigurationError(t *testing.T) {
	t.Parallel()
	opts := enginetest.NewOptions(t, engine.Postgres)
	opts.Schema = "no_such_schema"
	_, err := engine.Open(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "(CREATE SCHEMA no_such_schema;)") || strings.Contains(err.Error(), "differs in case") {
		t.Fatalf("err = %v", err)
	}
	// A name that is a keyword is quoted; a schema whose name differs only in
	// case is named, and is not taken for it.
	db := enginetest.Plain(t, opts)
	if _, err := db.Exec(`CREATE SCHEMA "Order"`); err != nil {
		t.Fatal(err)
	}
	opts.Schema = "order"
	_, err = engine.Open(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), `(CREATE SCHEMA "order";); schema "Order" differs in case`) {
		t.Fatalf("err = %v", err)
	}
}
