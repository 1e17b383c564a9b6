package clone

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect/inspecttest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool"
	"github.com/etl-craft/etl-craft/internal/warehouse/pool/pooltest"
)

// mirrorSchema is the warehouse profile schema the tests clone into.
const mirrorSchema = "etl_craft"

// target is a real warehouse to clone into: a DuckDB file in a temporary
// folder or a PostgreSQL database of its own, with mirrorSchema created.
type target struct {
	kind warehouse.Kind
	opts warehouse.Options
	url  string // a PostgreSQL warehouse's URL, with its password
	src  *pool.Pool
}

// newTarget creates the warehouse; db holds its writer lock.
func newTarget(t testing.TB, db *engine.DB, kind warehouse.Kind) *target {
	t.Helper()
	tg := &target{kind: kind}
	if kind == warehouse.DuckDB {
		tg.opts = warehouse.Options{Kind: kind, Schema: mirrorSchema, Path: filepath.Join(t.TempDir(), "lake.duckdb")}
	} else {
		tg.url = enginetest.NewPGDatabase(t)
		tg.opts = pgOptions(t, tg.url)
	}
	tg.src = pool.New(db, tg.opts)
	t.Cleanup(func() { tg.src.Close() })
	tg.exec(t, "CREATE SCHEMA "+mirrorSchema)
	return tg
}

// pgOptions returns the options of the PostgreSQL warehouse database at
// rawURL, with mirrorSchema as its schema.
func pgOptions(t testing.TB, rawURL string) warehouse.Options {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := strconv.Atoi(u.Port())
	pw, _ := u.User.Password()
	return warehouse.Options{
		Kind: warehouse.Postgres, Schema: mirrorSchema,
		Host: u.Hostname(), Port: port, Database: strings.TrimPrefix(u.Path, "/"),
		User: u.User.Username(), AuthMode: warehouse.AuthPassword,
		Params:   map[string]string{"sslmode": "disable"},
		Password: func() (string, error) { return pw, nil },
	}
}

// eachTarget runs body on a fresh initialized Engine DB of each dialect
// cloning into each real warehouse.
func eachTarget(t *testing.T, body func(t *testing.T, db *engine.DB, tg *target)) {
	for _, ek := range enginetest.Kinds {
		for _, wk := range []warehouse.Kind{warehouse.DuckDB, warehouse.Postgres} {
			t.Run(string(ek)+"/"+string(wk), func(t *testing.T) {
				db := pipelinetest.DB(t, ek)
				body(t, db, newTarget(t, db, wk))
			})
		}
	}
}

// with runs fn in a warehouse transaction and commits it.
func (tg *target) with(t testing.TB, fn func(w warehouse.Warehouse, tx warehouse.Tx) error) {
	t.Helper()
	pooltest.With(t, tg.src, fn)
}

