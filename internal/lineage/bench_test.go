package lineage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/lineage"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// benchProject registers 20 pipelines of 25 SQL tasks each (500 in all):
// each task reads the one before it through a CTE, a join, a window
// function and an expression, the first of each pipeline the last table of
// the pipeline before.
func benchProject(b *testing.B) *engine.DB {
	b.Helper()
	db := pipelinetest.DB(b, engine.SQLite)
	pb := pipelinetest.New(b, db)
	prev := "raw.seed"
	for p := range 20 {
		code := fmt.Sprintf("P%02d", p)
		pb.Pipeline(code, "FULL")
		for i := range 25 {
			target := fmt.Sprintf("s%02d.t%02d", p, i)
			sql := fmt.Sprintf(`WITH base AS (SELECT id, amount, customer_id FROM %s WHERE amount > 0)
				SELECT b.id, b.amount * 2 AS amount, c.name AS customer_id,
					row_number() OVER (PARTITION BY c.name ORDER BY b.amount) AS rn, 'x' AS tag
				FROM base b JOIN raw.customers c ON c.id = b.customer_id`, prev)
			pb.Task(code, fmt.Sprintf("t%02d", i), "SQL", map[string]string{
				"SQL_ACTION": "OVERWRITE_TABLE", "TARGET_OBJECT": target, "SOURCE_SQL": sql})
			prev = target
		}
	}
	return db
}

// BenchmarkBuild measures Build on 500 SQL tasks with each parser: cold
// (every SELECT parsed, Refresh) and cached (every task read from
// AUD_COLUMN_LINEAGE).
func BenchmarkBuild(b *testing.B) {
	db := benchProject(b)
	ctx := context.Background()
	for _, kind := range []warehouse.Kind{warehouse.DuckDB, warehouse.Postgres} {
		for _, cached := range []bool{false, true} {
			name := fmt.Sprintf("%s/cold", kind)
			if cached {
				name = fmt.Sprintf("%s/cached", kind)
			}
			b.Run(name, func(b *testing.B) {
				opts := lineage.Options{Kind: kind, Refresh: !cached}
				if _, err := lineage.Build(ctx, db, nil, lineage.Options{Kind: kind, Refresh: true}); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					g, err := lineage.Build(ctx, db, nil, opts)
					if err != nil {
						b.Fatal(err)
					}
					if len(g.Untraced()) > 0 || (cached && g.Parsed > 0) || (!cached && g.Parsed != 500) {
						b.Fatalf("parsed %d, cached %d, untraced %d", g.Parsed, g.Cached, len(g.Untraced()))
					}
				}
			})
		}
	}
}
