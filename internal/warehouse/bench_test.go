package warehouse

import (
	"context"
	"testing"
	"time"
)

// BenchmarkBulkLoad compares each warehouse's fast bulk path (the DuckDB
// appender, PostgreSQL COPY) with the multi-row INSERTs of at most
// MaxBoundValues values that the cloud warehouses use, on the same rows in the
// same run, and reports both rates and their ratio.
//
//	go test ./internal/warehouse -run '^$' -bench BulkLoad
func BenchmarkBulkLoad(b *testing.B) {
	const rows = 20_000
	for _, kind := range []Kind{DuckDB, Postgres} {
		b.Run(string(kind), func(b *testing.B) {
			w := openReal(b, kind)
			ctx := context.Background()
			tbl := w.Table(testSchema, "BENCH")
			mustExec(b, w, w.CreateTable(tbl, loadColumns))
			load := func(insert bool) time.Duration {
				mustExec(b, w, w.Truncate(tbl))
				start := time.Now()
				tx, err := w.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				defer tx.Rollback()
				if insert {
					_, err = insertRows(ctx, tx.(*sqlTx).q, w, tbl, loadColumns, sampleRows(rows))
				} else {
					_, err = tx.BulkLoad(ctx, tbl, loadColumns, sampleRows(rows))
				}
				if err == nil {
					err = tx.Commit()
				}
				if err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			var bulk, insert time.Duration
			n := 0
			for b.Loop() {
				bulk += load(false)
				insert += load(true)
				n++
			}
			total := float64(rows * n)
			b.ReportMetric(total/bulk.Seconds(), "bulk-rows/s")
			b.ReportMetric(total/insert.Seconds(), "insert-rows/s")
			b.ReportMetric(insert.Seconds()/bulk.Seconds(), "bulk/insert-speed")
			b.Logf("%s: bulk %.0f rows/s, INSERT %.0f rows/s, bulk is %.1f× faster",
				kind, total/bulk.Seconds(), total/insert.Seconds(), insert.Seconds()/bulk.Seconds())
		})
	}
}