func (tg *target) exec(t testing.TB, stmts ...string) {
	t.Helper()
	tg.with(t, func(_ warehouse.Warehouse, tx warehouse.Tx) error {
		for _, s := range stmts {
			if _, err := tx.Exec(context.Background(), s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
}

// scan runs a query and scans each row into fresh destinations from newDest.
func (tg *target) scan(t *testing.T, query string, row func(scan func(dest ...any) error) error) {
	t.Helper()
	tg.with(t, func(_ warehouse.Warehouse, tx warehouse.Tx) error {
		rs, err := tx.Query(context.Background(), query)
		if err != nil {
			return fmt.Errorf("%s: %w", query, err)
		}
		defer rs.Close()
		for rs.Next() {
			if err := row(rs.Scan); err != nil {
				return err
			}
		}
		return rs.Err()
	})
}

// strings returns the first column of every row, read as text.
func (tg *target) strings(t *testing.T, query string) []string {
	t.Helper()
	var out []string
	tg.scan(t, query, func(scan func(...any) error) error {
		var s *string
		if err := scan(&s); err != nil {
			return err
		}
		if s == nil {
			out = append(out, "NULL")
		} else {
			out = append(out, *s)
		}
		return nil
	})
	return out
}

// columns returns a mirror's columns as "NAME type" in lower-case types.
func (tg *target) columns(t *testing.T, table string) map[string]string {
	t.Helper()
	out := map[string]string{}
	tg.with(t, func(w warehouse.Warehouse, _ warehouse.Tx) error {
		cols, err := w.Columns(context.Background(), mirrorSchema, table)
		for _, c := range cols {
			out[c.Name] = strings.ToLower(c.Type)
		}
		return err
	})
	return out
}

// mirror quotes a mirror's name for a query.
func (tg *target) mirror(name string) string { return mirrorSchema + `."` + name + `"` }

// options returns the clone options of the target with a scope.
func (tg *target) options(scope string) Options {
	return Options{Scope: scope, Schema: mirrorSchema, Logger: slog.New(slog.DiscardHandler)}
}

// history writes a pipeline with JSON parameters and SLA 1.5, a task with
// one parameter, and a run with a task run and an attempt at fixed times.
func history(t *testing.T, db *engine.DB) (start time.Time) {
	t.Helper()
	b := pipelinetest.New(t, db)
	b.Exec(`INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE, SLA_IN_HOURS, PIPELINE_PARAMETERS, SCHEDULE_START_DATE)
		VALUES ('SALES', 'Sales', 'FULL', 1.5, '{"region": "eu", "days": [1, 2], "note": "it''s \"quoted\""}', '2026-03-01')`)
	task := b.Task("SALES", "load", "SQL", map[string]string{"SQL_ACTION": "CREATE_TABLE"})
	rec := inspecttest.New(t, db, actor.SystemActor)
	start = time.Date(2026, 3, 2, 6, 30, 15, 123456000, time.UTC)
	runID := rec.Run(b.PipelineID("SALES"), inspecttest.Run{Status: "SUCCESS", RunDate: "2026-03-02", Start: start, End: start.Add(90 * time.Second)})
	tr := rec.TaskRun(runID, task, inspecttest.TaskRun{Status: "SUCCESS", Start: start, End: start.Add(time.Minute)})
	rec.Attempt(tr, 1, "SUCCESS", "")
	return start
}

// engineCount counts an Engine DB table's rows.
func engineCount(t *testing.T, db *engine.DB, table string) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFirstCloneCreatesEveryMirrorWithPortableTypesAndExactValues(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		ctx := context.Background()
		start := history(t, db)
		tables, err := Run(ctx, db, tg.src, tg.options("all"))
		if err != nil {
			t.Fatal(err)
		}

		all, err := db.Tables(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var want, got []string
		for _, n := range all {
			u := strings.ToUpper(n)
			if (strings.HasPrefix(u, "CFG_") || strings.HasPrefix(u, "AUD_")) && u != "CFG_API_TOKENS" {
				want = append(want, u)
			}
		}
		for _, tb := range tables {
			got = append(got, tb.Engine)
			wantMirror := tg.opts.Database + "." + mirrorSchema + "." + strings.ToUpper(tb.Engine)
			if tg.kind == warehouse.DuckDB {
				wantMirror = "lake." + mirrorSchema + "." + strings.ToUpper(tb.Engine)
			}
			if !tb.Created || len(tb.Added) != 0 || tb.Mirror.Full() != wantMirror || tb.Rows != engineCount(t, db, tb.Engine) {
				t.Errorf("%+v: want created, mirror %s, %d rows", tb, wantMirror, engineCount(t, db, tb.Engine))
			}
		}
		if !slices.Equal(got, want) || len(got) < 20 {
			t.Fatalf("cloned %v, want the sorted CFG_ and AUD_ tables %v", got, want)
		}

		types := tg.columns(t, "CFG_PIPELINES")
		for col, want := range map[string][]string{
			"PIPELINE_ID":         {"bigint"},
			"PIPELINE_CODE":       {"character varying", "varchar"},
			"SLA_IN_HOURS":        {"numeric", "decimal(38,10)"},
			"PIPELINE_PARAMETERS": {"character varying", "varchar"},
			"CREATE_DATE":         {"timestamp with time zone"},
			"SCHEDULE_START_DATE": {"date"},
			"MAX_CATCHUP_RUNS":    {"bigint"},
		} {
			if !slices.Contains(want, types[col]) {
				t.Errorf("CFG_PIPELINES.%s is %q, want one of %v (all: %v)", col, types[col], want, types)
			}
		}
		if typ := tg.columns(t, "AUD_TASK_ATTEMPTS")["RETRYABLE"]; typ != "boolean" {
			t.Errorf("AUD_TASK_ATTEMPTS.RETRYABLE is %q", typ)
		}

		params := tg.strings(t, `SELECT "PIPELINE_PARAMETERS" FROM `+tg.mirror("CFG_PIPELINES"))
		var doc map[string]any
		if len(params) != 1 || json.Unmarshal([]byte(params[0]), &doc) != nil ||
			fmt.Sprint(doc) != `map[days:[1 2] note:it's "quoted" region:eu]` {
			t.Errorf("PIPELINE_PARAMETERS mirrored as %q", params)
		}
		if sla := tg.strings(t, `SELECT CAST("SLA_IN_HOURS" AS VARCHAR) FROM `+tg.mirror("CFG_PIPELINES")); !slices.Equal(sla, []string{"1.5000000000"}) {
			t.Errorf("SLA_IN_HOURS mirrored as %v", sla)
		}
		if d := tg.strings(t, `SELECT CAST("SCHEDULE_START_DATE" AS VARCHAR) FROM `+tg.mirror("CFG_PIPELINES")); !slices.Equal(d, []string{"2026-03-01"}) {
			t.Errorf("SCHEDULE_START_DATE mirrored as %v", d)
		}
		if n := tg.strings(t, `SELECT CAST(COUNT(*) AS VARCHAR) FROM `+tg.mirror("CFG_PIPELINES")+` WHERE "CREATE_DATE" IS NULL`); n[0] != "0" {
			t.Errorf("%s mirrored pipelines have no CREATE_DATE", n[0])
		}
		var starts []time.Time
		var retryable []bool
		tg.scan(t, `SELECT r."START_DATE", a."RETRYABLE" FROM `+tg.mirror("AUD_PIPELINES_RUN_LOG")+` r, `+tg.mirror("AUD_TASK_ATTEMPTS")+` a`,
			func(scan func(...any) error) error {
				var s time.Time
				var r bool
				err := scan(&s, &r)
				starts, retryable = append(starts, s), append(retryable, r)
				return err
			})
		if len(starts) != 1 || !starts[0].Equal(start) || !retryable[0] {
			t.Errorf("run start %v retryable %v, want %v true", starts, retryable, start)
		}
		if n := tg.strings(t, `SELECT CAST(COUNT(*) AS VARCHAR) FROM `+tg.mirror("CFG_TASK_PARAMETERS")); n[0] != "1" {
			t.Errorf("%s task parameters mirrored", n[0])
		}

		pipelinetest.New(t, db).Pipeline("RETURNS", "FULL")
		tables, err = Run(ctx, db, tg.src, tg.options("all"))
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range tables {
			if tb.Created || len(tb.Added) != 0 {
				t.Errorf("second clone: %+v", tb)
			}
		}
		if codes := tg.strings(t, `SELECT "PIPELINE_CODE" FROM `+tg.mirror("CFG_PIPELINES")+` ORDER BY 1`); !slices.Equal(codes, []string{"RETURNS", "SALES"}) {
			t.Errorf("after the second clone the mirror holds %v", codes)
		}
	})
}

func TestScopesChooseTheTables(t *testing.T) {
	t.Parallel()
	db := pipelinetest.DB(t, engine.SQLite)
	tg := newTarget(t, db, warehouse.DuckDB)
	for scope, prefix := range map[string]string{"cfg": "CFG_", "aud": "AUD_"} {
		tables, err := Run(context.Background(), db, tg.src, tg.options(scope))
		if err != nil || len(tables) == 0 {
			t.Fatalf("%s: %v %v", scope, tables, err)
		}
		for _, tb := range tables {
			if !strings.HasPrefix(tb.Mirror.Name, prefix) || tb.Mirror.Name == "CFG_API_TOKENS" {
				t.Errorf("scope %s copied %s", scope, tb.Engine)
			}
		}
	}
	if tables, err := Run(context.Background(), db, tg.src, tg.options("none")); err != nil || tables != nil {
		t.Errorf("scope none: %v %v", tables, err)
	}
}

func TestAMirrorKeepsItsColumnsAndGainsNewOnes(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		ctx := context.Background()
		history(t, db)
		// A mirror made by hand: a column the Engine table no longer has, a
		// column named in another case, and a view built on it.
		tg.exec(t, `CREATE TABLE `+tg.mirror("CFG_PIPELINES")+` ("pipeline_code" VARCHAR, "RETIRED_FLAG" VARCHAR)`,
			`INSERT INTO `+tg.mirror("CFG_PIPELINES")+` VALUES ('OLD', 'Y')`,
			`CREATE VIEW `+mirrorSchema+`.pipeline_codes AS SELECT "pipeline_code" FROM `+tg.mirror("CFG_PIPELINES"))
		tables, err := Run(ctx, db, tg.src, tg.options("cfg"))
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(tables, func(tb Table) bool { return tb.Mirror.Name == "CFG_PIPELINES" })
		tb := tables[i]
		if tb.Created || len(tb.Added) < 10 || slices.Contains(tb.Added, "PIPELINE_CODE") || tb.Added[0] != "PIPELINE_ID" || tb.Rows != 1 {
			t.Fatalf("%+v", tb)
		}
		if !strings.HasPrefix(tb.Line(), "CFG_PIPELINES\t") || !strings.Contains(tb.Line(), "\t1\tadded PIPELINE_ID, PIPELINE_NAME, ") {
			t.Errorf("line %q", tb.Line())
		}
		if got := tg.strings(t, `SELECT COALESCE("RETIRED_FLAG", 'NULL') || ' ' || "pipeline_code" FROM `+tg.mirror("CFG_PIPELINES")); !slices.Equal(got, []string{"NULL SALES"}) {
			t.Errorf("mirror rows %v", got)
		}
		if got := tg.strings(t, `SELECT * FROM `+mirrorSchema+`.pipeline_codes`); !slices.Equal(got, []string{"SALES"}) {
			t.Errorf("the view reads %v", got)
		}
		if _, ok := tg.columns(t, "CFG_PIPELINES")["PIPELINE_CODE"]; ok {
			t.Error("PIPELINE_CODE was added beside pipeline_code")
		}
	})
}

func TestAMissingSchemaFailsNamingItAndWritesNothing(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		opts := tg.options("all")
		opts.Schema = "no_such_schema"
		tables, err := Run(context.Background(), db, tg.src, opts)
		if !exit.Is(err, exit.Cloning) || !strings.Contains(err.Error(), ".no_such_schema does not exist") || tables != nil {
			t.Fatalf("%v %v", tables, err)
		}
		if n := tg.strings(t, `SELECT CAST(COUNT(*) AS VARCHAR) FROM information_schema.tables WHERE table_name LIKE 'CFG%' OR table_name LIKE 'AUD%'`); n[0] != "0" {
			t.Errorf("%s tables written", n[0])
		}
	})
}

