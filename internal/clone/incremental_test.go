package clone

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// fullSchema holds the fresh full clones the incremental mirrors are
// compared with.
const fullSchema = "etl_full"

// historyMaker writes random steps of history into an Engine DB: pipelines
// and tasks, parameter changes and deletions, runs, attempts that end,
// retries, reopenings, interventions and actions.
type historyMaker struct {
	t    *testing.T
	db   *engine.DB
	rnd  *rand.Rand
	b    *pipelinetest.Builder
	rec  *inspecttest.Recorder
	n    int
	runs []historyRun
}

type historyRun struct {
	pipeline, run, task, taskRun int64
	attempts                     int
}

func newHistoryMaker(t *testing.T, db *engine.DB, seed uint64) *historyMaker {
	return &historyMaker{t: t, db: db, rnd: rand.New(rand.NewPCG(seed, 21)),
		b: pipelinetest.New(t, db), rec: inspecttest.New(t, db, actor.SystemActor)}
}

// exec runs one statement in an engine transaction.
func (h *historyMaker) exec(query string, args ...any) {
	h.t.Helper()
	h.b.Exec(query, args...)
}

// step writes one random change.
func (h *historyMaker) step() string {
	h.t.Helper()
	h.n++
	if len(h.runs) == 0 {
		return h.newRun()
	}
	r := h.runs[h.rnd.IntN(len(h.runs))]
	switch h.rnd.IntN(7) {
	case 0:
		return h.newRun()
	case 1:
		h.exec(`UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = $1 WHERE TASK_ID = $2`, fmt.Sprintf("SELECT %d", h.n), r.task)
		return "parameter changed"
	case 2:
		h.exec(`DELETE FROM CFG_TASK_PARAMETERS WHERE TASK_ID = $1 AND PARAMETER_NAME = 'NOTE'`, r.task)
		return "parameter deleted"
	case 3:
		h.exec(`UPDATE AUD_TASK_ATTEMPTS SET STATUS = 'FAILED', ERROR_MESSAGE = $1 WHERE TASK_RUN_ID = $2 AND STATUS = 'RUNNING'`,
			fmt.Sprintf("boom %d", h.n), r.taskRun)
		h.exec(`UPDATE AUD_TASK_RUN_LOG SET STATUS = 'FAILED' WHERE TASK_RUN_ID = $1`, r.taskRun)
		return "attempt failed"
	case 4:
		h.exec(`UPDATE AUD_TASK_ATTEMPTS SET STATUS = 'TIMED_OUT' WHERE TASK_RUN_ID = $1 AND STATUS = 'RUNNING'`, r.taskRun)
		for i := range h.runs {
			if h.runs[i].taskRun == r.taskRun {
				h.runs[i].attempts++
				h.rec.Attempt(r.taskRun, h.runs[i].attempts, "RUNNING", "")
			}
		}
		return "retry"
	case 5:
		at := time.Date(2026, 4, 1, 0, 0, h.n, 0, time.UTC)
		h.rec.Intervention(r.pipeline, r.run, r.task, "REOPEN", "FAILED", "PENDING", fmt.Sprintf("reopened %d", h.n), at)
		h.exec(`UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'IN-PROGRESS' WHERE PIPELINE_RUN_ID = $1`, r.run)
		return "reopened"
	default:
		h.exec(`INSERT INTO AUD_ACTIONS (STARTED_AT, ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS, OUTCOME)
			VALUES ($1, 'alice@test', 'HUMAN', 'host', 'run', '{"n": 1}', 'REQUESTED')`,
			h.db.TimeArg(time.Date(2026, 4, 2, 0, 0, h.n, 1000*h.n, time.UTC)))
		return "action"
	}
}

// newRun adds a pipeline with a task and two parameters, and a running run
// of it with a task run and a first attempt.
func (h *historyMaker) newRun() string {
	h.n++
	code := fmt.Sprintf("P%d", h.n)
	h.b.Pipeline(code, "FULL")
	task := h.b.Task(code, "load", "SQL", map[string]string{"SQL_ACTION": "CREATE_TABLE", "NOTE": "first"})
	pipeline := h.b.PipelineID(code)
	start := time.Date(2026, 3, 1, 0, 0, h.n, 0, time.UTC)
	run := h.rec.Run(pipeline, inspecttest.Run{Status: "IN-PROGRESS", RunDate: "2026-03-01", Start: start})
	tr := h.rec.TaskRun(run, task, inspecttest.TaskRun{Status: "IN-PROGRESS", Start: start})
	h.rec.Attempt(tr, 1, "RUNNING", "")
	h.runs = append(h.runs, historyRun{pipeline: pipeline, run: run, task: task, taskRun: tr, attempts: 1})
	return "new run"
}

