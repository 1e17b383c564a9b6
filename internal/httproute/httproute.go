// Package httproute carries the route a request matched, from the router
// that matched it back out to the listener's middleware, which labels the
// request's metrics and span with it: the route's pattern, such as
// /api/v1/runs/{run_id}, never the path itself, whose ids would make labels
// without end.
package httproute

import (
	"context"
	"net/http"
	"strings"
)

// key is the context key of a request's *route.
type key struct{}

// route is the pattern a tracked request matched, "" until a router sets it.
type route struct{ pattern string }

// Track returns r carrying a route for the router that serves it to Set,
// and the function that reads that route once the request was served: the
// pattern without its method, "" when no router set one.
func Track(r *http.Request) (*http.Request, func() string) {
	rt := &route{}
	return r.WithContext(context.WithValue(r.Context(), key{}, rt)), func() string { return rt.pattern }
}

// Set records the pattern of the route a request matched, as a router
// registered it ("GET /api/v1/runs/{run_id}" or "/metrics"), for the
// middleware that tracks it; on a request no middleware tracks it does
// nothing.
func Set(r *http.Request, pattern string) {
	rt, ok := r.Context().Value(key{}).(*route)
	if !ok {
		return
	}
	if method, path, found := strings.Cut(pattern, " "); found && !strings.HasPrefix(method, "/") {
		pattern = strings.TrimSpace(path)
	}
	rt.pattern = pattern
}
