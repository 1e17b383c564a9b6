package retention_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/retention"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool/pooltest"
)

// acting is the context of the purges: a person's.
func acting() context.Context {
	return actor.With(context.Background(), actor.Actor{Name: "ops@test", Kind: actor.Human})
}

// target is a warehouse the Engine DB is cloned into: incrementally into
// the schema mirror, in full into the schema full.
type target struct {
	kind warehouse.Kind
	src  *pool.Pool
}

func newTarget(t *testing.T, db *engine.DB, kind warehouse.Kind) *target {
	t.Helper()
	opts := warehouse.Options{Kind: kind, Schema: "mirror"}
	if kind == warehouse.DuckDB {
		opts.Path = filepath.Join(t.TempDir(), "lake.duckdb")
	} else {
		u, err := url.Parse(enginetest.NewPGDatabase(t))
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(u.Port())
		pw, _ := u.User.Password()
		opts.Host, opts.Port, opts.Database, opts.User = u.Hostname(), port, strings.TrimPrefix(u.Path, "/"), u.User.Username()
		opts.AuthMode, opts.Params = warehouse.AuthPassword, map[string]string{"sslmode": "disable"}
		opts.Password = func() (string, error) { return pw, nil }
	}
	tg := &target{kind: kind, src: pool.New(db, opts)}
	t.Cleanup(func() { tg.src.Close() })
	pooltest.With(t, tg.src, func(_ warehouse.Warehouse, tx warehouse.Tx) error {
		for _, s := range []string{"CREATE SCHEMA mirror", "CREATE SCHEMA full_copy"} {
			if _, err := tx.Exec(context.Background(), s); err != nil {
				return err
			}
		}
		return nil
	})
	return tg
}

// notCaptured are the tables whose changes are not logged: a clone copies
// them in full.
var notCaptured = []string{"AUD_GATE_WAITS"}

// cloneAndCompare clones the AUD_ tables incrementally into mirror and in
// full into full_copy, and fails unless every mirror holds the rows of the
// full copy, and every mirror of a table whose changes are logged was
// caught up incrementally once it existed.
func (tg *target) cloneAndCompare(t *testing.T, db *engine.DB, what string, first bool) {
	t.Helper()
	ctx := acting()
	opts := clone.Options{Scope: "aud", Schema: "mirror", Kind: tg.kind, Logger: slog.New(slog.DiscardHandler)}
	tables, err := clone.Run(ctx, db, tg.src, opts)
	if err != nil {
		t.Fatalf("%s: clone: %v", what, err)
	}
	opts.Schema, opts.Full = "full_copy", true
	if _, err := clone.Run(ctx, db, tg.src, opts); err != nil {
		t.Fatalf("%s: full clone: %v", what, err)
	}
	for _, tb := range tables {
		if !first && !tb.Incremental && !slices.Contains(notCaptured, tb.Engine) {
			t.Errorf("%s: %s was copied in full: %s", what, tb.Engine, tb.Why)
		}
		var diff string
		pooltest.With(t, tg.src, func(w warehouse.Warehouse, tx warehouse.Tx) error {
			a := warehouse.Qualify(w, w.Table("mirror", tb.Mirror.Name))
			b := warehouse.Qualify(w, w.Table("full_copy", tb.Mirror.Name))
			q := "SELECT (SELECT count(*) FROM (SELECT * FROM " + a + " EXCEPT ALL SELECT * FROM " + b + ") x) || ' / ' || " +
				"(SELECT count(*) FROM (SELECT * FROM " + b + " EXCEPT ALL SELECT * FROM " + a + ") y)"
			rows, err := tx.Query(ctx, q)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				if err := rows.Scan(&diff); err != nil {
					return err
				}
			}
			return rows.Err()
		})
		if diff != "0 / 0" {
			t.Fatalf("%s: the mirror of %s (%s copy: %s) differs from a full clone: %s row(s) only in the mirror / only in the full copy",
				what, tb.Engine, tb.Copy(), tb.Why, diff)
		}
	}
}

