package clone

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/fault"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
)

// The tests in this file clone a PostgreSQL Engine DB into a PostgreSQL
// warehouse, where the rows go from one server's COPY to the other's.

// valueKinds is a project table of a PostgreSQL Engine DB with a column of
// each kind of value, under a name that needs quoting, and its rows: NULLs
// everywhere, then edge values of every type.
const valueKinds = `CREATE TABLE "AUD_Value Kinds" (
	id BIGINT PRIMARY KEY, small SMALLINT, whole INTEGER, big BIGINT,
	num NUMERIC, num_scaled NUMERIC(12, 4), single REAL, dbl DOUBLE PRECISION,
	at TIMESTAMPTZ, local_at TIMESTAMP, day DATE, flag BOOLEAN,
	doc JSONB, raw_doc JSON, note TEXT, short VARCHAR(20), padded CHAR(6),
	uid UUID, span INTERVAL, tags TEXT[], "Odd ""Column"" Name" TEXT);
INSERT INTO "AUD_Value Kinds" (id) VALUES (1);
INSERT INTO "AUD_Value Kinds" VALUES
	(2, -32768, 2147483647, -9223372036854775808,
	 1234567890123456789012345678.12345678915, -12345678.00005, 1.5e-07, 0.1,
	 '1969-12-31 23:59:59.999999+00', '2026-03-02 06:30:15.123456', '1900-02-28', true,
	 '{"b": "tab\there", "a": [1, 2.50], "c": "\u00e9"}', '{"keep":  "its spacing"}',
	 E'tab\there\nnew line\r\\N back\\slash \\ "quoted" it''s é😀', 'x', 'ab',
	 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '1 day 02:03:04.5', '{a,"b c",NULL}', ''),
	(3, 0, 0, 0, -0.00000000005, 0, -2.5, 5e-11, '2000-01-01 05:30:00+05:30', '2000-01-01', '2000-02-29', false,
	 '[]', 'null', '', '', '', NULL, '0', '{}', E'\\')`

// rowPath copies an Engine DB table into a new warehouse table shaped like
// its mirror the way every other pair of databases does it: rows read in
// batches and bulk loaded. It returns the table.
func rowPath(t *testing.T, db *engine.DB, tg *target, name, copyName string) string {
	t.Helper()
	ctx := context.Background()
	cols, err := columns(ctx, db, name)
	if err != nil {
		t.Fatal(err)
	}
	tg.with(t, func(w warehouse.Warehouse, tx warehouse.Tx) error {
		mirror := w.Table(mirrorSchema, copyName)
		load := planMirror(w, mirror, cols, nil).load
		if _, err := tx.Exec(ctx, w.CreateTable(mirror, load)); err != nil {
			return err
		}
		reads, err := beginReads(ctx, db, 1)
		if err != nil {
			return err
		}
		defer endReads(reads)
		rs, err := reads[0].read(ctx, cols, selectQuery(db, name, cols))
		if err != nil {
			return err
		}
		defer rs.close()
		_, err = tx.BulkLoad(ctx, mirror, load, stream(ctx, []rowScanner{rs}, len(cols), nil))
		return err
	})
	return tg.mirror(copyName)
}

// rowsText returns every row of a warehouse table as PostgreSQL's text of
// the row, ordered by its first column.
func rowsText(t *testing.T, tg *target, table string) []string {
	t.Helper()
	return tg.strings(t, `SELECT CAST(r AS TEXT) FROM `+table+` r ORDER BY 1`)
}

