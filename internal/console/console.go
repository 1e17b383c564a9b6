// Package console is the operators' web console that `etl-craft server`
// serves at / beside its HTTP API: server-rendered html/template pages of
// the pipelines, of one pipeline (the grid of its last runs, its task graph,
// its schedule), of a run (its tasks, a Gantt chart of their attempts, the
// explain of each task, its interventions and gate decisions), of an
// attempt's log, of the server and of the API tokens, each at a stable URL,
// kept live by server-sent events (live.go) and a small script of its own
// (assets/console.js; no inline script: the Content-Security-Policy forbids
// it).
//
// A person signs in with an API token (session.go); the token's role
// decides what they see and may do, exactly as in the API. Every action is
// the API's own (package action), recorded in AUD_ACTIONS as "console
// <verb>" with the token's name as the actor, before it acts. Every text
// the Engine DB holds (codes, reasons, error messages, SQL, logs) is shown
// as text, never as markup.
package console

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/action"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/httpstatus"
	"github.com/etl-craft/etl-craft/internal/project"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// MaxBodyBytes is the largest form a request may post.
const MaxBodyBytes = 64 << 10

// MaxText is the longest text a form field may hold, as the API's reasons.
const MaxText = 4000

// contentSecurityPolicy allows the console's own scripts, styles and
// requests, and nothing inline, framed or from elsewhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Options configure the console.
type Options struct {
	// Logger receives a record per request at debug level, and the
	// console's warnings; nil discards them.
	Logger *slog.Logger
	// Done, once closed, ends the pages' live streams: the server is
	// stopping, and its listener waits for no open stream.
	Done <-chan struct{}
}

// Console is the console of one open project.
type Console struct {
	p    *project.Project
	act  action.Actions
	log  *slog.Logger
	done <-chan struct{}
	hub  *hub
}

// assets are the embedded assets (assets/), and assetURLs their URLs, each
// with the digest of its content, so that a browser keeps one until it
// changes.
var (
	assets    = must(fs.Sub(assetFS, "assets"))
	assetURLs = digestURLs("console.css", "console.js", "favicon.svg")
)

// must returns v, panicking on err: for what is embedded, which the tests
// read.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// digestURLs returns the URL of each named asset, with its digest.
func digestURLs(names ...string) map[string]string {
	out := map[string]string{}
	for _, name := range names {
		sum := sha256.Sum256(must(fs.ReadFile(assets, name)))
		out[name] = "/static/" + name + "?v=" + hex.EncodeToString(sum[:6])
	}
	return out
}

// New returns the console of the open project as an http.Handler. The
// caller keeps the project open while it serves.
func New(p *project.Project, opts Options) http.Handler {
	c := &Console{p: p, act: action.Actions{Project: p, Via: action.Console}, log: opts.Logger, done: opts.Done}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.done == nil {
		c.done = make(chan struct{})
	}
	c.hub = newHub(p.DB, c.log)
	mux := http.NewServeMux()
	c.routes(mux)
	return c.guard(mux)
}

// routes registers every page and action.
func (c *Console) routes(mux *http.ServeMux) {
	viewer, operator, admin := apitoken.Viewer, apitoken.Operator, apitoken.Admin
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/pipelines", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /static/{name}", c.static)
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, assetURLs["favicon.svg"], http.StatusMovedPermanently)
	})
	mux.HandleFunc("GET /signin", c.signinForm)
	mux.HandleFunc("POST /signin", c.signin)
	mux.HandleFunc("POST /signout", c.action(viewer, c.signout))
	mux.HandleFunc("GET /events", c.page(viewer, c.events))

	mux.HandleFunc("GET /pipelines", c.page(viewer, c.pipelinesPage))
	mux.HandleFunc("GET /pipelines/{code}", c.page(viewer, c.pipelinePage))
	mux.HandleFunc("POST /pipelines/{code}/trigger", c.action(operator, c.trigger))
	mux.HandleFunc("POST /pipelines/{code}/backfill", c.action(operator, c.backfill))
	mux.HandleFunc("POST /pipelines/{code}/pause", c.action(operator, c.pause))
	mux.HandleFunc("POST /pipelines/{code}/resume", c.action(operator, c.resume))
	mux.HandleFunc("GET /runs/{id}", c.page(viewer, c.runPage))
	mux.HandleFunc("GET /runs/{id}/tasks/{task}", c.page(viewer, c.explainPage))
	mux.HandleFunc("POST /runs/{id}/cancel", c.action(operator, c.cancel))
	mux.HandleFunc("POST /runs/{id}/rerun", c.action(operator, c.rerun))
	mux.HandleFunc("POST /runs/{id}/mark", c.action(operator, c.mark))
	mux.HandleFunc("GET /attempts/{id}", c.page(viewer, c.attemptPage))
	mux.HandleFunc("GET /attempts/{id}/log", c.page(viewer, c.attemptLog))
	mux.HandleFunc("GET /server", c.page(viewer, c.serverPage))
	mux.HandleFunc("GET /search", c.page(viewer, c.searchPage))
	mux.HandleFunc("GET /tokens", c.page(admin, c.tokensPage))
	mux.HandleFunc("POST /tokens", c.action(admin, c.createToken))
	mux.HandleFunc("POST /tokens/{id}/revoke", c.action(admin, c.revokeToken))
	mux.HandleFunc("/", c.notFound)
}