// randomPolicy keeps runs 5 to 60 days, logs 2 to 40, and the other kinds
// a random time or forever.
func randomPolicy(rnd *rand.Rand) retention.Policy {
	d := func(lo, hi int) time.Duration { return time.Duration(lo+rnd.IntN(hi-lo+1)) * retention.Day }
	p := retention.Policy{retention.Runs: d(5, 60), retention.Logs: d(2, 40)}
	for _, k := range []retention.Kind{retention.Actions, retention.MetadataChanges, retention.Interventions} {
		if rnd.IntN(2) == 0 {
			p[k] = d(10, 150)
		}
	}
	return p
}

// keyColumns are the key columns of the tables a purge deletes from.
var keyColumns = map[string]string{
	"AUD_PIPELINES_RUN_LOG": "PIPELINE_RUN_ID", "AUD_TASK_RUN_LOG": "TASK_RUN_ID", "AUD_TASK_ATTEMPTS": "ATTEMPT_ID",
	"AUD_BUSINESS_RULES_RUN_LOG": "BUSINESS_RULE_RUN_ID", "AUD_BUSINESS_RULES_RESULTS": "BUSINESS_RULE_RESULT_ID",
	"AUD_GATE_DECISIONS": "DECISION_ID", "AUD_DEPENDENCY_CONSUMPTION": "CONSUMPTION_ID", "AUD_RUN_INTERVENTIONS": "INTERVENTION_ID",
	"AUD_ACTIONS": "ACTION_ID", "AUD_METADATA_CHANGES": "CHANGE_ID",
}

// archivedKeys reads the keys of every row of the archive files of each
// table in dir, as state.keys names them: the first column's value (a
// gate wait's run and task).
func archivedKeys(t *testing.T, dir string) map[string][]string {
	t.Helper()
	ddb, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ddb.Close()
	out := map[string][]string{}
	for _, table := range retention.Tables() {
		files, _ := filepath.Glob(filepath.Join(dir, retention.ArchiveFile("*", table)))
		for _, f := range files {
			key := `CAST("` + keyColumns[table] + `" AS VARCHAR)`
			if table == "AUD_GATE_WAITS" {
				key = `CAST("PIPELINE_RUN_ID" AS VARCHAR) || '|' || CAST(coalesce("TASK_ID", 0) AS VARCHAR)`
			}
			rows, err := ddb.Query("SELECT " + key + " FROM read_parquet('" + f + "')")
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for rows.Next() {
				var k string
				if err := rows.Scan(&k); err != nil {
					t.Fatal(err)
				}
				out[table] = append(out[table], k)
			}
			rows.Close()
		}
		slices.Sort(out[table])
	}
	return out
}

