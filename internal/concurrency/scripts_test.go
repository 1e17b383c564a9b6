package concurrency_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The case: eight pipelines of one PYTHON task each, every script
// calling task.load once into the same new table, triggered together
// through the API of a server with Max_parallel_tasks 8 on a fresh
// warehouse. All eight succeed at their first attempt, and the table holds
// each pipeline's rows once.
func TestEightScriptLoadsAtOnceThroughTheServer(t *testing.T) {
	t.Parallel()
	e2e.EachPair(t, func(t *testing.T, pair e2e.Pair) {
		const rows = 6000
		p := e2e.New(t, pair, "")
		p.Orchestration("  Max_parallel_tasks: 8\n")
		p.OK("init-db")
		p.Write("ingestion_scripts/load.py", scripts["load.py"])
		var mig strings.Builder
		for i := 1; i <= 8; i++ {
			mig.WriteString(e2e.Pipeline(fmt.Sprintf("PY%d", i), scriptTask("load", "load.py",
				fmt.Sprintf(`{"lane": %d, "table": "main.py_events", "mode": "append", "rows": %d}`, i, rows))))
		}
		p.Register("0001_loads", mig.String())
		token := p.Token("ops", "operator")
		db := p.DB()
		s := p.StartServer()
		ids := make([]int64, 8)
		for i := range ids {
			ids[i] = s.Trigger(token, fmt.Sprintf("PY%d", i+1))
		}
		statuses := e2e.WaitRunsEnded(t, db, ids...)
		if code := s.Stop(); code != 0 {
			t.Fatalf("the server exited %d:\n%s", code, s.Stderr())
		}
		failed := e2e.QueryRows(t, db, "SELECT STATUS, coalesce(ERROR_MESSAGE, '') FROM AUD_TASK_ATTEMPTS WHERE STATUS <> $1", records.AttemptSuccess)
		for _, id := range ids {
			if statuses[id] != records.RunSuccess || len(failed) > 0 {
				t.Fatalf("runs %v; attempts that did not succeed:\n%s", statuses, strings.Join(failed, "\n"))
			}
		}
		want := make([]string, 8)
		for i := range want {
			want[i] = fmt.Sprintf("%d %d %d", i+1, rows, rows*(rows-1)/2)
		}
		got := p.WarehouseRows("SELECT lane, count(*), sum(n) FROM main.py_events GROUP BY lane ORDER BY lane")
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("main.py_events holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
