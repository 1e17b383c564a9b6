package chaos_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/records"
)

// Environment variables of the soak (bench/soak/run.sh sets them).
const (
	// soakDuration is how long the soak triggers runs: a Go duration,
	// 30m by default.
	soakDuration = "ETL_CRAFT_SOAK_DURATION"
	// soakKillEvery is about how often the server is killed: a Go
	// duration, 4m by default; 0 keeps one server for the whole soak.
	soakKillEvery = "ETL_CRAFT_SOAK_KILL_EVERY"
	// soakPair is the pair of databases: sqlite+duckdb (the default),
	// sqlite+postgres or postgres+postgres.
	soakPair = "ETL_CRAFT_SOAK_PAIR"
)

// The soak's timing: the first kill comes after the 5-minute memory
// sample, and the last server lives at least lastLife before the end, so
// that both samples are of servers that have run a while.
const (
	memoryAt = 5 * time.Minute
	lastLife = 3 * time.Minute
	// sampleEvery is how often the server's memory is read.
	sampleEvery = 10 * time.Second
)

// BenchmarkSoak runs the chaos test's workload (24 pipelines of appends,
// merges and script loads, cloning on) under one server for a duration,
// each pipeline triggered through the API again as soon as its run ended,
// the server killed with SIGKILL every few minutes and started again; then
// it reports the runs ended, the kills, the LOST attempts, the p99 of the
// queue age (a run's creation to its first attempt's start) and the
// server's resident memory at 5 minutes and at the end, with their ratio
// and its parts (allocated, of which the Go heap and DuckDB's count, and
// files mapped in),
// and the machine's mean load average over the soak; and last it lets every
// run end under a last server, for at most giveUp, and checks them as the
// chaos test does. bench/soak/run.sh runs it.
func BenchmarkSoak(b *testing.B) {
	duration := envDuration(b, soakDuration, 30*time.Minute, false)
	killEvery := envDuration(b, soakKillEvery, 4*time.Minute, true)
	pair := e2e.SQLiteDuckDB
	if v := os.Getenv(soakPair); v != "" {
		i := slices.IndexFunc(e2e.Pairs, func(p e2e.Pair) bool { return p.String() == v })
		if i < 0 {
			b.Fatalf("%s=%q is not a pair of databases: %v", soakPair, v, e2e.Pairs)
		}
		pair = e2e.Pairs[i]
	}
	for b.Loop() {
		soak(b, pair, duration, killEvery)
	}
}

// envDuration reads a duration from the environment, which may be 0 when
// zero is true.
func envDuration(b *testing.B, name string, def time.Duration, zero bool) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d == 0 && !zero) {
		b.Fatalf("%s=%q is not a duration such as 30m or 1h", name, v)
	}
	return d
}

// sample is the server's memory, and the machine's load, at a moment of
// the soak.
type sample struct {
	at, age time.Duration
	pid     int
	mem     e2e.Memory // KiB
	// goHeap is the Go heap in use (go_memstats_heap_inuse_bytes) and
	// duckdb what DuckDB counts in use (etl_craft_warehouse_duckdb_memory_bytes),
	// in KiB; -1 when the server did not answer its /metrics.
	goHeap, duckdb int64
	load           float64
}

// measure samples the server's memory and the machine's load.
func measure(b *testing.B, start, born time.Time, s *e2e.Server, token string) sample {
	goHeap, duckdb := int64(-1), int64(-1)
	if f, err := s.TryScrape(token); err == nil {
		goHeap = int64(f.Sum("go_memstats_heap_inuse_bytes")) / 1024
		duckdb = int64(f.Sum("etl_craft_warehouse_duckdb_memory_bytes")) / 1024
	}
	return sample{at: time.Since(start), age: time.Since(born), pid: s.Pid(), mem: s.Memory(), goHeap: goHeap, duckdb: duckdb, load: loadAverage(b)}
}

