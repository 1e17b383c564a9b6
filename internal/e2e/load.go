package e2e

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// Quantile is the q-quantile (0 to 1) of the durations, 0 when there are
// none. It sorts a copy: ds is left as it is.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// ReportQuantiles reports the durations' median and 99th percentile as the
// metrics p50-<unit> and p99-<unit>, unit "ms" or "s".
func ReportQuantiles(b *testing.B, ds []time.Duration, unit string) {
	scale := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second}[unit]
	b.ReportMetric(float64(Quantile(ds, 0.50))/float64(scale), "p50-"+unit)
	b.ReportMetric(float64(Quantile(ds, 0.99))/float64(scale), "p99-"+unit)
}

// Load sends b.N requests from clients goroutines, each waiting for its
// answer before it sends again, paced at rate requests a second over them
// all (0: as fast as they go). send makes one request, reading its whole
// answer, and returns why it failed, which fails the benchmark. It times
// each request and reports rps (below rate when the server cannot keep up),
// p50-ms and p99-ms.
func Load(b *testing.B, clients, rate int, send func() error) {
	latencies := make([]time.Duration, b.N)
	var next sync.Mutex
	sent := 0
	var pace <-chan time.Time
	if rate > 0 {
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		pace = t.C
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for {
				next.Lock()
				i := sent
				sent++
				next.Unlock()
				if i >= b.N {
					return
				}
				if pace != nil {
					<-pace
				}
				t0 := time.Now()
				if err := send(); err != nil {
					b.Error(err)
					return
				}
				latencies[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "rps")
	ReportQuantiles(b, latencies, "ms")
}