// guard is what every request goes through: the security headers (the
// policy, no framing, no sniffing, no caching but of assets), the body
// limit, and its log record.
func (c *Console) guard(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		rec := httpstatus.Record(w)
		mux.ServeHTTP(rec, r)
		c.log.Debug("console request", "method", r.Method, "path", r.URL.Path, "status", rec.Status(),
			"duration_ms", time.Since(start).Milliseconds())
	})
}

// static serves an embedded asset; its URL names its digest, so it may be
// kept for a year.
func (c *Console) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	b, err := fs.ReadFile(assets, name)
	if err != nil || strings.HasPrefix(name, ".") {
		c.notFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	types := map[string]string{".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".svg": "image/svg+xml"}
	w.Header().Set("Content-Type", types[path.Ext(name)])
	w.Write(b)
}

// pageHandler serves a request of a signed-in session.
type pageHandler func(w http.ResponseWriter, r *http.Request, s *session)

// page returns the handler of a page that needs the role: a request
// without a session is sent to sign in, and back here after; one whose
// token's role is too low is refused (403).
func (c *Console) page(role apitoken.Role, h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := findSession(r.Context(), c.p.DB, r)
		switch {
		case err != nil:
			c.fail(w, r, nil, err)
		case s == nil:
			http.Redirect(w, r, signinPath(r.URL.RequestURI()), http.StatusSeeOther)
		case !s.Can(role):
			c.forbidden(w, r, s, "the token "+s.Name()+" has the role "+string(s.Role())+"; this page needs "+string(role)+" or above")
		default:
			ctx, err := s.acting(r.Context())
			if err != nil {
				c.fail(w, r, s, err)
				return
			}
			// The page's reads come after this version: see live.go.
			h(w, r.WithContext(context.WithValue(ctx, versionKey{}, c.hub.version())), s)
		}
	}
}

// signinPath is the sign-in page's path, coming back to next after.
func signinPath(next string) string {
	if localPath(next) == "" || next == "/" {
		return "/signin"
	}
	return "/signin?next=" + url.QueryEscape(next)
}

// fieldLabel writes a request field a message names ({run_date}) as the
// forms name it: run date.
func fieldLabel(field string) string { return strings.ReplaceAll(field, "_", " ") }

// message is an error's text for a page, its request fields written as the
// forms name them.
func message(err error) string { return exit.RenderFields(exit.Text(err), fieldLabel) }

// fail answers an error of a read (or of the session) with an error page
// and the status the API would answer it with.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status := action.HTTPStatus(c.p.DB, err)
	if status >= http.StatusInternalServerError && status != http.StatusServiceUnavailable {
		c.log.Error("a console page failed", "path", r.URL.Path, "error", err)
	}
	c.render(w, r, s, status, "error", "Error", "", errorPage{Status: status, Message: message(err)})
}

// forbidden refuses a request (403) with the reason.
func (c *Console) forbidden(w http.ResponseWriter, r *http.Request, s *session, reason string) {
	c.render(w, r, s, http.StatusForbidden, "error", "Refused", "", errorPage{Status: http.StatusForbidden, Message: reason})
}

// notFound answers a path the console has no page for.
func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	s, _ := findSession(r.Context(), c.p.DB, r)
	c.render(w, r, s, http.StatusNotFound, "error", "Not found", "",
		errorPage{Status: http.StatusNotFound, Message: "the console has no page " + r.URL.Path})
}

// errorPage is what an error page shows.
type errorPage struct {
	Status  int
	Message string
}