// errorRecords keeps the ERROR records logged through it, each as its
// message and attributes.
type errorRecords struct {
	mu      sync.Mutex
	records []map[string]string
}

func (h *errorRecords) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelError }
func (h *errorRecords) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *errorRecords) WithGroup(string) slog.Handler                { return h }

func (h *errorRecords) Handle(_ context.Context, r slog.Record) error {
	rec := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool {
		rec[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, rec)
	return nil
}

func TestARunEndsWithACloneWhoseFailureChangesNothing(t *testing.T) {
	t.Parallel()
	eachTarget(t, func(t *testing.T, db *engine.DB, tg *target) {
		ctx := context.Background()
		pipelinetest.New(t, db).Pipeline("EMPTY", "FULL")
		logs := &errorRecords{}
		log := slog.New(logs)
		opts := tg.options("all")
		opts.Logger = log
		sup := run.New(run.Options{DB: db, Logger: log, Hooks: []run.Hook{{
			Name: "clone",
			Run:  func(ctx context.Context, _ run.Ended) error { return Hook(db, tg.src, opts)(ctx) },
		}}})

		out, err := sup.RunPipeline(ctx, run.Request{PipelineCode: "EMPTY"})
		if err != nil || out.Code != exit.Success {
			t.Fatalf("%v %v", out, err)
		}
		if got := tg.strings(t, `SELECT "STATUS" FROM `+tg.mirror("AUD_PIPELINES_RUN_LOG")); !slices.Equal(got, []string{out.Status}) {
			t.Errorf("the mirrored run log holds %v, want the final status %s", got, out.Status)
		}

		// The warehouse fails: a mirror column whose type cannot hold the
		// Engine values.
		tg.exec(t, `DROP TABLE `+tg.mirror("CFG_PIPELINES"), `CREATE TABLE `+tg.mirror("CFG_PIPELINES")+` ("PIPELINE_ID" DATE)`)
		again, err := sup.RunPipeline(ctx, run.Request{PipelineCode: "EMPTY"})
		if err != nil || again.Status != out.Status || again.Code != exit.Success {
			t.Fatalf("with a failing clone the run ended %v %v, want %s", again, err, out.Status)
		}
		logs.mu.Lock()
		defer logs.mu.Unlock()
		i := slices.IndexFunc(logs.records, func(r map[string]string) bool { return r["table"] != "" })
		if i < 0 || logs.records[i]["table"] != "CFG_PIPELINES" || logs.records[i]["mirror"] != tg.mirrorFull("CFG_PIPELINES") ||
			logs.records[i]["error"] == "" || strings.Contains(logs.records[i]["error"], "CFG_PIPELINES") {
			t.Fatalf("the failure was not logged with its table and the database's own message: %v", logs.records)
		}
	})
}

// mirrorFull is a mirror's catalog.schema.TABLE name.
func (tg *target) mirrorFull(name string) string {
	catalog := tg.opts.Database
	if tg.kind == warehouse.DuckDB {
		catalog = "lake"
	}
	return catalog + "." + mirrorSchema + "." + name
}

func TestTwoClonesRunOneAfterTheOther(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		tg := newTarget(t, db, warehouse.DuckDB)
		history(t, db)
		var mu sync.Mutex
		var events []string
		var ready sync.WaitGroup
		ready.Add(2)
		clone := func(id string) error {
			opts := tg.options("all")
			opts.Progress = func(p Progress) {
				mu.Lock()
				defer mu.Unlock()
				if p.Done {
					events = append(events, id)
				}
			}
			// Each clone has its own connections and warehouse source, as
			// two processes would.
			other, err := engine.Open(context.Background(), db.Options())
			if err != nil {
				return err
			}
			defer other.Close()
			src := pool.New(other, tg.opts)
			defer src.Close()
			ready.Done()
			ready.Wait()
			_, err = Run(context.Background(), other, src, opts)
			return err
		}
		errs := make(chan error, 2)
		for _, id := range []string{"a", "b"} {
			go func() { errs <- clone(id) }()
		}
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		// Every table of one clone committed before any of the other's.
		n := len(events) / 2
		first, second := slices.Compact(slices.Clone(events[:n])), slices.Compact(slices.Clone(events[n:]))
		if n < 20 || len(first) != 1 || len(second) != 1 || first[0] == second[0] {
			t.Fatalf("the clones overlapped: %v", events)
		}
		for _, table := range []string{"CFG_PIPELINES", "AUD_TASK_ATTEMPTS", "AUD_PIPELINES_RUN_LOG"} {
			if got := tg.strings(t, `SELECT CAST(COUNT(*) AS VARCHAR) FROM `+tg.mirror(table)); got[0] != strconv.FormatInt(engineCount(t, db, table), 10) {
				t.Errorf("%s mirrors %s rows", table, got[0])
			}
		}
	})
}

