package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/etl-craft/etl-craft/internal/action"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/report"
)

// The error classes of refusals that are no domain error: the token's and
// the router's.
const (
	classAuthentication = "AuthenticationError"
	classPermission     = "PermissionError"
)

func init() {
	// Every error huma itself writes (a body or query that does not fit
	// its schema, a body too large, an unacceptable format) is an
	// etl-craft/error/1 document too, and the OpenAPI document describes
	// that one. A body's keys must be spelled as its schema spells them
	// (see strictJSON). Only this package uses huma in the program.
	huma.NewError = func(status int, msg string, errs ...error) huma.StatusError { return schemaError(status, msg, errs) }
	huma.ValidateStrictCasing = true
}

// fieldName writes a request field as the API names it: pipeline_code and
// task_code for the pipeline and the task (the {code} and {task} of the
// paths), the JSON name itself otherwise.
func fieldName(field string) string {
	switch field {
	case "pipeline", "task":
		return field + "_code"
	}
	return field
}

// newError returns an error document.
func newError(status int, class string, code exit.Code, message string, field string) *report.Error {
	e := &report.Error{Schema: report.SchemaError, Status: status, ErrorClass: class, ExitCode: int(code), Message: message}
	if field != "" {
		e.Field = &field
	}
	return e
}

// schemaError is the document of an error huma found: a request that does
// not fit its schema is a usage error (exit 2) naming the first field at
// fault, as body.reason or query.limit locate it.
func schemaError(status int, msg string, errs []error) *report.Error {
	if status == 0 {
		// huma asks for an example error to describe it in OpenAPI.
		return newError(0, "", exit.Usage, "", "")
	}
	var parts []string
	field := ""
	for _, err := range errs {
		if err == nil {
			continue
		}
		var d huma.ErrorDetailer
		if errors.As(err, &d) {
			detail := d.ErrorDetail()
			if field == "" {
				field = faultyField(detail)
			}
			where := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(detail.Location, "body."), "query."), "path.")
			if where != "" && where != "body" {
				parts = append(parts, where+": "+detail.Message)
			} else {
				parts = append(parts, detail.Message)
			}
			continue
		}
		parts = append(parts, err.Error())
	}
	message := msg
	if len(parts) > 0 {
		message += ": " + strings.Join(parts, "; ")
	}
	if status == http.StatusRequestEntityTooLarge {
		message = fmt.Sprintf("the request body is over %d bytes (64 KiB), the most the API takes", MaxBodyBytes)
	}
	code := exit.Usage
	if status >= 500 {
		code = exit.Unexpected
	}
	return newError(status, code.Class(), code, message, field)
}

// faultyField is the request field a schema error is about: the one its
// location names (body.reason, query.limit), or for a missing field of the
// body the property huma's message names.
func faultyField(d *huma.ErrorDetail) string {
	if _, name, ok := strings.Cut(d.Location, "."); ok {
		return name
	}
	if _, rest, ok := strings.Cut(d.Message, "required property "); ok {
		name, _, _ := strings.Cut(rest, " ")
		return name
	}
	return ""
}

// invalidToken is the message of a presented token that does not
// authenticate: unknown, revoked or expired alike.
const invalidToken = "the API token is not valid: present a token that is known, neither revoked nor expired (etl-craft token list shows them)"

// problem is the error document of err, a domain error or a refusal of the
// token: its HTTP status, error class, exit code and message, with the
// request fields it names written as the API names them.
func (s *server) problem(err error) *report.Error {
	var doc *report.Error
	if errors.As(err, &doc) {
		return doc
	}
	switch {
	case errors.Is(err, apitoken.ErrMissing):
		return newError(http.StatusUnauthorized, classAuthentication, exit.Usage, apitoken.ErrMissing.Error(), "")
	case errors.Is(err, apitoken.ErrUnknown), errors.Is(err, apitoken.ErrExpired), errors.Is(err, apitoken.ErrRevoked):
		// Which token it was, and why it no longer counts, is for the
		// log: the answer tells a caller nothing about stored tokens.
		return newError(http.StatusUnauthorized, classAuthentication, exit.Usage, invalidToken, "")
	}
	code := exit.CodeOf(err)
	message := exit.RenderFields(exit.Text(err), fieldName)
	field := ""
	var fe *exit.FieldError
	var te *apitoken.FieldError
	switch {
	case errors.As(err, &fe) && len(fe.Fields) > 0:
		field = fieldName(fe.Fields[0])
	case errors.As(err, &te):
		field = te.Field
	}
	return newError(action.HTTPStatus(s.p.DB, err), code.Class(), code, message, field)
}

// notFound is the error of a path the API has no route for.
func notFound(r *http.Request) *report.Error {
	return newError(http.StatusNotFound, exit.Usage.Class(), exit.Usage,
		fmt.Sprintf("no endpoint %s %s: see %s/docs", r.Method, r.URL.Path, Prefix), "")
}

// writeError writes an error document outside huma.
func writeError(w http.ResponseWriter, e *report.Error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(e)
}
