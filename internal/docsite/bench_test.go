package docsite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/docsite"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// BenchmarkGenerateDocs writes the catalog of 20 pipelines of 25 SQL tasks
// each (500 tasks; each task reads the previous one's table and a table of
// another pipeline) with 5,000 ended runs and their 125,000 task runs, on a
// SQLite Engine DB: reading the catalog, the table-level lineage and every
// page, as generate-docs does.
func BenchmarkGenerateDocs(b *testing.B) {
	const pipes, tasks, runs = 20, 25, 5000
	ctx := context.Background()
	db := pipelinetest.DB(b, engine.SQLite)
	pb := pipelinetest.New(b, db)
	for p := range pipes {
		code := fmt.Sprintf("P%02d", p)
		pb.Pipeline(code, "FULL")
		for t := range tasks {
			sql := fmt.Sprintf("SELECT a.id, a.amount * 2 AS amount FROM s%02d.t%02d a JOIN s%02d.t%02d b ON b.id = a.id",
				p, t, (p+1)%pipes, t)
			pb.Task(code, fmt.Sprintf("task_%02d", t), "SQL", map[string]string{
				"TARGET_OBJECT": fmt.Sprintf("s%02d.t%02d", p, t+1), "SOURCE_SQL": sql,
			})
			if t > 0 {
				pb.Dep(code, fmt.Sprintf("task_%02d", t), code, fmt.Sprintf("task_%02d", t-1), "SUCCESS")
			}
		}
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	err := db.Tx(ctx, func(tx *engine.Tx) error {
		for r := range runs {
			pipe := int64(r%pipes + 1)
			at := start.Add(time.Duration(r) * time.Hour)
			status := "SUCCESS"
			if r%7 == 0 {
				status = "FAILED"
			}
			var id int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE, END_DATE, STATUS, RUN_KEY)
VALUES ($1, $2, $3, $4, $5) RETURNING PIPELINE_RUN_ID`, pipe, tx.TimeArg(at), tx.TimeArg(at.Add(time.Minute)), status, fmt.Sprint("run-", r)).Scan(&id); err != nil {
				return err
			}
			for t := range tasks {
				if _, err := tx.ExecContext(ctx, `INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, START_DATE, END_DATE, STATUS, ROWS_WRITTEN)
SELECT TASK_ID, $1, $2, $3, $4, 100 FROM CFG_TASKS WHERE PIPELINE_ID = $5 AND TASK_CODE = $6`,
					id, tx.TimeArg(at), tx.TimeArg(at.Add(2*time.Second)), status, pipe, fmt.Sprintf("task_%02d", t)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	folder := filepath.Join(dir, "catalog")
	pages := 0
	var loading, writing time.Duration
	for b.Loop() {
		began := time.Now()
		cat, err := docsite.Load(ctx, db, dir, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		s := &docsite.Site{Catalog: cat, Lineage: docsite.TableLevel(cat, ""), Version: "bench"}
		loaded := time.Now()
		if pages, err = docsite.Write(folder, s); err != nil {
			b.Fatal(err)
		}
		loading, writing = loading+loaded.Sub(began), writing+time.Since(loaded)
	}
	b.ReportMetric(float64(pages), "pages/op")
	b.ReportMetric(loading.Seconds()/float64(b.N), "load-s/op")
	b.ReportMetric(writing.Seconds()/float64(b.N), "write-s/op")
}
