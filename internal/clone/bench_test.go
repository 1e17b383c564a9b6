package clone

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// BenchmarkClone clones an Engine DB holding ETL_CRAFT_BENCH_ROWS (default
// 1,000,000) AUD_ACTIONS rows, with scope aud, into a PostgreSQL warehouse and
// into a DuckDB file, and measures in the same run, each replacing the rows
// of a table in one transaction:
//
//   - clone: etl-craft's clone of every AUD_ table;
//   - limit: the practical limit of loading those rows: psql's \copy of a
//     CSV file (PostgreSQL), a plain program appending rows it holds in
//     memory with DuckDB's appender (DuckDB);
//   - copy (DuckDB): a plain program reading the Engine DB table row by row
//     and appending each row, the same job as the clone done plainly;
//   - insert: the reference's way, reading the Engine DB 1,000 rows at a time
//     and writing multi-row INSERTs of 250 bound values, on the first
//     ETL_CRAFT_BENCH_INSERT_ROWS rows (default 100,000: it is slow).
//
// It reports rows per second, from the fastest iteration of each, and the
// ratios of the clone to each.
// ETL_CRAFT_BENCH_ENGINES lists the Engine DBs (default sqlite,postgres),
// ETL_CRAFT_BENCH_WAREHOUSES the warehouses (default postgres,duckdb).
//
//	bench/clone/run.sh
//	go test ./internal/clone -run '^$' -bench Clone -benchtime 3x -timeout 60m
func BenchmarkClone(b *testing.B) {
	rows := envInt(b, "ETL_CRAFT_BENCH_ROWS", 1_000_000)
	insertRows := min(rows, envInt(b, "ETL_CRAFT_BENCH_INSERT_ROWS", 100_000))
	engines := strings.Split(envOr("ETL_CRAFT_BENCH_ENGINES", "sqlite,postgres"), ",")
	warehouses := strings.Split(envOr("ETL_CRAFT_BENCH_WAREHOUSES", "postgres,duckdb"), ",")
	for _, ek := range engines {
		b.Run(ek, func(b *testing.B) {
			db := pipelinetest.DB(b, engine.Kind(ek))
			fillActions(b, db, rows)
			for _, wk := range warehouses {
				b.Run(wk, func(b *testing.B) {
					benchClone(b, db, warehouse.Kind(wk), rows, insertRows)
				})
			}
		})
	}
}

// measure is one timed way of replacing the rows, with the rows it writes
// and its fastest time so far: on a machine that other work shares, the
// fastest of a few iterations is the least disturbed.
type measure struct {
	name string
	rows int
	run  func() time.Duration
	best time.Duration
}

func (m *measure) time() {
	if d := m.run(); m.best == 0 || d < m.best {
		m.best = d
	}
}

func (m *measure) rate() float64 { return float64(m.rows) / m.best.Seconds() }

