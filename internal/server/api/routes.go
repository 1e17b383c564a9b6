package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/audit"
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

// record writes the state-changing request's immutable AUD_ACTIONS row, as
// the token's name, before the request acts, the way the command line
// records its commands: the command is "api <verb>", the arguments the
// request's fields (masked). A request that cannot be recorded does not act
// (audit.Record): the handler returns the error, which answers 503 within
// the busy timeout.
func (s *server) record(ctx context.Context, verb string, args map[string]any, pipelineCode, taskCode string, runID int64) error {
	req := audit.Request{Command: "api " + verb, Arguments: args, PipelineCode: pipelineCode, TaskCode: taskCode,
		PipelineRunID: runID, StartedAt: time.Now()}
	_, err := audit.Record(ctx, s.p.DB, req)
	return err
}

// routes registers every endpoint.
func (s *server) routes() {
	s.readRoutes()
	s.changeRoutes()
	s.tokenRoutes()
}
