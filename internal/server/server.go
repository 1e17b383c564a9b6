// Package server is `etl-craft server`: the one overseer of an Engine DB.
// It assembles the background services of internal/maintenance (leader
// lock, overseer heartbeat, reconciler, schedule ticker) and the daily
// purge of internal/retention, and runs the main loop that admits QUEUED
// runs and executes every run it owns through the supervisor's shared
// worker pool, until its context ends; then it winds down within the
// shutdown grace. Optional HTTP handlers, the API and the web console, are
// served beside it on one listener.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/maintenance"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/retention"
	"github.com/etl-craft/etl-craft/internal/run"
)

// PollEvery is how often the main loop looks for work when nothing wakes it.
const PollEvery = time.Second

// passGap is the least time between two reads of the runs to supervise
// (dispatch): wakes that come sooner, such as the ends of many runs,
// share the next read.
const passGap = 50 * time.Millisecond

// retryAfter is how long a run that could not be executed waits before the
// server tries it again.
const retryAfter = 10 * time.Second

// HTTP limits of the API listener.
const (
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 120 * time.Second
	// MaxHeaderBytes is where the HTTP server itself stops reading a
	// request's headers (answering a bare 431): well above the API's own
	// limit, api.MaxHeaderBytes, which it refuses with an error document.
	MaxHeaderBytes = 64 << 10
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes = 1 << 20
)

// Options configure a server.
type Options struct {
	// Project is the open program; its supervisor must have been opened
	// project.ForServer, so that runs share one worker pool.
	Project *project.Project
	// Version is this build's version, for AUD_OVERSEERS.
	Version string
	// Handler, when set, is served on Orchestration.Api_address (the HTTP
	// API) for as long as the server runs.
	Handler http.Handler
	// Console, when set, is served beside Handler on the same listener:
	// Handler takes the paths under /api, Console every other one (the web
	// console, at /).
	Console http.Handler
	// Logger receives the server's records; nil discards them.
	Logger *slog.Logger
	// Started, when set, is called once the server is the overseer, with its
	// OVERSEER_ID and the API's address ("" without a Handler).
	Started func(overseerID int64, apiAddress string)
	// Observer, when set, watches the server for metrics and traces.
	Observer Observer
}

// Observer watches a server for metrics and traces (see internal/metrics).
type Observer interface {
	// Serve wraps the Handler: every request to the listener passes
	// through what it returns.
	Serve(h http.Handler) http.Handler
	// Overseer is told, once the server is the overseer, how to learn
	// whether it still holds the overseer lock and when its heartbeat was
	// last recorded.
	Overseer(leading func() bool, heartbeatAt func() time.Time)
}

// Server is one overseer.
type Server struct {
	opts Options
	db   *engine.DB
	sup  *run.Supervisor
	log  *slog.Logger
	// wake asks the main loop to read the runs to supervise again; start
	// asks it to start the queued runs.
	wake, start chan struct{}
	// wind is closed when the server stops: runs start nothing more.
	wind chan struct{}
	// hard ends the runs' attempts once the grace has passed.
	hard context.Context

	mu sync.Mutex
	// active are the pipelines whose run this server executes, by id.
	active map[int64]int64
	// failed holds runs that could not be executed, until when to retry.
	failed map[int64]time.Time
	// seen holds when the server first saw each QUEUED run that waits to
	// settle (see dispatch).
	seen map[int64]time.Time
	// queue holds the runs to execute, oldest first, from the last read
	// of the runs to supervise: each run waits there, admitted or QUEUED,
	// until a place in going is free.
	queue []openRun
	// going holds a place for each run the server executes that has not
	// settled yet (run.Request.Settled): one loading, being taken or
	// admitted, or waiting for a worker of the pool, polling its run
	// meanwhile. Runs beyond GoingPerWorker per worker wait in queue,
	// reading nothing.
	going chan struct{}
	runs  sync.WaitGroup
}

// GoingPerWorker is how many runs per worker of the pool the server gets
// going at once (see Server.going): enough that a worker never waits for
// a run's admission, few enough that the waiting runs' reads and the
// admissions' writes do not slow the running tasks down.
const GoingPerWorker = 4

