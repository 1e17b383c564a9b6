package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/report"
)

// tokenBody asks for a new token.
type tokenBody struct {
	Name    string   `json:"name" minLength:"1" maxLength:"128" doc:"The token's name, recorded as the actor of what it does."`
	Role    roleName `json:"role" doc:"What the token may do."`
	Expires string   `json:"expires,omitempty" pattern:"^[0-9]+[dh]$" doc:"Its lifetime in whole days or hours, such as 90d or 12h; it never expires when left out."`
}

// roleName is a token's role as a request names it: one of apitoken's
// roles, written as apitoken.ParseRole takes them.
type roleName string

// Schema lists the roles as the schema's enum.
func (roleName) Schema(huma.Registry) *huma.Schema {
	names := apitoken.Names()
	enum := make([]any, len(names))
	for i, n := range names {
		enum[i] = n
	}
	return &huma.Schema{Type: huma.TypeString, Enum: enum}
}

// tokenInputs are the inputs of the token endpoints.
type (
	createTokenInput struct {
		Body tokenBody
	}
	revokeTokenInput struct {
		ID int64 `path:"id" minimum:"1" doc:"The token's TOKEN_ID."`
	}
)

func (s *server) tokenRoutes() {
	endpoint(s, apitoken.Admin, huma.Operation{OperationID: "list-tokens", Method: http.MethodGet, Path: "/tokens",
		Summary: "List the API tokens", Description: "Every token, revoked and expired ones too, never a value, as `token list --format json`."},
		func(ctx context.Context, _ *struct{}) (*body[report.Tokens], error) {
			tokens, err := apitoken.List(ctx, s.p.DB)
			return reply(apitoken.Documents(tokens, time.Now())), err
		})
	endpoint(s, apitoken.Admin, huma.Operation{OperationID: "create-token", Method: http.MethodPost, Path: "/tokens",
		DefaultStatus: http.StatusCreated, Summary: "Create an API token",
		Description: "Answers with the token's value, once: only its SHA-256 is stored, so it cannot be shown again."},
		func(ctx context.Context, in *createTokenInput) (*body[report.Token], error) {
			c, err := s.actions().CreateToken(ctx, apitoken.Request{Name: in.Body.Name, Role: string(in.Body.Role), Expires: in.Body.Expires})
			if err != nil {
				return nil, err
			}
			doc := c.Document(time.Now())
			doc.Value = c.Value
			return reply(doc), nil
		})
	endpoint(s, apitoken.Admin, huma.Operation{OperationID: "revoke-token", Method: http.MethodPost, Path: "/tokens/{id}/revoke",
		Summary: "Revoke an API token", Description: "It stops authenticating at once, and stays listed with the time it was revoked."},
		func(ctx context.Context, in *revokeTokenInput) (*body[report.Token], error) {
			t, err := s.actions().RevokeToken(ctx, in.ID)
			return reply(t.Document(time.Now())), err
		})
}