func soak(b *testing.B, pair e2e.Pair, duration, killEvery time.Duration) {
	rng := seeded(b)
	p := e2e.New(b, pair, cloning)
	p.Orchestration("  Max_parallel_tasks: 4\n")
	p.OK("init-db")
	w := newWorkload(p, 24, 0, retryEachSecond)
	token := p.Token("soak", "operator")
	db := p.DB()
	killed := map[int]bool{}
	var samples []sample
	start := time.Now()
	end := start.Add(duration)
	nextKill := start.Add(memoryAt + 30*time.Second)
	if killEvery == 0 {
		nextKill = end
	}
	for time.Now().Before(end) {
		s := p.StartServer()
		born := time.Now()
		var lastSample time.Time
		for time.Now().Before(nextKill) && time.Now().Before(end) {
			if time.Since(lastSample) >= sampleEvery {
				lastSample = time.Now()
				samples = append(samples, measure(b, start, born, s, token))
			}
			triggerRuns(b, s, token, idle(w, db))
			time.Sleep(time.Second)
		}
		if !time.Now().Before(end) {
			samples = append(samples, measure(b, start, born, s, token))
		}
		s.Kill()
		killed[s.Pid()] = true
		if killEvery == 0 {
			break
		}
		jitter := time.Duration(rng.Int64N(int64(killEvery/2))) - killEvery/4
		nextKill = time.Now().Add(killEvery + jitter)
		if left := time.Until(end); left < time.Until(nextKill)+lastLife {
			nextKill = end // the last server runs to the end
		}
	}
	// The figures first, so that a failed check below still has them.
	report(b, db, samples, len(killed))
	// Every run ends under a last server, which is not killed.
	s := p.StartServer()
	deadline := time.Now().Add(giveUp)
	for !idleAll(w, db) {
		if s.Exited() || time.Now().After(deadline) {
			b.Fatalf("the runs did not end under the last server in %s (exited: %t); the runs that did not end:\n%s\nits log:\n%s",
				giveUp, s.Exited(), strings.Join(openRuns(b, db), "\n"), s.Stderr())
		}
		time.Sleep(time.Second)
	}
	if code := s.Stop(); code != 0 {
		b.Fatalf("the last server exited %d:\n%s", code, s.Stderr())
	}
	verify(b, p, db, w, 0, func(status records.AttemptStatus, owner string) bool {
		return status == records.AttemptLost && killed[ownerPID(owner)]
	})
}

// idleAll reports whether every pipeline of the workload is idle.
func idleAll(w *workload, db *engine.DB) bool { return len(idle(w, db)) == len(w.pipelines) }

// idle returns the pipelines whose latest run has ended, or that have none.
func idle(w *workload, db *engine.DB) []string {
	runs := w.runsOf(db)
	var out []string
	for _, code := range w.pipelines {
		if r := runs[code]; len(r) == 0 || r[len(r)-1].status.Ended() {
			out = append(out, code)
		}
	}
	return out
}

