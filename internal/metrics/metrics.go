// Package metrics is what etl-craft tells monitoring: the Prometheus
// metrics `etl-craft server` serves at /metrics, and the OpenTelemetry
// traces every command exports when tracing is on (tracing.go).
//
// It owns the client libraries: the domain packages report through hooks
// they define themselves (engine.Observer, run.Observer, clone's Copied,
// server.Observer, package span), which this package implements. What the
// Engine DB records of runs and attempts is read from it at each scrape
// (history.go), so that the counts agree with `etl-craft history` whichever
// process did the work; what only this process sees (how long work waited,
// its Engine DB latency, its clones, its HTTP requests, its worker pool) is
// measured here. Labels are bounded: a pipeline's code, a handler, a
// status, a trigger kind, a route pattern; never an id or free text.
// docs/metrics.md describes every metric.
package metrics

import (
	"context"
	"log/slog"
	"net/http"
	"runtime"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/etl-craft/etl-craft/internal/clone"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

// Namespace prefixes every metric of etl-craft.
const Namespace = "etl_craft"

// Options configure the metrics of a server.
type Options struct {
	// Version is this build's version, for etl_craft_build_info.
	Version string
	// Public serves /metrics without a token
	// (Orchestration.Metrics_public).
	Public bool
	// Logger receives what goes wrong reading the Engine DB; nil discards.
	Logger *slog.Logger
}

// Metrics are the metrics of one server process. Its methods are the
// hooks of the domain packages; Watch starts reading the Engine DB, and
// Server serves them.
type Metrics struct {
	opts Options
	reg  *prometheus.Registry
	v    *vecs
	// overseer is the server's state once it is the overseer.
	overseer atomic.Pointer[overseer]
}

// overseer is how to read the server's overseer state (server.Observer).
type overseer struct {
	leading     func() bool
	heartbeatAt func() time.Time
}

// vecs are the metrics, by what they measure.
type vecs struct {
	// From the Engine DB (history.go).
	runsStarted, runsEnded, slaBreaches      *prometheus.CounterVec
	attemptsEnded, attemptsRetried           *prometheus.CounterVec
	runDuration, attemptDuration             *prometheus.HistogramVec
	runsQueued, oldestQueued, runsInProgress prometheus.Gauge
	gateWaits                                prometheus.Gauge
	// Of this process.
	admission, dispatch *prometheus.HistogramVec
	cloneDuration       *prometheus.HistogramVec
	cloneRows           *prometheus.CounterVec
	cloneFailures       prometheus.Counter
	dbDuration          *prometheus.HistogramVec
	dbErrors            *prometheus.CounterVec
	httpRequests        *prometheus.CounterVec
	httpDuration        *prometheus.HistogramVec
}

// Buckets of the histograms, in seconds.
var (
	runBuckets      = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400}
	attemptBuckets  = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200}
	waitBuckets     = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 3600}
	cloneBuckets    = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	databaseBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	httpBuckets     = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
)

// New returns the metrics of a server; nothing is read until Watch.
func New(opts Options) *Metrics {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help})
	}
	v := &vecs{
		runsStarted:     counter("runs_started_total", "Runs recorded in the Engine DB, by pipeline and trigger kind.", "pipeline", "trigger"),
		runsEnded:       counter("runs_ended_total", "Runs ended, by pipeline, trigger kind and status; a run reopened and ended again counts again.", "pipeline", "trigger", "status"),
		slaBreaches:     counter("sla_breaches_total", "Runs recorded past their pipeline's SLA (SLA_STATUS BREACHED), by pipeline.", "pipeline"),
		attemptsEnded:   counter("attempts_ended_total", "Task attempts ended, by pipeline, handler and status (LOST: fenced after its process died).", "pipeline", "handler", "status"),
		attemptsRetried: counter("attempts_retried_total", "Task attempts queued as automatic retries of a failed one, by pipeline and handler.", "pipeline", "handler"),
		runDuration:     histogram("run_duration_seconds", "Time from admission to end of the runs that ended since the server started, by status.", runBuckets, "status"),
		attemptDuration: histogram("attempt_duration_seconds", "Time from start to end of the attempts that ended since the server started, by handler and status.", attemptBuckets, "handler", "status"),
		runsQueued:      gauge("runs_queued", "Runs QUEUED: recorded, not admitted yet."),
		oldestQueued:    gauge("runs_queued_oldest_age_seconds", "Age of the oldest QUEUED run; 0 when none waits."),
		runsInProgress:  gauge("runs_in_progress", "Runs IN-PROGRESS."),
		gateWaits:       gauge("gate_waits_open", "Dependency gates of open runs waiting for a running upstream."),
		admission:       histogram("run_admission_wait_seconds", "Time from a run being recorded QUEUED (a schedule tick, a trigger) to its admission by this server, by trigger kind.", waitBuckets, "trigger"),
		dispatch:        histogram("attempt_dispatch_wait_seconds", "Time from a task being ready with a free slot of its run to its attempt starting (a worker of the pool and the binding), by handler.", waitBuckets, "handler"),
		cloneDuration:   histogram("clone_table_duration_seconds", "Time to copy one Engine DB table into its mirror, by copy mode (full, incremental).", cloneBuckets, "mode"),
		cloneRows:       counter("clone_rows_total", "Rows written into mirrors, by copy mode (full, incremental).", "mode"),
		cloneFailures:   prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "clone_table_failures_total", Help: "Tables a clone could not copy."}),
		dbDuration:      histogram("engine_db_duration_seconds", "Latency of this process's Engine DB operations: query, exec, and write transaction (lock wait included).", databaseBuckets, "operation"),
		dbErrors:        counter("engine_db_errors_total", "Engine DB operations of this process that failed, by operation.", "operation"),
		httpRequests:    counter("http_requests_total", "HTTP requests answered on the server's listener (API, console, /metrics), by route pattern, method and status code.", "route", "method", "code"),
		httpDuration:    histogram("http_request_duration_seconds", "Time to answer HTTP requests on the server's listener, by route pattern and method.", httpBuckets, "route", "method"),
	}
	m := &Metrics{opts: opts, reg: prometheus.NewRegistry(), v: v}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		v.admission, v.dispatch, v.cloneDuration, v.cloneRows, v.cloneFailures, v.dbDuration, v.dbErrors, v.httpRequests, v.httpDuration)
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: Namespace, Name: "build_info", Help: "1, labelled with this build's version and Go version.",
		ConstLabels: prometheus.Labels{"version": opts.Version, "go_version": runtime.Version()}})
	info.Set(1)
	m.reg.MustRegister(info,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "overseer_leader",
			Help: "1 while this server holds the overseer lock, else 0."}, func() float64 {
			if o := m.overseer.Load(); o != nil && o.leading() {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "overseer_heartbeat_age_seconds",
			Help: "Time since this server last recorded its heartbeat in AUD_OVERSEERS (it does every 15 s)."}, func() float64 {
			if o := m.overseer.Load(); o != nil {
				return time.Since(o.heartbeatAt()).Seconds()
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "warehouse_duckdb_memory_bytes",
			Help: "Memory DuckDB counts in use (duckdb_memory()) by the DuckDB warehouse files this process has open; 0 while none is open."}, func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			n, err := warehouse.DuckDBMemory(ctx)
			if err != nil {
				m.opts.Logger.Warn("could not read DuckDB's memory for /metrics", "error", err)
			}
			return float64(n)
		}))
	return m
}