func TestTypesFromTheCatalog(t *testing.T) {
	t.Parallel()
	check := func(kind engine.Kind, want map[string]warehouse.Type) {
		db := pipelinetest.DB(t, kind)
		declared := slices.Sorted(maps.Keys(want))
		defs := make([]string, len(declared))
		for i, d := range declared {
			defs[i] = strings.TrimSpace(fmt.Sprintf("c%d %s", i, d))
		}
		pipelinetest.New(t, db).Exec("CREATE TABLE types_probe (" + strings.Join(defs, ", ") + ")")
		cols, err := columns(context.Background(), db, "types_probe")
		if err != nil || len(cols) != len(declared) {
			t.Fatalf("%s: columns %v, %v", kind.Label(), cols, err)
		}
		for i, c := range cols {
			if c.Name != fmt.Sprintf("c%d", i) || c.typ != want[declared[i]] {
				t.Errorf("%s %q: %s %s, want %s", kind.Label(), declared[i], c.Name, c.typ, want[declared[i]])
			}
		}
	}
	check(engine.SQLite, map[string]warehouse.Type{
		"INTEGER": warehouse.BigInt, "bigint": warehouse.BigInt, "INT": warehouse.BigInt,
		"NUMERIC": warehouse.Decimal, "DECIMAL(10, 2)": warehouse.Decimal, "REAL": warehouse.Decimal,
		"TIMESTAMP": warehouse.Timestamp, "DATE": warehouse.Date, "BOOLEAN": warehouse.Boolean,
		"VARCHAR(16)": warehouse.String, "TEXT": warehouse.String, "": warehouse.String, "JSON": warehouse.String,
	})
	check(engine.Postgres, map[string]warehouse.Type{
		"integer": warehouse.BigInt, "smallint": warehouse.BigInt, "bigint": warehouse.BigInt,
		"numeric": warehouse.Decimal, "double precision": warehouse.Decimal,
		"timestamp with time zone": warehouse.Timestamp, "timestamp without time zone": warehouse.Timestamp,
		"date": warehouse.Date, "boolean": warehouse.Boolean,
		"jsonb": warehouse.String, "character varying": warehouse.String, "uuid": warehouse.String,
	})
}