// mirrorRows returns every row of a mirror as text, sorted.
func (tg *target) mirrorRows(t *testing.T, schema, table string) []string {
	t.Helper()
	var out []string
	tg.with(t, func(w warehouse.Warehouse, tx warehouse.Tx) error {
		cols, err := w.Columns(context.Background(), schema, table)
		if err != nil {
			return err
		}
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = w.Quote(c.Name)
		}
		rs, err := tx.Query(context.Background(), "SELECT "+strings.Join(names, ", ")+" FROM "+warehouse.Qualify(w, w.Table(schema, table)))
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				return err
			}
			for i, v := range vals {
				if tm, ok := v.(time.Time); ok {
					vals[i] = tm.UTC().Format(time.RFC3339Nano)
				}
			}
			out = append(out, fmt.Sprint(vals...))
		}
		return rs.Err()
	})
	slices.Sort(out)
	return out
}

// cloneAndCompare clones incrementally into mirrorSchema and in full into
// fullSchema, and fails unless every mirror holds the same rows. It returns
// the incremental clone's tables.
func cloneAndCompare(t *testing.T, db *engine.DB, tg *target, what string) []Table {
	t.Helper()
	ctx := context.Background()
	tables, err := Run(ctx, db, tg.src, tg.options("all"))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	full := tg.options("all")
	full.Schema, full.Full = fullSchema, true
	fulls, err := Run(ctx, db, tg.src, full)
	if err != nil {
		t.Fatalf("%s: full clone: %v", what, err)
	}
	for i, tb := range tables {
		if fulls[i].Incremental {
			t.Fatalf("%s: %s: the forced full clone was incremental", what, tb.Engine)
		}
		if tb.Rows != fulls[i].Rows {
			t.Errorf("%s: %s: %d rows, a full clone %d (%s copy: %s)", what, tb.Engine, tb.Rows, fulls[i].Rows, tb.Copy(), tb.Why)
		}
		got, want := tg.mirrorRows(t, mirrorSchema, tb.Mirror.Name), tg.mirrorRows(t, fullSchema, tb.Mirror.Name)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: %s (%s copy: %s) differs from a full clone:\n got %v\nwant %v", what, tb.Engine, tb.Copy(), tb.Why, got, want)
		}
	}
	return tables
}

// byName returns the table of that Engine name.
func byName(t *testing.T, tables []Table, name string) Table {
	t.Helper()
	for _, tb := range tables {
		if tb.Engine == name {
			return tb
		}
	}
	t.Fatalf("no table %s in %v", name, tables)
	return Table{}
}

func TestIncrementalClonesEqualFullClonesAfterEveryStep(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		tg.exec(t, "CREATE SCHEMA "+fullSchema)
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		h := newHistoryMaker(t, db, seed)
		h.newRun()
		first := cloneAndCompare(t, db, tg, "first clone")
		if tb := byName(t, first, "AUD_ACTIONS"); tb.Incremental || tb.Why != whyCreated {
			t.Fatalf("the first clone of AUD_ACTIONS: %s (%s), want full: %s", tb.Copy(), tb.Why, whyCreated)
		}
		incremental := map[string]bool{}
		for i := range 14 {
			what := h.step()
			if h.rnd.IntN(3) == 0 {
				what += ", " + h.step()
			}
			tables := cloneAndCompare(t, db, tg, fmt.Sprintf("step %d (%s)", i+1, what))
			for _, tb := range tables {
				if tb.Incremental {
					incremental[tb.Engine] = true
					if tb.Copied > tb.Rows+int64(2*h.n) {
						t.Errorf("%s copied %d rows incrementally", tb.Engine, tb.Copied)
					}
				} else if tb.Why != whyNoCapture {
					t.Errorf("step %d: %s copied in full: %s", i+1, tb.Engine, tb.Why)
				}
			}
		}
		for _, name := range []string{"AUD_ACTIONS", "AUD_TASK_ATTEMPTS", "CFG_TASK_PARAMETERS", "AUD_METADATA_CHANGES"} {
			if !incremental[name] {
				t.Errorf("%s was never copied incrementally", name)
			}
		}
	})
}

// A mirror row deleted, one edited and one added by hand in the warehouse
// each make that table's next copy a full one, which ends equal.
func TestATamperedMirrorIsCopiedInFull(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		tg.exec(t, "CREATE SCHEMA "+fullSchema)
		h := newHistoryMaker(t, db, 1)
		h.newRun()
		h.newRun()
		cloneAndCompare(t, db, tg, "first clone")
		for _, c := range []struct{ what, table, stmt string }{
			{"a row deleted", "AUD_TASK_ATTEMPTS", `DELETE FROM ` + tg.mirror("AUD_TASK_ATTEMPTS") + ` WHERE "ATTEMPT_NUMBER" = 1 AND "TASK_RUN_ID" = (SELECT MIN("TASK_RUN_ID") FROM ` + tg.mirror("AUD_TASK_ATTEMPTS") + `)`},
			{"a row edited", "CFG_PIPELINES", `UPDATE ` + tg.mirror("CFG_PIPELINES") + ` SET "PIPELINE_NAME" = 'edited by hand' WHERE "PIPELINE_CODE" = 'P1'`},
			{"a row added", "AUD_ACTIONS", `INSERT INTO ` + tg.mirror("AUD_ACTIONS") + ` ("ACTION_ID", "ACTOR", "COMMAND") VALUES (-1, 'someone', 'by hand')`},
		} {
			tg.exec(t, c.stmt)
			h.step()
			tables := cloneAndCompare(t, db, tg, c.what)
			for _, tb := range tables {
				switch {
				case tb.Engine == c.table && (tb.Incremental || tb.Why != whyDiffers):
					t.Errorf("%s in %s: its copy was %s (%s), want full: %s", c.what, tb.Engine, tb.Copy(), tb.Why, whyDiffers)
				case tb.Engine != c.table && tb.Why != whyNoCapture && !tb.Incremental:
					t.Errorf("%s in %s: %s was copied in full too: %s", c.what, c.table, tb.Engine, tb.Why)
				}
			}
		}
	})
}