func TestBetweenPostgresServersEveryValueIsCopiedExactly(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.Postgres)
	tg := newTarget(t, db, warehouse.Postgres)
	pipelinetest.New(t, db).Exec(valueKinds)
	// Sessions of the Engine DB that write dates day first, in words: the
	// warehouse still reads every date as it was.
	var database string
	if err := db.QueryRowContext(context.Background(), "SELECT current_database()").Scan(&database); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(context.Background(), "ALTER DATABASE "+engine.QuoteIdent(database)+" SET DateStyle = 'SQL, DMY'"); err != nil {
		t.Fatal(err)
	}
	db.SQL().SetMaxIdleConns(0)
	tables, err := Run(context.Background(), db, tg.src, tg.options("aud"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tables, func(tb Table) bool { return tb.Engine == "AUD_Value Kinds" })
	if i < 0 || !tables[i].Created || tables[i].Rows != 3 || tables[i].Mirror.Name != "AUD_VALUE KINDS" {
		t.Fatalf("cloned %+v", tables)
	}
	mirror := tg.mirror("AUD_VALUE KINDS")

	// The same values as the rows read and bulk loaded one by one...
	direct := rowsText(t, tg, mirror)
	if byRow := rowsText(t, tg, rowPath(t, db, tg, "AUD_Value Kinds", "ROW_PATH")); !slices.Equal(direct, byRow) {
		t.Errorf("the direct copy holds\n%q\nthe row-by-row copy\n%q", direct, byRow)
	}
	// ...and the values themselves, exactly.
	for col, want := range map[string]string{
		"SMALL":             "NULL|-32768|0",
		"BIG":               "NULL|-9223372036854775808|0",
		"NUM":               "NULL|1234567890123456789012345678.1234567892|-0.0000000001",
		"NUM_SCALED":        "NULL|-12345678.0001000000|0.0000000000",
		"SINGLE":            "NULL|0.0000001500|-2.5000000000",
		"DBL":               "NULL|0.1000000000|0.0000000001",
		"AT":                "NULL|1969-12-31 23:59:59.999999+00|2000-01-01 00:00:00+00",
		"LOCAL_AT":          "NULL|2026-03-02 06:30:15.123456+00|2000-01-01 00:00:00+00",
		"DAY":               "NULL|1900-02-28|2000-02-29",
		"FLAG":              "NULL|true|false",
		"DOC":               `NULL|{"a": [1, 2.50], "b": "tab\there", "c": "é"}|[]`,
		"RAW_DOC":           `NULL|{"keep":  "its spacing"}|null`,
		"NOTE":              "NULL|tab\there\nnew line\r\\N back\\slash \\ \"quoted\" it's é😀|",
		"PADDED":            "NULL|ab|",
		"UID":               "NULL|a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11|NULL",
		"SPAN":              "NULL|1 day 02:03:04.5|00:00:00",
		"TAGS":              `NULL|{a,"b c",NULL}|{}`,
		`ODD "COLUMN" NAME`: `NULL||\`,
	} {
		q := `SELECT CAST("` + strings.ReplaceAll(col, `"`, `""`) + `" AS TEXT) FROM ` + mirror + ` ORDER BY "ID"`
		if got := strings.Join(tg.strings(t, q), "|"); got != want {
			t.Errorf("%s mirrored as %q, want %q", col, got, want)
		}
	}
}

// bulkRows fills the project table AUD_BULK with n rows.
func bulkRows(t *testing.T, db *engine.DB, n int) {
	t.Helper()
	b := pipelinetest.New(t, db)
	b.Exec(`CREATE TABLE IF NOT EXISTS AUD_BULK (N BIGINT PRIMARY KEY, NOTE TEXT)`)
	b.Exec(`DELETE FROM AUD_BULK`)
	b.Exec(`INSERT INTO AUD_BULK SELECT i, 'row ' || i FROM generate_series(1, $1) AS i`, n)
}

// oldRows is what the AUD_BULK mirror holds before the clones that fail.
var oldRows = []string{"5000 rows, the last row 5000"}

// mirrorRows describes the AUD_BULK mirror: its row count and last note.
func mirrorRows(t *testing.T, tg *target) []string {
	t.Helper()
	return tg.strings(t, `SELECT CAST(COUNT(*) AS VARCHAR) || ' rows, the last ' || (SELECT "NOTE" FROM `+tg.mirror("AUD_BULK")+
		` ORDER BY "N" DESC LIMIT 1) FROM `+tg.mirror("AUD_BULK"))
}

// A direct copy that fails in the middle of a table, because the warehouse
// refuses a row or because the clone is cancelled, leaves the mirror with
// its old rows and gives the Engine DB its connection back.
func TestADirectCopyFailingMidTableKeepsTheOldRows(t *testing.T) {
	db := pipelinetest.DB(t, engine.Postgres)
	tg := newTarget(t, db, warehouse.Postgres)
	bulkRows(t, db, 5_000)
	tg.exec(t, `CREATE TABLE `+tg.mirror("AUD_BULK")+` ("N" BIGINT CHECK ("N" <> 20000), "NOTE" VARCHAR)`)
	if _, err := Run(context.Background(), db, tg.src, tg.options("aud")); err != nil {
		t.Fatal(err)
	}
	bulkRows(t, db, 30_000)
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"refused row", func() error {
			_, err := Run(context.Background(), db, tg.src, tg.options("aud"))
			return err
		}, `violates check constraint`},
		{"cancelled", func() error {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			opts := tg.options("aud")
			opts.Progress = func(p Progress) {
				if p.Table == "AUD_BULK" && p.Rows >= 2*batchRows {
					cancel()
				}
			}
			_, err := Run(ctx, db, tg.src, opts)
			return err
		}, `context canceled`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			var te *TableError
			if !exit.Is(err, exit.Cloning) || !errors.As(err, &te) || te.Table != "AUD_BULK" || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("clone error %v, want one naming AUD_BULK and %q", err, c.want)
			}
			if got := mirrorRows(t, tg); !slices.Equal(got, oldRows) {
				t.Errorf("the mirror holds %v, want its old rows %v", got, oldRows)
			}
			if n := db.SQL().Stats().InUse; n != 0 {
				t.Errorf("%d Engine DB connections still in use", n)
			}
		})
	}
	bulkRows(t, db, 6_000)
	if _, err := Run(context.Background(), db, tg.src, tg.options("aud")); err != nil {
		t.Fatal(err)
	}
	if got := mirrorRows(t, tg); !slices.Equal(got, []string{"6000 rows, the last row 6000"}) {
		t.Errorf("after the next clone the mirror holds %v", got)
	}
}

