package clone

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// incrementalChildVariable tells the test binary, run again by the
// incremental kill test, what to clone: an incrementalChild in JSON.
const incrementalChildVariable = "ETL_CRAFT_CLONE_INCREMENTAL_KILL_CHILD"

// incrementalChild names the Engine DB and the warehouse of the child.
type incrementalChild struct {
	Engine        engine.Kind
	Path, DSN     string
	Warehouse     warehouse.Kind
	WarehousePath string // a DuckDB file
	WarehouseURL  string // a PostgreSQL database
}

// killedIncrementalTable is the table whose incremental copy is killed
// before it commits.
const killedIncrementalTable = "AUD_TASK_ATTEMPTS"

// A clone killed in the middle of a table's incremental copy, after its
// changed rows were written and before they committed, leaves each mirror
// with its old rows or its new ones (that table its old ones), and the next
// clone, incremental again, ends equal to a full clone.
func TestAKilledIncrementalCopyLeavesTheOldOrTheNewRows(t *testing.T) {
	t.Parallel()
	if spec := os.Getenv(incrementalChildVariable); spec != "" {
		killedIncrementalChild(t, spec)
		return
	}
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		tg.exec(t, "CREATE SCHEMA "+fullSchema)
		h := newHistoryMaker(t, db, 3)
		h.newRun()
		first := cloneAndCompare(t, db, tg, "first clone")
		old := map[string][]string{}
		for _, tb := range first {
			old[tb.Mirror.Name] = tg.mirrorRows(t, mirrorSchema, tb.Mirror.Name)
		}
		h.newRun() // new rows in the tables before the killed one, in it and after it

		child := incrementalChild{Engine: db.Kind(), Path: db.Options().Path, DSN: db.Options().DSN,
			Warehouse: tg.kind, WarehousePath: tg.opts.Path, WarehouseURL: tg.url}
		spec, err := json.Marshal(child)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestAKilledIncrementalCopyLeavesTheOldOrTheNewRows$")
		cmd.Env = append(os.Environ(), incrementalChildVariable+"="+string(spec),
			fault.Variable+"=clone.after_rows."+killedIncrementalTable+":kill")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != fault.KilledStatus {
			t.Fatalf("the child clone ended %v, want killed:\n%s", err, out)
		}

		full := tg.options("all")
		full.Schema, full.Full = fullSchema, true
		if _, err := Run(context.Background(), db, tg.src, full); err != nil {
			t.Fatal(err)
		}
		changed := map[bool]int{}
		for _, tb := range first {
			name := tb.Mirror.Name
			got, now := tg.mirrorRows(t, mirrorSchema, name), tg.mirrorRows(t, fullSchema, name)
			want := old[name]
			if name < killedIncrementalTable {
				want = now
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s after the kill holds %v, want %v", name, got, want)
			}
			if !slices.Equal(old[name], now) {
				changed[name < killedIncrementalTable]++
			}
		}
		if changed[true] == 0 || changed[false] == 0 {
			t.Fatalf("no changed table before and after %s to tell old rows from new: %v", killedIncrementalTable, changed)
		}
		tables := cloneAndCompare(t, db, tg, "the clone after the kill")
		if tb := byName(t, tables, killedIncrementalTable); !tb.Incremental {
			t.Errorf("the copy of %s after the kill was %s (%s), want incremental", tb.Engine, tb.Copy(), tb.Why)
		}
	})
}

// killedIncrementalChild clones as spec says, and the fault point kills it
// in the middle of an incremental copy.
func killedIncrementalChild(t *testing.T, spec string) {
	var c incrementalChild
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Kind: c.Engine, Path: c.Path, DSN: c.DSN, Schema: "public"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	opts := warehouse.Options{Kind: warehouse.DuckDB, Schema: mirrorSchema, Path: c.WarehousePath}
	if c.Warehouse == warehouse.Postgres {
		opts = pgOptions(t, c.WarehouseURL)
	}
	src := pool.New(db, opts)
	defer src.Close()
	tables, err := Run(ctx, db, src, Options{Scope: "all", Schema: mirrorSchema})
	t.Fatalf("the clone was not killed: %v %v", tables, err)
}
