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
// authenticates the request's bearer token by its hash, refuses a role too
// low, and lets the handler act as the token's name.
func (s *server) authorize(role apitoken.Role) func(huma.Context, func(huma.Context)) {
	return func(ctx huma.Context, next func(huma.Context)) {
		tok, err := apitoken.Authenticate(ctx.Context(), s.p.DB, presented(ctx.Header("Authorization")))
		if err != nil {
			if s.log != nil {
				s.log.Info("refused a request's API token", "error", err.Error())
			}
			e := s.problem(err)
			if e.Status == http.StatusUnauthorized {
				ctx.SetHeader("WWW-Authenticate", `Bearer realm="etl-craft"`)
			}
			writeHuma(ctx, e)
			return
		}
		if !tok.Role.Allows(role) {
			writeHuma(ctx, newError(http.StatusForbidden, classPermission, exit.RunRefused,
				"the token "+tok.Name+" has the role "+string(tok.Role)+"; this needs "+string(role)+" or above", ""))
			return
		}
		act, err := actor.New(tok.Name, TokenKind)
		if err != nil {
			writeHuma(ctx, s.problem(err))
			return
		}
		if who, ok := ctx.Context().Value(callerKey{}).(*caller); ok {
			who.name = tok.Name
		}
		next(huma.WithContext(ctx, context.WithValue(actor.With(ctx.Context(), act), tokenKey{}, tok)))
	}
}

// writeHuma writes an error document from a middleware.
func writeHuma(ctx huma.Context, e *report.Error) {
	ctx.SetHeader("Content-Type", "application/json")
	ctx.SetStatus(e.Status)
	enc := json.NewEncoder(ctx.BodyWriter())
	enc.SetEscapeHTML(false)
	enc.Encode(e)
}
