package migrate_test

import (
	"context"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/migrate"
)

// Rows in 0019's timestamps without a time zone, in UTC as etl-craft writes
// them (PostgreSQL ignores the offset of a literal for such a column).
const naiveTimestamps = `
INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, NOT_BEFORE)
VALUES (1, 9, 'SUCCESS', '2026-03-01 11:00:00.000000+00:00', '2026-03-01 12:00:00.000000+00:00');
INSERT INTO CFG_API_TOKENS (NAME, TOKEN_SHA256, ROLE, CREATED_BY, CREATED_AT, EXPIRES_AT, REVOKED_AT)
VALUES ('ci', 'aaaa', 'viewer', 'alice', '2026-03-01 08:00:00.000000+00:00', '2026-04-01 08:00:00.000000+00:00', NULL);
`

// TestMigration0020KeepsTheUTCInstants upgrades an Engine DB holding retry
// due times and API tokens in timestamps without a time zone: every value
// keeps its UTC instant, a session in another time zone sees the same
// instants, and the result is a fresh Engine DB's schema.
func TestMigration0020KeepsTheUTCInstants(t *testing.T) {
	t.Parallel()
	enginetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		installRelease(t, db)
		execAll(t, db, releasedSeed)
		execAll(t, db, renameBadCodes)
		migrateThrough(t, db, previousEngineFile(t, db.Kind(), "0020_timestamptz.sql"))
		execAll(t, db, naiveTimestamps)
		if _, err := (&migrate.Runner{DB: db}).Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
		assertRows(t, db, []string{"2026-03-01 12:00:00.000000+00:00|1"},
			"SELECT NOT_BEFORE, CASE WHEN NOT_BEFORE = $1 THEN 1 ELSE 0 END FROM AUD_TASK_ATTEMPTS WHERE ATTEMPT_NUMBER = 9",
			db.TimeArg(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
		assertRows(t, db, []string{"2026-03-01 08:00:00.000000+00:00|2026-04-01 08:00:00.000000+00:00|NULL"},
			"SELECT CREATED_AT, EXPIRES_AT, REVOKED_AT FROM CFG_API_TOKENS")
		if db.Kind() == engine.Postgres {
			// A session in another time zone compares them as the same instants.
			var same int
			err := db.Tx(ctx, func(tx *engine.Tx) error {
				if err := tx.ExecRaw(ctx, "SET LOCAL TimeZone = 'Asia/Kolkata'"); err != nil {
					return err
				}
				return tx.QueryRowContext(ctx, `SELECT count(*) FROM AUD_TASK_ATTEMPTS a, CFG_API_TOKENS k
					WHERE a.NOT_BEFORE = TIMESTAMPTZ '2026-03-01 12:00:00+00' AND k.CREATED_AT = TIMESTAMPTZ '2026-03-01 08:00:00+00'
					AND k.EXPIRES_AT > TIMESTAMPTZ '2026-04-01 07:59:59+00'`).Scan(&same)
			})
			if err != nil || same != 1 {
				t.Fatalf("rows seen at their UTC instants from Asia/Kolkata: %d (%v)", same, err)
			}
		}
		assertSameSnapshot(t, "upgraded vs fresh", snapshot(t, db), freshSnapshot(t, db.Kind(), ""))
	})
}
