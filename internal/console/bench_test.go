package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/records"
)

// The benchmark's Engine DB: benchPipelines pipelines and benchRuns ended
// runs, of which benchGridRuns belong to GRID, a pipeline of benchTasks
// tasks, each run with a task run and an attempt per task.
const (
	benchPipelines = 1_000
	benchRuns      = 100_000
	benchGridRuns  = 25
	benchTasks     = 50
	// benchRate is the pace of the requests, one every 1/benchRate
	// second, from benchClients clients.
	benchRate    = 50
	benchClients = 4
)

// BenchmarkConsolePages measures the pages a console serves from a real
// `etl-craft server` over an Engine DB of 1,000 pipelines and 100,000
// runs, on SQLite and PostgreSQL: the pipelines page, the grid of GRID's
// last 25 runs × 50 tasks, and the page of one of those runs, each paced
// at 50 requests a second with a viewer's session. It reports the
// latency of a request (client side, over loopback) at the median and the
// 99th percentile, and the rate achieved. Run it with a fixed count, such
// as -benchtime 1000x.
func BenchmarkConsolePages(b *testing.B) {
	for _, pair := range []e2e.Pair{e2e.SQLiteDuckDB, e2e.PostgresPostgres} {
		b.Run(string(pair.Engine), func(b *testing.B) {
			if pair.Engine == engine.Postgres {
				enginetest.AdminURL(b)
			}
			p := e2e.New(b, pair, "")
			p.OK("init-db")
			db := p.DB()
			gridRun := fillBench(b, db)
			token := p.Token("vic", "viewer")
			s := p.StartServer()
			c := e2e.SignIn(b, s.API, token)
			for _, page := range []struct{ name, path string }{
				{"pipelines", "/pipelines"},
				{"grid", "/pipelines/GRID"},
				{"run", "/runs/" + strconv.FormatInt(gridRun, 10)},
			} {
				b.Run(fmt.Sprintf("%s/%drps", page.name, benchRate), func(b *testing.B) {
					paced(b, c, page.path)
				})
			}
		})
	}
}

// fillBench writes the benchmark's pipelines and runs, and returns the id
// of GRID's newest run.
func fillBench(b testing.TB, db *engine.DB) int64 {
	b.Helper()
	build := pipelinetest.New(b, db)
	now := time.Now().Add(-time.Hour)
	at := db.TimeArg(now)
	series := `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1) `
	build.Exec(series+`INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE)
		SELECT 'P' || CAST(10000 + i AS VARCHAR), 'pipeline ' || CAST(i AS VARCHAR), 'FULL' FROM n`, benchPipelines-1)
	grid := build.Pipeline("GRID", "FULL")
	build.Exec(series+`INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)
		SELECT 'task_' || CAST(100 + i AS VARCHAR), 'ETL', $2, 'SQL' FROM n`, benchTasks, grid)
	first := int64(e2e.Count(b, db, "SELECT MIN(PIPELINE_ID) FROM CFG_PIPELINES"))
	build.Exec(series+`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE, END_DATE, STATUS, RUN_KEY, ENDED_BY, ENDED_BY_KIND)
		SELECT $2 + (i % $3), $4, $4, 'SUCCESS', 'bench:' || CAST(i AS VARCHAR), 'bench', 'HUMAN' FROM n`,
		benchRuns-benchGridRuns, first, benchPipelines-1, at)
	build.Exec(series+`INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE, END_DATE, STATUS, RUN_KEY, ENDED_BY, ENDED_BY_KIND)
		SELECT $2, $3, $3, 'SUCCESS', 'grid:' || CAST(i AS VARCHAR), 'bench', 'HUMAN' FROM n`, benchGridRuns, grid, at)
	build.Exec(`INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, START_DATE, END_DATE, STATUS, ROWS_WRITTEN)
		SELECT t.TASK_ID, r.PIPELINE_RUN_ID, $2, $2, 'SUCCESS', 10 FROM CFG_TASKS t JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_ID = t.PIPELINE_ID
		WHERE t.PIPELINE_ID = $1`, grid, at)
	build.Exec(`INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, QUEUED_AT, STARTED_AT, ENDED_AT, ROWS_WRITTEN)
		SELECT tr.TASK_RUN_ID, 1, 'SUCCESS', $2, $2, $2, 10 FROM AUD_TASK_RUN_LOG tr JOIN AUD_PIPELINES_RUN_LOG r ON r.PIPELINE_RUN_ID = tr.PIPELINE_RUN_ID
		WHERE r.PIPELINE_ID = $1`, grid, at)
	if n := e2e.Count(b, db, "SELECT COUNT(*) FROM AUD_PIPELINES_RUN_LOG"); n != benchRuns {
		b.Fatalf("%d runs", n)
	}
	if n := e2e.Count(b, db, "SELECT COUNT(*) FROM AUD_TASK_ATTEMPTS"); n != benchGridRuns*benchTasks {
		b.Fatalf("%d attempts", n)
	}
	return int64(e2e.Count(b, db, "SELECT MAX(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG WHERE PIPELINE_ID = $1", grid))
}

