package metrics

import (
	"net/http"
	"time"

	"github.com/etl-craft/etl-craft/internal/httproute"
	"github.com/etl-craft/etl-craft/internal/httpstatus"
)

// Path is where the server's listener serves the metrics.
const Path = "/metrics"

// unmatched is the route label of a request no route matched.
const unmatched = "unmatched"

// Listener watches a server (server.Observer): it serves the metrics at
// Path on the server's listener, and measures and traces every request
// there by the route it matched.
type Listener struct {
	*Metrics
	endpoint http.Handler
}

// Server returns the Listener of the server: Path answers only through
// guard (the API's check of a viewer's token), unless Options.Public.
func (m *Metrics) Server(guard func(http.Handler) http.Handler) *Listener {
	endpoint := m.Handler()
	if !m.opts.Public {
		endpoint = guard(endpoint)
	}
	return &Listener{Metrics: m, endpoint: endpoint}
}

// Serve wraps the listener's handler h: Path is answered here, anything
// else by h, and each request is counted, timed and traced by the pattern
// of its route (the router under h tells it through httproute), its method
// and its status.
func (l *Listener) Serve(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		r, route := httproute.Track(r)
		r, sp := startRequest(r)
		rec := httpstatus.Record(w)
		if r.URL.Path == Path {
			httproute.Set(r, Path)
			l.endpoint.ServeHTTP(rec, r)
		} else {
			h.ServeHTTP(rec, r)
		}
		pattern := route()
		if pattern == "" {
			pattern = unmatched
		}
		method := methodLabel(r.Method)
		l.v.httpRequests.WithLabelValues(pattern, method, code(rec.Status())).Inc()
		l.v.httpDuration.WithLabelValues(pattern, method).Observe(time.Since(start).Seconds())
		endRequest(sp, method, pattern, rec.Status())
	})
}

// methodLabel is a request's method as a label: one of the standard
// methods, or OTHER.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete,
		http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}
