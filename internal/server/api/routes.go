package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/etl-craft/etl-craft/internal/action"
	"github.com/etl-craft/etl-craft/internal/apitoken"
)

// body is a response whose body is one document.
type body[T any] struct{ Body T }

// reply wraps a document as a response.
func reply[T any](doc T) *body[T] { return &body[T]{Body: doc} }

// endpoint registers one operation under Prefix for tokens of the role or
// above: bearer security, the body limit, the error statuses it documents,
// and its errors written as etl-craft/error/1 documents.
func endpoint[I, O any](s *server, role apitoken.Role, op huma.Operation, handle func(context.Context, *I) (*O, error)) {
	op.Tags = []string{tagOf(op.Path)}
	op.Path = Prefix + op.Path
	op.Security = []map[string][]string{{bearerScheme: {}}}
	op.Middlewares = huma.Middlewares{s.authorize(role)}
	op.MaxBodyBytes = bodyLimit
	op.Errors = []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound,
		http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity,
		http.StatusRequestHeaderFieldsTooLarge, http.StatusServiceUnavailable}
	op.Description = strings.TrimSpace(op.Description + " Needs a token of the " + string(role) + " role or above.")
	huma.Register(s.api, op, func(ctx context.Context, in *I) (*O, error) {
		if err := checkFreeText(in); err != nil {
			return nil, err
		}
		out, err := handle(ctx, in)
		if err != nil {
			return nil, s.problem(err)
		}
		return out, nil
	})
}

// actions are the state changes the API offers, recorded in AUD_ACTIONS
// as "api <verb>" (see package action).
func (s *server) actions() action.Actions { return action.Actions{Project: s.p, Via: action.API} }

// routes registers every endpoint.
func (s *server) routes() {
	s.readRoutes()
	s.changeRoutes()
	s.tokenRoutes()
}