// report logs the memory line and reports the soak's figures.
func report(b *testing.B, db *engine.DB, samples []sample, kills int) {
	var line strings.Builder
	var load float64
	for _, s := range samples {
		load += s.load / float64(len(samples))
		if s.at%time.Minute < sampleEvery || s == samples[len(samples)-1] {
			fmt.Fprintf(&line, "%6.1f min  pid %-7d age %5.1f min  rss %6.1f MiB (anonymous %6.1f, Go heap %5.1f, DuckDB %5.1f, files %5.1f)  load %5.1f\n",
				s.at.Minutes(), s.pid, s.age.Minutes(), mib(s.mem.Resident), mib(s.mem.Anonymous), mib(s.goHeap), mib(s.duckdb), mib(s.mem.File), s.load)
		}
	}
	b.Logf("the server's resident memory:\n%s", line.String())
	// A single sample moves by a tenth or more from one to the next (the
	// Go heap, DuckDB's buffers): each figure is the mean over a minute.
	last := samples[len(samples)-1].at
	five := min(memoryAt, last)
	at5 := func(of func(sample) int64) float64 { return mean(samples, five-time.Minute, five, of) }
	atEnd := func(of func(sample) int64) float64 { return mean(samples, last-time.Minute, last, of) }
	rss := func(s sample) int64 { return s.mem.Resident }
	ended := e2e.Count(b, db, "SELECT count(*) FROM AUD_PIPELINES_RUN_LOG WHERE STATUS IN ("+records.SQLEndedRuns+")")
	lost := e2e.Count(b, db, "SELECT count(*) FROM AUD_TASK_ATTEMPTS WHERE STATUS = $1", records.AttemptLost)
	b.ReportMetric(float64(ended), "runs-ended")
	b.ReportMetric(float64(kills), "kills")
	b.ReportMetric(float64(lost), "lost-attempts")
	ages := queueAges(b, db)
	b.ReportMetric(ages[len(ages)/2].Seconds(), "queue-age-p50-s")
	b.ReportMetric(ages[int(0.99*float64(len(ages)-1))].Seconds(), "queue-age-p99-s")
	b.ReportMetric(at5(rss), "rss-5m-MiB")
	b.ReportMetric(atEnd(rss), "rss-end-MiB")
	b.ReportMetric(atEnd(rss)/at5(rss), "rss-end/5m")
	// Where it is: what the process allocated, of which the Go heap and
	// DuckDB's own count, and the files mapped in (the executable, the Engine DB's pages).
	parts := []struct {
		name string
		of   func(sample) int64
	}{
		{"anon", func(s sample) int64 { return s.mem.Anonymous }},
		{"go-heap", func(s sample) int64 { return s.goHeap }},
		{"duckdb", func(s sample) int64 { return s.duckdb }},
		{"file", func(s sample) int64 { return s.mem.File }},
	}
	for _, p := range parts {
		b.ReportMetric(at5(p.of), p.name+"-5m-MiB")
		b.ReportMetric(atEnd(p.of), p.name+"-end-MiB")
	}
	b.ReportMetric(load, "loadavg")
}

// loadAverage reads the machine's load average over the last minute.
func loadAverage(b *testing.B) float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	var load float64
	if _, err := fmt.Sscan(string(data), &load); err != nil {
		b.Fatalf("/proc/loadavg: %q", data)
	}
	return load
}

// mean is the mean, in MiB, of a figure in KiB of the samples taken in
// (from, to], leaving out those without it (negative).
func mean(samples []sample, from, to time.Duration, of func(sample) int64) float64 {
	var sum, n float64
	for _, s := range samples {
		if v := of(s); s.at > from && s.at <= to && v >= 0 {
			sum, n = sum+float64(v), n+1
		}
	}
	return sum / n / 1024
}

// mib converts KiB to MiB.
func mib(kib int64) float64 { return float64(kib) / 1024 }

// queueAges returns how long each run waited, from its creation to its
// first attempt's start, shortest first.
func queueAges(b *testing.B, db *engine.DB) []time.Duration {
	rows, err := db.QueryContext(b.Context(), `SELECT r.START_DATE, min(a.STARTED_AT) FROM AUD_PIPELINES_RUN_LOG r
		JOIN AUD_TASK_RUN_LOG t ON t.PIPELINE_RUN_ID = r.PIPELINE_RUN_ID JOIN AUD_TASK_ATTEMPTS a ON a.TASK_RUN_ID = t.TASK_RUN_ID
		GROUP BY r.PIPELINE_RUN_ID, r.START_DATE`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var ages []time.Duration
	for rows.Next() {
		var created, started engine.Time
		if err := rows.Scan(&created, &started); err != nil {
			b.Fatal(err)
		}
		ages = append(ages, started.Time.Sub(created.Time))
	}
	if err := rows.Err(); err != nil || len(ages) == 0 {
		b.Fatalf("%d runs started: %v", len(ages), err)
	}
	slices.Sort(ages)
	return ages
}
