package sqltask_test

import (
	"context"
	"slices"
	"testing"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/handler/sqltask"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestHashVersionRecord(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		s := sqltask.NewEngineState(db, 0, 0)
		const target = "warehouse.staging.customers"
		check := func(want int) {
			t.Helper()
			got, err := s.HashVersion(ctx, target)
			if err != nil || got != want {
				t.Fatalf("hash version %d, %v; want %d", got, err, want)
			}
		}
		check(0)
		for _, v := range []int{1, 2} {
			if err := s.SetHashVersion(ctx, target, v); err != nil {
				t.Fatal(err)
			}
			check(v)
		}
		var at engine.Time
		if err := db.QueryRowContext(ctx, "SELECT RECOMPUTED_AT FROM AUD_TARGET_HASH_VERSION WHERE TARGET_OBJECT = $1", target).Scan(&at); err != nil || !at.Valid {
			t.Fatalf("RECOMPUTED_AT %v, %v", at, err)
		}
		if err := s.SetHashVersion(ctx, target, 0); err != nil {
			t.Fatal(err)
		}
		check(0)
		if err := s.SetHashVersion(ctx, target, 3); err == nil {
			t.Fatal("version 3 was recorded")
		}
	})
}

func TestCreatedInRunAndWriters(t *testing.T) {
	t.Parallel()
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		b := pipelinetest.New(t, db)
		pid := b.Pipeline("P", "FULL")
		b.Pipeline("OTHER", "FULL")
		create := b.Task("P", "create_t", "SQL", map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "Staging.T"})
		b.Task("P", "merge_t", "SQL", map[string]string{"SQL_ACTION": "SCD1_MERGE", "TARGET_OBJECT": "warehouse.staging.t"})
		b.Task("P", "load_u", "SQL", map[string]string{"SQL_ACTION": "APPEND_TABLE", "TARGET_OBJECT": "staging.u"})
		other := b.Task("OTHER", "create_u", "SQL", map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "staging.u"})
		b.Exec("INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS) VALUES ($1, 'IN-PROGRESS')", pid)
		var run int64
		db.QueryRowContext(ctx, "SELECT MAX(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG").Scan(&run)
		b.Exec("INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS) VALUES ($1, $2, 'IN-PROGRESS')", create, run)
		b.Exec("INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS) VALUES ($1, $2, 'SUCCESS')", other, run)

		s := sqltask.NewEngineState(db, pid, run)
		created := func(target string, want bool) {
			t.Helper()
			got, err := s.CreatedInRun(ctx, target)
			if err != nil || got != want {
				t.Fatalf("CreatedInRun(%s) = %v, %v; want %v", target, got, err, want)
			}
		}
		created("warehouse.staging.t", false) // still running
		b.Exec("UPDATE AUD_TASK_RUN_LOG SET STATUS = 'SUCCESS' WHERE TASK_ID = $1", create)
		created("warehouse.staging.t", true)
		created("warehouse.staging.u", false) // another pipeline's task created it

		writers, ok := s.(interface {
			Writers(ctx context.Context, target string) ([]string, error)
		})
		if !ok {
			t.Fatal("the Engine DB state lists no writers")
		}
		got, err := writers.Writers(ctx, "warehouse.staging.t")
		if err != nil || !slices.Equal(got, []string{"CREATE_TABLE", "SCD1_MERGE"}) {
			t.Fatalf("writers %v, %v", got, err)
		}
		// A two-part name resolves in any catalog; a three-part one only in its own.
		got, err = writers.Writers(ctx, "other.staging.t")
		if err != nil || !slices.Equal(got, []string{"CREATE_TABLE"}) {
			t.Fatalf("writers in another catalog %v, %v", got, err)
		}
	})
}

func TestNamesTarget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		configured string
		want       bool
	}{
		{"staging.orders", true},
		{"STAGING.Orders", true},
		{" wh.staging.orders ", true},
		{"other.staging.orders", false},
		{"orders", false},
		{"staging.orders_v2", false},
		{"a.b.staging.orders", false},
	}
	for _, c := range cases {
		if got := sqltask.NamesTarget(c.configured, "wh.staging.orders"); got != c.want {
			t.Errorf("NamesTarget(%q) = %v", c.configured, got)
		}
	}
}