// paced sends b.N requests for the page with the session, paced at
// benchRate a second from benchClients clients (e2e.Load).
func paced(b *testing.B, c *e2e.Console, path string) {
	e2e.Load(b, benchClients, benchRate, func() error {
		res := c.Open(path)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || res.Request.URL.Path != path {
			return fmt.Errorf("%s: %d at %s", path, res.StatusCode, res.Request.URL.Path)
		}
		return nil
	})
}

// BenchmarkConsoleLiveDelay measures, in headless Chromium, the delay from
// a task ending (its END_DATE in the Engine DB) to the open run page
// showing it SUCCESS without a reload, on SQLite and PostgreSQL: each
// iteration triggers SLOW, opens its run's page, releases its task, and
// notes when the page's row turned. It reports the delay's median and
// 99th percentile. Run it with a fixed count, such as -benchtime 20x.
func BenchmarkConsoleLiveDelay(b *testing.B) {
	for _, pair := range []e2e.Pair{e2e.SQLiteDuckDB, e2e.PostgresPostgres} {
		b.Run(string(pair.Engine), func(b *testing.B) {
			if pair.Engine == engine.Postgres {
				enginetest.AdminURL(b)
			}
			o := newOps(b, pair, "")
			token := o.Token("olga", "operator")
			s := o.StartServer()
			ctx, _ := e2e.Browser(b, 1280, 800)
			e2e.Do(b, ctx, chromedp.Navigate(s.API+"/signin"), chromedp.WaitVisible(chromedp.CSS("#token")),
				chromedp.SendKeys(chromedp.CSS("#token"), token), chromedp.Submit(chromedp.CSS("#token")))
			delays := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				delays[i] = liveDelay(b, o, s, ctx, token)
			}
			b.StopTimer()
			e2e.ReportQuantiles(b, delays, "s")
		})
	}
}

// liveDelay runs SLOW once with its run's page open and returns how long
// after its task ended the page showed it.
func liveDelay(b *testing.B, o *ops, s *e2e.Server, ctx context.Context, token string) time.Duration {
	b.Helper()
	os.Remove(o.release)
	id := s.Trigger(token, "SLOW")
	e2e.WaitFor(b, o.db, 1, `SELECT COUNT(*) FROM AUD_TASK_ATTEMPTS a JOIN AUD_TASK_RUN_LOG tr ON tr.TASK_RUN_ID = a.TASK_RUN_ID
		WHERE tr.PIPELINE_RUN_ID = $1 AND a.STATUS = 'RUNNING'`, id)
	e2e.Do(b, ctx, chromedp.Navigate(fmt.Sprintf("%s/runs/%d", s.API, id)), chromedp.WaitVisible(chromedp.CSS("h1")))
	waitUntil(b, ctx, "the page is live", `document.getElementById("live").dataset.state === "on"`)
	// The page notes the first moment its row shows SUCCESS.
	e2e.Eval(b, ctx, chromedp.Evaluate[bool](`(() => {
		const seen = () => !!document.querySelector('#tasks tr[data-task="wait"] .st-ok');
		new MutationObserver(() => { if (!window.__shown && seen()) { window.__shown = Date.now(); } })
			.observe(document.body, {childList: true, subtree: true, characterData: true});
		return true;
	})()`))
	if err := os.WriteFile(o.release, []byte("bench"), 0o644); err != nil {
		b.Fatal(err)
	}
	waitUntil(b, ctx, "the page shows the task ended", `!!window.__shown`)
	shown := time.UnixMilli(e2e.Eval(b, ctx, chromedp.Evaluate[int64](`window.__shown`)))
	if st := o.ended(id); st != records.RunSuccess {
		b.Fatalf("SLOW's run %d: %s", id, st)
	}
	var ended engine.Time
	if err := o.db.QueryRowContext(context.Background(), "SELECT END_DATE FROM AUD_TASK_RUN_LOG WHERE PIPELINE_RUN_ID = $1", id).Scan(&ended); err != nil {
		b.Fatal(err)
	}
	return shown.Sub(ended.Time)
}