// Run is the server: it becomes the overseer (or fails at once, exit 14,
// naming the overseer that is), starts the services, and supervises until
// ctx ends (SIGTERM or SIGINT). Then it stops dispatching, gives running
// tasks Orchestration.Shutdown_grace_seconds to finish, stops the rest,
// leaves unfinished runs IN-PROGRESS, records its stop and returns nil.
// A server that lost the overseer lock to another (see maintenance.Leader)
// stops the same way and returns that error (exit 14).
func Run(ctx context.Context, opts Options) error {
	p := opts.Project
	if p.Config.Orchestration.Mode == config.ModeRemote {
		return exit.Errorf(exit.RunRefused,
			"Orchestration.Mode is remote: the orchestrator runs the tasks, so there is nothing for a server to supervise; only local mode runs a server")
	}
	s := &Server{opts: opts, db: p.DB, sup: p.Supervisor(), log: opts.Logger, wake: make(chan struct{}, 1), start: make(chan struct{}, 1),
		wind: make(chan struct{}), active: map[int64]int64{}, failed: map[int64]time.Time{},
		going: make(chan struct{}, GoingPerWorker*max(p.Config.Orchestration.MaxParallelTasks, 1))}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	ctx, deposed := context.WithCancelCause(ctx)
	defer deposed(nil)
	var lost error
	leader := &maintenance.Leader{DB: s.db, Logger: s.log, Lost: func(err error) {
		lost = err
		deposed(err)
	}}
	heartbeat := &maintenance.Heartbeat{DB: s.db, Version: opts.Version, Logger: s.log}
	services := []maintenance.Service{leader, heartbeat,
		&maintenance.Reconciler{Supervisor: s.sup, Logger: s.log, Released: s.Wake},
		&maintenance.Ticker{DB: s.db, Zone: p.Config.Orchestration.Location, Logger: s.log, Queued: s.Wake},
		&retention.Daily{DB: s.db, Retention: p.Config.Retention, LogDir: p.Config.Orchestration.LogDir,
			Zone: p.Config.Orchestration.Location, Logger: s.log},
	}
	var started []maintenance.Service
	stopServices := func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i].Stop()
		}
	}
	for _, svc := range services {
		if err := svc.Start(ctx); err != nil {
			stopServices()
			return err
		}
		started = append(started, svc)
	}
	if opts.Observer != nil {
		opts.Observer.Overseer(leader.Leading, heartbeat.BeatAt)
	}
	api, addr, err := s.serveAPI()
	if err != nil {
		stopServices()
		return err
	}
	if addr != "" {
		p.ServeConsole(addr)
	}
	s.log.Info("the server is the overseer", "overseer_id", heartbeat.ID(), "pool", p.Config.Orchestration.MaxParallelTasks)
	if opts.Started != nil {
		opts.Started(heartbeat.ID(), addr)
	}
	hard, stopHard := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stopHard(nil)
	s.hard = hard
	go s.listen(ctx)
	s.loop(ctx)

	grace := time.Duration(p.Config.Orchestration.ShutdownGraceSeconds) * time.Second
	s.log.Info("stopping: no new dispatch; running tasks have the shutdown grace", "grace", grace.String())
	close(s.wind)
	if api != nil {
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace+time.Second)
		api.Shutdown(shut)
		cancel()
	}
	done := make(chan struct{})
	go func() { s.runs.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		stopHard(errors.New("the shutdown grace has passed"))
		<-done
	}
	// The heartbeat records the stop, then the leader lets a successor in.
	stopServices()
	s.log.Info("the server stopped", "overseer_id", heartbeat.ID())
	return lost
}

// Wake makes the main loop look for work now.
func (s *Server) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop reads the runs to supervise every PollEvery, and whenever woken but
// at most every passGap, and starts the queued runs whenever a place is
// free, until ctx ends.
func (s *Server) loop(ctx context.Context) {
	t := time.NewTicker(PollEvery)
	defer t.Stop()
	read := true
	var last time.Time
	var later <-chan time.Time
	for {
		switch wait := passGap - time.Since(last); {
		case read && wait <= 0:
			if err := s.dispatch(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("could not read the runs to supervise; trying again", "error", err)
			}
			read, last, later = false, time.Now(), nil
		case read && later == nil:
			later = time.After(wait)
		}
		s.startQueued()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			read = true
		case <-s.wake:
			read = true
		case <-s.start:
		case <-later:
			later = nil
		}
	}
}

// more makes the main loop start the queued runs now.
func (s *Server) more() {
	select {
	case s.start <- struct{}{}:
	default:
	}
}

// listen wakes the main loop on each notification of the engine's events
// channel (PostgreSQL); without events it returns at once and the loop
// polls.
func (s *Server) listen(ctx context.Context) {
	for ctx.Err() == nil {
		l, err := s.db.Listen(ctx)
		if l == nil && err == nil {
			return
		}
		for err == nil {
			var event string
			if event, err = l.Wait(ctx); err == nil {
				s.log.Debug("an engine event woke the server", "event", event)
				s.Wake()
			}
		}
		l.Close()
		if ctx.Err() == nil {
			s.log.Warn("listening for engine events failed; polling every second meanwhile", "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(PollEvery):
			}
		}
	}
}

// serveAPI listens on Orchestration.Api_address when a Handler is set.
func (s *Server) serveAPI() (*http.Server, string, error) {
	if s.opts.Handler == nil {
		return nil, "", nil
	}
	addr := s.opts.Project.Config.Orchestration.APIAddress
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", exit.Wrap(exit.Configuration, err, "Orchestration.Api_address %s: the HTTP API cannot listen there", addr)
	}
	h := routes(s.opts)
	if s.opts.Observer != nil {
		h = s.opts.Observer.Serve(h)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("the HTTP API stopped", "error", err)
		}
	}()
	s.log.Info("serving the HTTP API", "address", ln.Addr().String())
	return srv, ln.Addr().String(), nil
}

// apiPath is where the API's paths start (api.Prefix is under it): every
// request there is the API's, answered by it even for a path it has no
// endpoint for.
const apiPath = "/api"

// routes is what the listener serves: the API (Handler) under apiPath, and
// the console, when there is one, at every other path.
func routes(opts Options) http.Handler {
	if opts.Console == nil {
		return opts.Handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == apiPath || strings.HasPrefix(r.URL.Path, apiPath+"/") {
			opts.Handler.ServeHTTP(w, r)
			return
		}
		opts.Console.ServeHTTP(w, r)
	})
}
