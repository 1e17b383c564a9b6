package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/config"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/engine/enginetest"
	"github.com/etl-craft/etl-craft/internal/migrate"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
	"github.com/etl-craft/etl-craft/internal/project"
	"github.com/etl-craft/etl-craft/internal/run"
	"github.com/etl-craft/etl-craft/internal/server/api"
)

// admin is the actor of the fixtures' own changes.
var admin = actor.Actor{Name: "tester@host", Kind: actor.Human}

// acting returns a context in which the fixture's actor acts.
func acting() context.Context { return actor.With(context.Background(), admin) }

// fixture is an open project (a fresh Engine DB of one dialect and a DuckDB
// warehouse) served by the API on an httptest server, with the OpenAPI
// document it serves loaded to validate every response.
type fixture struct {
	t      testing.TB
	p      *project.Project
	b      *pipelinetest.Builder
	srv    *httptest.Server
	router routers.Router
	// opts are the Engine DB's options, to open a second connection.
	opts engine.Options
}

// newFixture opens a project on a fresh Engine DB of the kind, sets it up,
// and serves its API.
func newFixture(t testing.TB, kind engine.Kind) *fixture {
	t.Helper()
	return newFixtureWith(t, kind, "")
}

// newFixtureWith is newFixture with more settings of the Engine profile,
// lines indented four spaces, such as "    busy_timeout_seconds: 1\n".
func newFixtureWith(t testing.TB, kind engine.Kind, engineSettings string) *fixture {
	t.Helper()
	dir := t.TempDir()
	var block string
	f := &fixture{t: t}
	if kind == engine.SQLite {
		block = "    jdbc_url: jdbc:sqlite:state/engine.db\n    schema: main\n"
		f.opts = engine.Options{Kind: engine.SQLite, Path: filepath.Join(dir, "state", "engine.db")}
	} else {
		raw := enginetest.NewPGDatabase(t)
		u, _ := url.Parse(raw)
		pw, _ := u.User.Password()
		block = fmt.Sprintf("    jdbc_url: jdbc:postgresql://%s%s?sslmode=disable\n    schema: public\n    auth_mode: password\n    user: %s\n    secret: ENGINE_SECRET\n",
			u.Host, u.Path, u.User.Username())
		t.Setenv("ENGINE_SECRET", pw)
		f.opts = engine.Options{Kind: engine.Postgres, DSN: raw, Schema: "public"}
	}
	yml := "Secrets:\n  Source_type: environment\n  Profile: dev\n\nOrchestration:\n  Mode: local\n\nEngine:\n  dev:\n" + block + engineSettings +
		"\nWarehouse:\n  Name: DuckDB\n  dev:\n    jdbc_url: jdbc:duckdb:warehouse.duckdb\n    schema: main\n"
	if err := os.WriteFile(filepath.Join(dir, config.FileName), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(filepath.Join(dir, config.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if f.p, err = project.Open(acting(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.p.Close() })
	migrations, _ := cfg.MigrationsDir("")
	if _, err := (&migrate.Runner{DB: f.p.DB, ProjectDir: migrations}).Setup(acting()); err != nil {
		t.Fatal(err)
	}
	f.b = pipelinetest.New(t, f.p.DB)
	f.srv = httptest.NewServer(api.New(f.p))
	t.Cleanup(f.srv.Close)
	f.loadOpenAPI()
	return f
}

// loadOpenAPI fetches the served OpenAPI document, with no token (it is
// public), checks it and builds the router that finds each response's
// operation.
func (f *fixture) loadOpenAPI() {
	f.t.Helper()
	res, err := http.Get(f.srv.URL + api.Prefix + "/openapi.json")
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		f.t.Fatalf("openapi.json: %d %s", res.StatusCode, raw)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		f.t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		f.t.Fatalf("the served OpenAPI document is invalid: %v", err)
	}
	doc.Servers = openapi3.Servers{{URL: f.srv.URL}}
	if f.router, err = legacy.NewRouter(doc); err != nil {
		f.t.Fatal(err)
	}
}

// response is one answer of the API.
type response struct {
	status int
	body   []byte
}

// decode reads the response's JSON body into v.
func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// call sends a request with the token (none when ""), and a JSON body when
// body is not nil (a string is sent as it is), and checks that the response
// validates against the served OpenAPI document.
func (f *fixture) call(token, method, path string, body any) response {
	f.t.Helper()
	var rd io.Reader
	var raw []byte
	if body != nil {
		if s, ok := body.(string); ok {
			raw = []byte(s)
		} else {
			raw, _ = json.Marshal(body)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, f.srv.URL+api.Prefix+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	got, _ := io.ReadAll(res.Body)
	f.validate(req, raw, res, got)
	return response{status: res.StatusCode, body: got}
}

// validate checks a response against the operation of the served OpenAPI
// document that the request matches: its status is documented and its body
// fits that status's schema.
func (f *fixture) validate(req *http.Request, reqBody []byte, res *http.Response, body []byte) {
	f.t.Helper()
	route, params, err := f.router.FindRoute(req)
	if err != nil {
		f.t.Fatalf("%s %s: no operation in the OpenAPI document: %v", req.Method, req.URL.Path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if reqBody != nil {
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: res.StatusCode, Header: res.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	out.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), out); err != nil {
		f.t.Errorf("%s %s answered %d, which the OpenAPI document does not allow: %v\n%s", req.Method, req.URL.Path, res.StatusCode, err, body)
	}
}

// tokens are a token of each role, and the refused ones.
type tokens struct {
	viewer, operator, admin, expired, revoked string
}

// newTokens creates a token of each role, an expired admin token and a
// revoked admin token.
func (f *fixture) newTokens() tokens {
	f.t.Helper()
	create := func(name string, role apitoken.Role, expires string) apitoken.Created {
		c, err := apitoken.Create(acting(), f.p.DB, apitoken.Request{Name: name, Role: string(role), Expires: expires})
		if err != nil {
			f.t.Fatal(err)
		}
		return c
	}
	tk := tokens{viewer: create("dashboard", apitoken.Viewer, "").Value, operator: create("chat-bot", apitoken.Operator, "").Value,
		admin: create("ops-admin", apitoken.Admin, "90d").Value}
	expired := create("old-admin", apitoken.Admin, "1h")
	f.b.Exec("UPDATE CFG_API_TOKENS SET EXPIRES_AT = $1 WHERE TOKEN_ID = $2", f.p.DB.TimeArg(time.Now().Add(-time.Minute)), expired.ID)
	tk.expired = expired.Value
	revoked := create("gone-admin", apitoken.Admin, "")
	if _, err := apitoken.Revoke(acting(), f.p.DB, revoked.ID); err != nil {
		f.t.Fatal(err)
	}
	tk.revoked = revoked.Value
	return tk
}

// sqlTask registers a SQL task of the pipeline that writes one row into
// its own DuckDB table.
func (f *fixture) sqlTask(pipe, code string) {
	f.b.Task(pipe, code, pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE",
		"TARGET_OBJECT": "main." + strings.ToLower(pipe+"_"+code), "SOURCE_SQL": "SELECT 1 AS id"})
}

// runPipeline runs the pipeline to its end as an operator of the command
// line would, and returns its outcome.
func (f *fixture) runPipeline(req run.Request) run.Outcome {
	f.t.Helper()
	out, err := f.p.Supervisor().RunPipeline(acting(), req)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// initRun starts a run of the pipeline and returns its id.
func (f *fixture) initRun(pipe string) int64 {
	f.t.Helper()
	out, err := f.p.Supervisor().InitRun(acting(), run.Request{PipelineCode: pipe})
	if err != nil || out.RunID == 0 {
		f.t.Fatalf("init %s: %v %+v", pipe, err, out)
	}
	return out.RunID
}

// count returns the number a one-value query finds.
func (f *fixture) count(query string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.p.DB.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		f.t.Fatal(err)
	}
	return n
}

// eachKind runs body on a fixture of each Engine DB dialect.
func eachKind(t *testing.T, body func(t *testing.T, f *fixture)) {
	for _, k := range enginetest.Kinds {
		t.Run(string(k), func(t *testing.T) {
			if k == engine.Postgres {
				enginetest.AdminURL(t)
			}
			body(t, newFixture(t, k))
		})
	}
}