// An upgrade that rebuilds a table (SQLite's guarded rebuild; a rewriting
// ALTER on PostgreSQL), changing its rows without logging them, makes the
// next copy of that table a full one.
func TestARebuiltTableIsCopiedInFull(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		ctx := actor.With(context.Background(), actor.SystemActor)
		tg.exec(t, "CREATE SCHEMA "+fullSchema)
		h := newHistoryMaker(t, db, 2)
		h.newRun()
		h.step()
		cloneAndCompare(t, db, tg, "first clone")
		cols, err := db.Columns(ctx, actionsName(db))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range cols {
			names = append(names, c.Name)
		}
		plan := engine.RebuildPlan{Tables: []engine.RebuiltTable{{Name: "AUD_ACTIONS", Columns: names}}}
		err = db.RebuildTx(ctx, plan, func(tx *engine.Tx) error {
			if db.Kind() == engine.Postgres {
				return tx.ExecRaw(ctx, "ALTER TABLE AUD_ACTIONS ALTER COLUMN HOST TYPE VARCHAR USING upper(HOST)")
			}
			var def string
			if err := tx.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE name = 'AUD_ACTIONS'").Scan(&def); err != nil {
				return err
			}
			list := strings.Join(names, ", ")
			for _, s := range []string{
				strings.Replace(def, "AUD_ACTIONS", "AUD_ACTIONS_NEW", 1),
				"INSERT INTO AUD_ACTIONS_NEW (" + list + ") SELECT " + strings.Replace(list, "HOST", "upper(HOST)", 1) + " FROM AUD_ACTIONS",
				"DROP TABLE AUD_ACTIONS",
				"ALTER TABLE AUD_ACTIONS_NEW RENAME TO AUD_ACTIONS",
			} {
				if err := tx.ExecRaw(ctx, s); err != nil {
					return fmt.Errorf("%s: %w", s, err)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		tables := cloneAndCompare(t, db, tg, "after the rebuild")
		if tb := byName(t, tables, "AUD_ACTIONS"); tb.Incremental || tb.Why != whyRebuilt {
			t.Errorf("the copy of the rebuilt AUD_ACTIONS was %s (%s), want full: %s", tb.Copy(), tb.Why, whyRebuilt)
		}
		h.step()
		tables = cloneAndCompare(t, db, tg, "the clone after")
		if tb := byName(t, tables, "AUD_ACTIONS"); !tb.Incremental {
			t.Errorf("the copy after was %s (%s), want incremental", tb.Copy(), tb.Why)
		}
	})
}

// An Engine DB restored from a backup taken before the last clone carries
// an older CLONE_STATE than its mirrors: the tables changed since the backup
// are copied in full, and end equal.
func TestARestoredEngineDBIsCopiedInFull(t *testing.T) {
	t.Parallel()
	for _, wk := range []warehouse.Kind{warehouse.DuckDB, warehouse.Postgres} {
		t.Run(string(wk), func(t *testing.T) {
			db := pipelinetest.DB(t, engine.SQLite)
			tg := newTarget(t, db, wk)
			tg.exec(t, "CREATE SCHEMA "+fullSchema)
			h := newHistoryMaker(t, db, 4)
			h.newRun()
			cloneAndCompare(t, db, tg, "first clone")
			backup := filepath.Join(t.TempDir(), "backup.db")
			if _, err := db.ExecContext(context.Background(), "VACUUM INTO '"+backup+"'"); err != nil {
				t.Fatal(err)
			}
			h.newRun()
			cloneAndCompare(t, db, tg, "the clone after the backup")

			restored, err := engine.Open(context.Background(), engine.Options{Kind: engine.SQLite, Path: backup})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { restored.Close() })
			rt := &target{kind: tg.kind, opts: tg.opts, url: tg.url, src: pool.New(restored, tg.opts)}
			t.Cleanup(func() { rt.src.Close() })
			tables := cloneAndCompare(t, restored, rt, "the clone of the restored Engine DB")
			if tb := byName(t, tables, "AUD_TASK_ATTEMPTS"); tb.Incremental {
				t.Errorf("the restored AUD_TASK_ATTEMPTS was copied incrementally")
			}
			after := newHistoryMaker(t, restored, 5)
			after.n = h.n // new pipeline codes
			after.newRun()
			tables = cloneAndCompare(t, restored, rt, "the clone after")
			if tb := byName(t, tables, "AUD_TASK_ATTEMPTS"); !tb.Incremental {
				t.Errorf("the copy after was %s (%s), want incremental", tb.Copy(), tb.Why)
			}
		})
	}
}