func benchClone(b *testing.B, db *engine.DB, wk warehouse.Kind, rows, insertRows int) {
	ctx := context.Background()
	tg := newTarget(b, db, wk)
	opts := tg.options("aud")
	opts.Full = true
	// A first clone creates the mirrors; the measured clones replace their rows.
	if _, err := Run(ctx, db, tg.src, opts); err != nil {
		b.Fatal(err)
	}
	cols := actionColumns(b, db)
	clone := &measure{name: "clone", rows: rows, run: func() time.Duration {
		start := time.Now()
		if _, err := Run(ctx, db, tg.src, opts); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}}
	measures := []*measure{clone}
	if wk == warehouse.Postgres {
		measures = append(measures, &measure{name: `psql \copy`, rows: rows, run: psqlCopy(b, db, tg, cols)})
	} else {
		mem := readActions(b, db)
		measures = append(measures,
			&measure{name: "plain appender", rows: rows, run: plainAppender(b, cols, func(a *duckdb.Appender) error {
				for _, row := range mem {
					if err := a.AppendRow(row...); err != nil {
						return err
					}
				}
				return nil
			})},
			&measure{name: "plain copy", rows: rows, run: plainAppender(b, cols, func(a *duckdb.Appender) error {
				return eachAction(db, 0, func(row []driver.Value) error { return a.AppendRow(row...) })
			})})
	}
	measures = append(measures, &measure{name: "250-value INSERTs", rows: insertRows, run: referencePath(b, db, tg, cols, insertRows)})

	n := 0
	for b.Loop() {
		for _, m := range measures {
			m.time()
		}
		n++
	}
	b.ReportMetric(clone.rate(), "clone-rows/s")
	report := fmt.Sprintf("%s Engine DB into %s, %d rows, fastest of %d: clone %.0f rows/s",
		db.Kind().Label(), wk, rows, n, clone.rate())
	for _, m := range measures[1:] {
		unit := strings.NewReplacer(`psql \copy`, "psql", " ", "-").Replace(m.name)
		b.ReportMetric(m.rate(), unit+"-rows/s")
		b.ReportMetric(clone.rate()/m.rate(), "clone/"+unit)
		report += fmt.Sprintf("; %s %.0f rows/s (clone ×%.2f)", m.name, m.rate(), clone.rate()/m.rate())
	}
	b.Log(report)
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func envInt(b *testing.B, name string, fallback int) int {
	v, err := strconv.Atoi(envOr(name, strconv.Itoa(fallback)))
	if err != nil || v <= 0 {
		b.Fatalf("%s must be a positive whole number", name)
	}
	return v
}

// fillActions writes rows AUD_ACTIONS rows in one engine transaction: times
// with microseconds, JSON arguments, numbers and NULLs.
func fillActions(b testing.TB, db *engine.DB, rows int) {
	b.Helper()
	query := `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
		INSERT INTO AUD_ACTIONS (STARTED_AT, ENDED_AT, ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS, OUTCOME, EXIT_CODE)
		SELECT strftime('%Y-%m-%d %H:%M:%S', '2026-01-01', '+' || i || ' seconds') || '.' || printf('%06d', i % 1000000) || '+00:00',
		       strftime('%Y-%m-%d %H:%M:%S', '2026-01-01', '+' || (i + 3) || ' seconds') || '.' || printf('%06d', (i * 7) % 1000000) || '+00:00',
		       'bench-' || (i % 13) || '@host', 'HUMAN', 'host-' || (i % 7), 'run',
		       '{"pipeline_code": "PIPE_' || (i % 50) || '", "force": false, "run_date": "2026-01-0' || (i % 9 + 1) || '"}',
		       'REQUESTED', CASE WHEN i % 3 = 0 THEN NULL ELSE i % 5 END
		FROM n`
	if db.Kind() == engine.Postgres {
		query = `INSERT INTO AUD_ACTIONS (STARTED_AT, ENDED_AT, ACTOR, ACTOR_KIND, HOST, COMMAND, ARGUMENTS, OUTCOME, EXIT_CODE)
		SELECT timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second' + (i % 1000000) * interval '1 microsecond',
		       timestamptz '2026-01-01 00:00:00+00' + (i + 3) * interval '1 second' + ((i * 7) % 1000000) * interval '1 microsecond',
		       'bench-' || (i % 13) || '@host', 'HUMAN', 'host-' || (i % 7), 'run',
		       ('{"pipeline_code": "PIPE_' || (i % 50) || '", "force": false, "run_date": "2026-01-0' || (i % 9 + 1) || '"}')::jsonb,
		       'REQUESTED', CASE WHEN i % 3 = 0 THEN NULL ELSE i % 5 END
		FROM generate_series(1, $1) AS i`
	}
	ctx := actor.With(context.Background(), actor.SystemActor)
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		_, err := tx.ExecContext(ctx, query, rows)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	if db.Kind() == engine.Postgres {
		if _, err := db.ExecContext(ctx, "ANALYZE AUD_ACTIONS"); err != nil {
			b.Fatal(err)
		}
	}
}

// actionsName is AUD_ACTIONS as the Engine DB's catalog spells it.
func actionsName(db *engine.DB) string {
	if db.Kind() == engine.Postgres {
		return "aud_actions"
	}
	return "AUD_ACTIONS"
}

// actionColumns returns the mirror columns of AUD_ACTIONS.
func actionColumns(b *testing.B, db *engine.DB) []warehouse.Column {
	b.Helper()
	cols, err := columns(context.Background(), db, actionsName(db))
	if err != nil {
		b.Fatal(err)
	}
	d, err := warehouse.NewDialect(warehouse.DuckDB, warehouse.Native, warehouse.Storage{})
	if err != nil {
		b.Fatal(err)
	}
	return planMirror(d, warehouse.Table{}, cols, nil).load
}

// eachAction reads AUD_ACTIONS (its first limit rows; 0 means all) one row at
// a time with a plain loop, timestamps and dates as time values, and calls fn
// with each row; the row is reused.
func eachAction(db *engine.DB, limit int, fn func(row []driver.Value) error) error {
	ctx := context.Background()
	name := actionsName(db)
	cols, err := columns(ctx, db, name)
	if err != nil {
		return err
	}
	query := selectQuery(db, name, cols)
	if limit > 0 {
		query += " LIMIT " + strconv.Itoa(limit)
	}
	rs, err := db.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rs.Close()
	raw := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	row := make([]driver.Value, len(cols))
	for rs.Next() {
		if err := rs.Scan(dest...); err != nil {
			return err
		}
		for i, c := range cols {
			row[i] = raw[i]
			if c.typ == warehouse.Timestamp || c.typ == warehouse.Date {
				if row[i], err = timeValue(raw[i]); err != nil {
					return err
				}
			}
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return rs.Err()
}

// readActions reads AUD_ACTIONS into memory, for the baselines that load
// rows they already hold.
func readActions(b *testing.B, db *engine.DB) [][]driver.Value {
	b.Helper()
	var out [][]driver.Value
	err := eachAction(db, 0, func(row []driver.Value) error {
		out = append(out, append([]driver.Value(nil), row...))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// psqlCopy writes AUD_ACTIONS to a CSV file and loads it into a table shaped
// like the mirror, and returns the measured step: psql replacing the rows in
// one transaction, TRUNCATE then \copy of the file.
func psqlCopy(b *testing.B, db *engine.DB, tg *target, cols []warehouse.Column) func() time.Duration {
	b.Helper()
	path := filepath.Join(b.TempDir(), "actions.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := csv.NewWriter(f)
	rec := make([]string, len(cols))
	err = eachAction(db, 0, func(row []driver.Value) error {
		for i, v := range row {
			switch x := v.(type) {
			case nil:
				rec[i] = ""
			case time.Time:
				rec[i] = x.Format("2006-01-02 15:04:05.999999Z07:00")
			default:
				rec[i] = fmt.Sprint(x)
			}
		}
		return w.Write(rec)
	})
	w.Flush()
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	baselineTable(b, tg, cols, "PSQL_COPY")
	table := mirrorSchema + `."PSQL_COPY"`
	pw, err := tg.opts.Password()
	if err != nil {
		b.Fatal(err)
	}
	replace := func() time.Duration {
		cmd := exec.Command("psql", "-X", "-q", "-1", "-v", "ON_ERROR_STOP=1",
			"-h", tg.opts.Host, "-p", strconv.Itoa(tg.opts.Port), "-U", tg.opts.User, "-d", tg.opts.Database,
			"-c", "TRUNCATE TABLE "+table, "-c", `\copy `+table+` FROM '`+path+`' WITH (FORMAT csv)`)
		cmd.Env = append(os.Environ(), "PGPASSWORD="+pw)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("psql: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	replace()
	return replace
}

// baselineTable creates a new empty table shaped like the mirror, for a
// baseline.
func baselineTable(b *testing.B, tg *target, cols []warehouse.Column, name string) {
	b.Helper()
	tg.with(b, func(w warehouse.Warehouse, tx warehouse.Tx) error {
		t := w.Table(mirrorSchema, name)
		if _, err := tx.Exec(context.Background(), "DROP TABLE IF EXISTS "+warehouse.Qualify(w, t)); err != nil {
			return err
		}
		_, err := tx.Exec(context.Background(), w.CreateTable(t, cols))
		return err
	})
}

// plainAppender makes a table shaped like the mirror in a DuckDB file of its
// own, fills it once, and returns the measured step: a plain program
// replacing its rows in one transaction, TRUNCATE then the appender fed by
// fill.
func plainAppender(b *testing.B, cols []warehouse.Column, fill func(a *duckdb.Appender) error) func() time.Duration {
	b.Helper()
	ctx := context.Background()
	connector, err := duckdb.NewConnector(filepath.Join(b.TempDir(), "plain.duckdb"), nil)
	if err != nil {
		b.Fatal(err)
	}
	db := sql.OpenDB(connector)
	b.Cleanup(func() { db.Close() })
	d, err := warehouse.NewDialect(warehouse.DuckDB, warehouse.Native, warehouse.Storage{})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, d.CreateTable(warehouse.Table{Schema: "main", Name: "PLAIN"}, cols)); err != nil {
		b.Fatal(err)
	}
	replace := func() time.Duration {
		conn, err := db.Conn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		for _, s := range []string{"BEGIN TRANSACTION", `TRUNCATE TABLE main."PLAIN"`} {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				b.Fatal(err)
			}
		}
		err = conn.Raw(func(dc any) error {
			a, err := duckdb.NewAppender(dc.(driver.Conn), "", "main", "PLAIN")
			if err != nil {
				return err
			}
			if err := fill(a); err != nil {
				a.Close()
				return err
			}
			return a.Close()
		})
		if err == nil {
			_, err = conn.ExecContext(ctx, "COMMIT")
		}
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	replace()
	return replace
}

// referencePath makes a table shaped like the mirror and returns the
// measured step: replacing its rows the reference's way, in one transaction
// after a TRUNCATE, reading the first rows rows of the Engine DB table 1,000
// at a time and writing each batch with multi-row INSERTs of at most
// warehouse.MaxBoundValues bound values.
func referencePath(b *testing.B, db *engine.DB, tg *target, cols []warehouse.Column, rows int) func() time.Duration {
	b.Helper()
	baselineTable(b, tg, cols, "INSERTED")
	const batch = 1000
	return func() time.Duration {
		ctx := context.Background()
		w, release, err := tg.src.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer release()
		t := w.Table(mirrorSchema, "INSERTED")
		per := warehouse.RowsPerInsert(len(cols))
		full := warehouse.Insert(w, t, cols, per)
		start := time.Now()
		tx, err := w.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(ctx, w.Truncate(t)); err != nil {
			b.Fatal(err)
		}
		pending := make([]any, 0, batch*len(cols))
		flush := func() error {
			for len(pending) > 0 {
				n := min(per, len(pending)/len(cols))
				stmt := full
				if n < per {
					stmt = warehouse.Insert(w, t, cols, n)
				}
				if _, err := tx.Exec(ctx, stmt, pending[:n*len(cols)]...); err != nil {
					return err
				}
				pending = pending[n*len(cols):]
			}
			pending = make([]any, 0, batch*len(cols))
			return nil
		}
		err = eachAction(db, rows, func(row []driver.Value) error {
			for _, v := range row {
				pending = append(pending, v)
			}
			if len(pending) == cap(pending) {
				return flush()
			}
			return nil
		})
		if err == nil {
			err = flush()
		}
		if err == nil {
			err = tx.Commit()
		}
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
}