// childVariable tells the test binary, run again by the kill test, to
// clone the Engine DB it names into the warehouse database childWarehouse
// names, and be killed doing it.
const (
	childVariable  = "ETL_CRAFT_CLONE_KILL_CHILD"
	childWarehouse = "ETL_CRAFT_CLONE_KILL_WAREHOUSE"
)

// killedTable is the table whose rows the killed clone has copied but not
// committed.
const killedTable = "AUD_TASK_ATTEMPTS"

// A clone killed after a table's rows went from one COPY to the other, and
// before they committed, leaves every mirror with its old rows or its new
// ones: the tables before it new, that table and those after it old.
func TestAKilledDirectCopyLeavesEachMirrorWithItsOldOrNewRows(t *testing.T) {
	t.Parallel()
	if dsn := os.Getenv(childVariable); dsn != "" {
		killedChild(t, dsn, os.Getenv(childWarehouse))
		return
	}
	db := pipelinetest.DB(t, engine.Postgres)
	tg := newTarget(t, db, warehouse.Postgres)
	bulkRows(t, db, 5_000)
	first, err := Run(context.Background(), db, tg.src, tg.options("aud"))
	if err != nil {
		t.Fatal(err)
	}
	history(t, db) // new rows before and after the killed table
	bulkRows(t, db, 7_000)

	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), childVariable+"="+db.Options().DSN, childWarehouse+"="+tg.url,
		fault.Variable+"=clone.after_rows."+killedTable+":kill")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != fault.KilledStatus {
		t.Fatalf("the child clone ended %v, want killed:\n%s", err, out)
	}
	changed := map[bool]int{}
	for _, tb := range first {
		name := tb.Mirror.Name
		now := engineCount(t, db, tb.Engine)
		want := tb.Rows
		if name < killedTable {
			want = now
		}
		if now != tb.Rows {
			changed[name < killedTable]++
		}
		if got := tg.strings(t, `SELECT CAST(COUNT(*) AS VARCHAR) FROM `+tg.mirror(name)); got[0] != strconv.FormatInt(want, 10) {
			t.Errorf("%s mirrors %s rows after the kill, want %d (old %d, new %d)", name, got[0], want, tb.Rows, now)
		}
	}
	if changed[true] == 0 || changed[false] == 0 {
		t.Fatalf("no changed table before and after %s to tell old rows from new: %v", killedTable, changed)
	}
}

// killedChild is the kill test's child: it clones the Engine DB at dsn into
// the PostgreSQL warehouse database at warehouseURL, and the fault point
// kills it.
func killedChild(t *testing.T, dsn, warehouseURL string) {
	ctx := context.Background()
	db, err := engine.Open(ctx, engine.Options{Kind: engine.Postgres, DSN: dsn, Schema: "public"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	src := pool.New(db, pgOptions(t, warehouseURL))
	defer src.Close()
	_, err = Run(ctx, db, src, Options{Scope: "aud", Schema: mirrorSchema})
	t.Fatalf("the clone was not killed: %v", err)
}
