package api_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/server/api"
)

// benchRuns is how many runs the benchmark's Engine DB holds, spread over
// benchPipelines pipelines.
const (
	benchRuns      = 100_000
	benchPipelines = 10
	// benchRate is the request rate of the paced load.
	benchRate = 500
	// benchClients is how many clients send at once.
	benchClients = 8
)

// BenchmarkAPIReads measures GET /runs/{id} (a random run of 100,000) and
// GET /pipelines/{code}/runs?limit=100 (a random pipeline's newest page),
// on each Engine DB dialect, over loopback with a viewer token: paced at
// 500 requests a second, and as fast as 8 clients go. Each reports its
// requests a second and its p50 and p99 latencies. Run it with a fixed
// request count, such as -benchtime 5000x.
func BenchmarkAPIReads(b *testing.B) {
	for _, kind := range enginetest.Kinds {
		b.Run(string(kind), func(b *testing.B) {
			if kind == engine.Postgres {
				enginetest.AdminURL(b)
			}
			f := newFixture(b, kind)
			tk := f.newTokens()
			for i := range benchPipelines {
				code := fmt.Sprintf("B%d", i)
				f.b.Pipeline(code, "FULL")
				f.b.Exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $1)
					INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, START_DATE, END_DATE, STATUS, RUN_KEY, ENDED_BY, ENDED_BY_KIND)
					SELECT $2, $3, $3, 'SUCCESS', 'bench:' || i, 'bench', 'HUMAN' FROM n`,
					benchRuns/benchPipelines, f.b.PipelineID(code), f.p.DB.TimeArg(time.Now()))
			}
			if n := f.count("SELECT COUNT(*) FROM AUD_PIPELINES_RUN_LOG"); n != benchRuns {
				b.Fatalf("%d runs", n)
			}
			first := int64(f.count("SELECT MIN(PIPELINE_RUN_ID) FROM AUD_PIPELINES_RUN_LOG"))
			paths := map[string]func() string{
				"run": func() string { return fmt.Sprintf("/runs/%d", first+rand.Int64N(benchRuns)) },
				"runs-page": func() string {
					return fmt.Sprintf("/pipelines/B%d/runs?limit=100", rand.IntN(benchPipelines))
				},
			}
			for _, name := range []string{"run", "runs-page"} {
				for _, paced := range []bool{true, false} {
					label := name + "/max"
					if paced {
						label = fmt.Sprintf("%s/%drps", name, benchRate)
					}
					b.Run(label, func(b *testing.B) { load(b, f.srv.URL, tk.viewer, paths[name], paced) })
				}
			}
		})
	}
}

// load sends b.N requests from benchClients clients, paced at benchRate a
// second or as fast as they go (e2e.Load).
func load(b *testing.B, base, token string, path func() string, paced bool) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchClients}}
	rate := 0
	if paced {
		rate = benchRate
	}
	e2e.Load(b, benchClients, rate, func() error {
		req, err := http.NewRequest(http.MethodGet, base+api.Prefix+path(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d", req.URL.Path, res.StatusCode)
		}
		return nil
	})
}