// Watch starts reading the runs and attempts of the Engine DB at each
// scrape, and the worker pool's slots when pool is set.
func (m *Metrics) Watch(db *engine.DB, pool *run.Pool) {
	v := m.v
	h := &history{db: db, v: v, log: m.opts.Logger}
	m.reg.MustRegister(&historyCollector{h: h,
		failed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "metrics_engine_db_read_failures_total",
			Help: "Scrapes whose read of the Engine DB failed: they showed the values of the last read."}),
		collectors: []prometheus.Collector{v.runsStarted, v.runsEnded, v.slaBreaches, v.attemptsEnded, v.attemptsRetried,
			v.runDuration, v.attemptDuration, v.runsQueued, v.oldestQueued, v.runsInProgress, v.gateWaits}})
	if pool == nil {
		return
	}
	slots := func(state string, value func() int) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: "worker_slots",
			Help:        "Workers of the server's pool (Orchestration.Max_parallel_tasks), by state: busy running an attempt, or free.",
			ConstLabels: prometheus.Labels{"state": state}}, func() float64 { return float64(value()) })
	}
	m.reg.MustRegister(slots("busy", pool.Busy), slots("free", func() int { return pool.Size() - pool.Busy() }))
}

// Handler serves the metrics in the Prometheus text format, unguarded.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorLog: slog.NewLogLogger(m.opts.Logger.Handler(), slog.LevelWarn)})
}

// Observe is the Engine DB's hook (engine.Observer).
func (m *Metrics) Observe(op engine.Operation, took time.Duration, err error) {
	m.v.dbDuration.WithLabelValues(string(op)).Observe(took.Seconds())
	if err != nil {
		m.v.dbErrors.WithLabelValues(string(op)).Inc()
	}
}

// Admitted is the supervisor's hook of admissions (run.Observer).
func (m *Metrics) Admitted(_, trigger string, wait time.Duration) {
	m.v.admission.WithLabelValues(trigger).Observe(wait.Seconds())
}

// Dispatched is the supervisor's hook of dispatches (run.Observer).
func (m *Metrics) Dispatched(handler string, wait time.Duration) {
	m.v.dispatch.WithLabelValues(handler).Observe(wait.Seconds())
}

// Copied is the clone's hook (clone.Options.Copied).
func (m *Metrics) Copied(t clone.Table, took time.Duration, err error) {
	if err != nil {
		m.v.cloneFailures.Inc()
		return
	}
	m.v.cloneDuration.WithLabelValues(t.Copy()).Observe(took.Seconds())
	m.v.cloneRows.WithLabelValues(t.Copy()).Add(float64(t.Copied))
}

// Overseer is told of the server's overseer state (server.Observer).
func (m *Metrics) Overseer(leading func() bool, heartbeatAt func() time.Time) {
	m.overseer.Store(&overseer{leading: leading, heartbeatAt: heartbeatAt})
}

// code is an HTTP status code as a label.
func code(status int) string { return strconv.Itoa(status) }