func TestEngineTimesAreReadExactly(t *testing.T) {
	t.Parallel()
	want := time.Date(2026, 3, 2, 6, 30, 15, 123456000, time.UTC)
	for _, c := range []struct {
		in  any
		out time.Time
	}{
		{"2026-03-02 06:30:15.123456+00:00", want},
		{"2026-03-02 08:30:15.123456+02:00", want},
		{"2026-03-02T06:30:15.123456+00:00", want},
		{"2026-03-02 06:30:15Z", want.Truncate(time.Second)},
		{"2026-03-02", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)},
		{"2024-02-29 00:00:00.000001+00:00", time.Date(2024, 2, 29, 0, 0, 0, 1000, time.UTC)},
		{"2026-12-31 23:59:59.999999+00:00", time.Date(2026, 12, 31, 23, 59, 59, 999999000, time.UTC)},
		{[]byte("2026-03-02 06:30:15.123456+00:00"), want},
		{want.In(time.FixedZone("CET", 3600)), want},
	} {
		got, err := timeValue(c.in)
		if err != nil || !got.(time.Time).Equal(c.out) || got.(time.Time).Location() != time.UTC {
			t.Errorf("%v: %v %v, want %v", c.in, got, err, c.out)
		}
	}
	for _, in := range []any{"2026-02-30", "2026-02-30 10:00:00.000000+00:00", "2026-13-01", "not a time", "", int64(5)} {
		if got, err := timeValue(in); err == nil {
			t.Errorf("%q read as %v", in, got)
		}
	}
	if got, err := timeValue(nil); got != nil || err != nil {
		t.Errorf("NULL read as %v %v", got, err)
	}
}