// TestPurgesKeepTheRulesMirrorsAndArchive is the property test: random
// days of history, purges at random cut-offs in random batch sizes,
// clones. After each purge the Engine DB holds exactly what the model of
// the rules keeps (nothing protected deleted, everything else old gone),
// the result counts what went, and the mirrors, caught up incrementally,
// equal a full clone; at the end every deleted row is in the archive
// exactly once.
func TestPurgesKeepTheRulesMirrorsAndArchive(t *testing.T) {
	t.Parallel()
	for _, ek := range enginetest.Kinds {
		for _, wk := range []warehouse.Kind{warehouse.DuckDB, warehouse.Postgres} {
			t.Run(string(ek)+"/"+string(wk), func(t *testing.T) {
				t.Parallel()
				seed := uint64(time.Now().UnixNano())
				t.Logf("seed %d", seed)
				db := pipelinetest.DB(t, ek)
				logDir, archiveDir := t.TempDir(), t.TempDir()
				h := newHistory(t, db, seed, logDir)
				rnd := rand.New(rand.NewPCG(seed, 7))
				tg := newTarget(t, db, wk)
				now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
				deleted := map[string][]string{}
				first := true
				for step := range 8 {
					for range 5 + rnd.IntN(10) {
						now = now.Add(time.Duration(1+rnd.IntN(4)) * retention.Day)
						h.day(now)
					}
					if rnd.IntN(2) == 0 {
						tg.cloneAndCompare(t, db, fmt.Sprintf("step %d, before the purge", step+1), first)
						first = false
					}
					before := read(t, db, logDir)
					policy := randomPolicy(rnd)
					res, err := retention.Purge(acting(), db, retention.Options{Policy: policy, Now: now, ArchiveDir: archiveDir,
						LogDir: logDir, BatchRows: 5 + rnd.IntN(60)})
					if err != nil {
						t.Fatalf("step %d: purge: %v", step+1, err)
					}
					t.Logf("step %d: %d row(s) in %d batch(es), %d log file(s), %d run(s) kept", step+1, res.Rows(), res.Batches, res.LogFiles, res.Kept)
					after := read(t, db, logDir)
					checkPurge(t, fmt.Sprintf("step %d", step+1), before, after, res, logDir)
					for table, keys := range minus(before.keys(), after.keys()) {
						deleted[table] = append(deleted[table], keys...)
					}
					tg.cloneAndCompare(t, db, fmt.Sprintf("step %d, after the purge", step+1), first)
					first = false
				}
				delete(deleted, "log files")
				archived := archivedKeys(t, archiveDir)
				for _, table := range retention.Tables() {
					slices.Sort(deleted[table])
					if !slices.Equal(archived[table], deleted[table]) {
						t.Errorf("%s: the archive holds %d row(s), %d were deleted:\narchived %v\ndeleted  %v",
							table, len(archived[table]), len(deleted[table]), archived[table], deleted[table])
					}
				}
				if len(deleted["AUD_TASK_ATTEMPTS"]) == 0 || len(deleted["AUD_GATE_DECISIONS"]) == 0 {
					t.Errorf("the purges deleted too little to tell: %v", deleted)
				}
			})
		}
	}
}

// checkKept fails unless after is what the model keeps of before with the
// cut-offs, and returns after's keys. AUD_ACTIONS rows newer than before's
// (the purges' own) are not compared.
func checkKept(t *testing.T, what string, before, after state, cutoffs map[retention.Kind]time.Time, logDir string) map[string][]string {
	t.Helper()
	newest := int64(0)
	for id := range before.actions {
		newest = max(newest, id)
	}
	for id := range after.actions {
		if id > newest {
			delete(after.actions, id)
		}
	}
	want := before.expected(cutoffs, logDir)
	got, keep := after.keys(), want.keys()
	for _, table := range append(retention.Tables(), "log files") {
		if !slices.Equal(got[table], keep[table]) {
			t.Fatalf("%s: %s keeps %v, the rules keep %v\nonly kept: %v\nonly the rules keep: %v", what, table, got[table], keep[table],
				minus(map[string][]string{table: got[table]}, keep), minus(map[string][]string{table: keep[table]}, got))
		}
	}
	return got
}

// checkPurge fails unless after is what the model keeps of before with
// the purge's cut-offs, and the purge's result counts what went. The
// purge's own AUD_ACTIONS row is new, and not compared.
func checkPurge(t *testing.T, what string, before, after state, res retention.Result, logDir string) {
	t.Helper()
	got := checkKept(t, what, before, after, res.Cutoffs, logDir)
	gone := minus(before.keys(), got)
	for _, tb := range res.Tables {
		if tb.Rows != int64(len(gone[tb.Name])) {
			t.Errorf("%s: the result says %d row(s) of %s went, %d did", what, tb.Rows, tb.Name, len(gone[tb.Name]))
		}
		if (tb.Archive != "") != (tb.Rows > 0) {
			t.Errorf("%s: %s: %d row(s), archive %q", what, tb.Name, tb.Rows, tb.Archive)
		}
	}
	if res.LogFiles != int64(len(gone["log files"])) {
		t.Errorf("%s: the result says %d log file(s) went, %d did", what, res.LogFiles, len(gone["log files"]))
	}
	if _, err := os.Stat(res.ArchiveDir); err != nil {
		t.Errorf("%s: the archive folder: %v", what, err)
	}
}
