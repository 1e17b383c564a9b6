package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/report"
)

// bearerScheme names the OpenAPI security scheme of the API tokens.
const bearerScheme = "bearer"

// TokenKind is the actor kind recorded with what a token does: the API
// is how other tools (bots, dashboards, orchestrators) act, under the
// token's name.
const TokenKind = actor.Orchestrator

// tokenKey is the context key of the request's authenticated token.
type tokenKey struct{}

// tokenOf returns the request's authenticated token.
func tokenOf(ctx context.Context) apitoken.Token {
	t, _ := ctx.Value(tokenKey{}).(apitoken.Token)
	return t
}

// presented returns the token of an Authorization header: the credentials
// of the Bearer scheme (in any letter case), "" for anything else.
func presented(header string) string {
	scheme, value, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(value)
}

// authorize is the middleware of an endpoint that needs the role: it
// authenticates the request's bearer token and lets the handler act as the
// token's name (see authenticate).
func (s *server) authorize(role apitoken.Role) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		acting, e := s.authenticate(ctx.Context(), ctx.Header("Authorization"), role)
		if e != nil {
			if e.Status == http.StatusUnauthorized {
				ctx.SetHeader("WWW-Authenticate", bearerChallenge)
			}
			writeHuma(ctx, e)
			return
		}
		next(huma.WithContext(ctx, acting))
	}
}

// Protect serves h only to a request whose bearer token (a token of
// CFG_API_TOKENS) has the role or above, acting as the token's name, and
// answers any other as the API does: 401 (with WWW-Authenticate), 403, 503
// while the Engine DB is unavailable, 400 for two Authorization headers.
// The server's /metrics is so protected.
func Protect(p *project.Project, role apitoken.Role, h http.Handler, opts ...Option) http.Handler {
	s := &server{p: p}
	for _, o := range opts {
		o(s)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		private(w.Header())
		if e := refusedHeaders(r); e != nil {
			writeError(w, e)
			return
		}
		acting, e := s.authenticate(r.Context(), r.Header.Get("Authorization"), role)
		if e != nil {
			if e.Status == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", bearerChallenge)
			}
			writeError(w, e)
			return
		}
		h.ServeHTTP(w, r.WithContext(acting))
	})
}

// bearerChallenge is the WWW-Authenticate header of a 401.
const bearerChallenge = `Bearer realm="etl-craft"`

// authenticate authenticates the bearer token of an Authorization header by
// its hash and checks that its role allows role. It returns ctx acting as
// the token's name and carrying the token, or the error document to answer
// with.
func (s *server) authenticate(ctx context.Context, header string, role apitoken.Role) (context.Context, *report.Error) {
	tok, err := apitoken.Authenticate(ctx, s.p.DB, presented(header))
	if err != nil {
		if s.log != nil {
			s.log.Info("refused a request's API token", "error", err.Error())
		}
		return nil, s.problem(err)
	}
	if !tok.Role.Allows(role) {
		return nil, newError(http.StatusForbidden, classPermission, exit.RunRefused,
			"the token "+tok.Name+" has the role "+string(tok.Role)+"; this needs "+string(role)+" or above", "")
	}
	act, err := actor.New(tok.Name, TokenKind)
	if err != nil {
		return nil, s.problem(err)
	}
	if who, ok := ctx.Value(callerKey{}).(*caller); ok {
		who.name = tok.Name
	}
	return context.WithValue(actor.With(ctx, act), tokenKey{}, tok), nil
}

// writeHuma writes an error document from a middleware.
func writeHuma(ctx huma.Context, e *report.Error) {
	ctx.SetHeader("Content-Type", "application/json")
	ctx.SetStatus(e.Status)
	enc := json.NewEncoder(ctx.BodyWriter())
	enc.SetEscapeHTML(false)
	enc.Encode(e)
}
