package api

import (
	"strings"

	"github.com/danielgtaylor/huma/v2"
)

// The OpenAPI document's metadata beside what huma derives from the
// operations: where the API is served, whom to ask, its licence, and the
// tags its operations are grouped under (one per resource, the first part
// of their paths under Prefix).

// repository is etl-craft's source repository, where its licence and its
// issues are.
const repository = "https://github.com/etl-craft/etl-craft"

// tags are the document's tags, in the order its reader shows them.
var tags = []*huma.Tag{
	{Name: "health", Description: "Whether the Engine DB answers and the token authenticates."},
	{Name: "pipelines", Description: "The active pipelines, their runs, and what an operator starts or stops on them: runs, backfills, pauses."},
	{Name: "runs", Description: "One run, its tasks, why a task stands as it does, and an operator's cancel, mark or rerun."},
	{Name: "attempts", Description: "One attempt of a task, and its log."},
	{Name: "tokens", Description: "The API tokens: list, create, revoke (admin only)."},
}

// describe adds the metadata to the document. address is
// Orchestration.Api_address, where the server listens: the default of the
// server URL's variable, which a reader behind a TLS proxy changes.
func describe(o *huma.OpenAPI, address string) {
	o.Info.Contact = &huma.Contact{Name: "etl-craft", URL: repository + "/issues"}
	o.Info.License = &huma.License{Name: "etl-craft's licence: see its repository", URL: repository}
	o.Servers = []*huma.Server{{
		URL:         "{scheme}://{address}",
		Description: "This etl-craft server: Orchestration.Api_address, or the TLS reverse proxy in front of it.",
		Variables: map[string]*huma.ServerVariable{
			"scheme":  {Default: "http", Enum: []string{"http", "https"}, Description: "https behind a TLS reverse proxy."},
			"address": {Default: address, Description: "host:port of the server, or of the proxy."},
		},
	}}
	o.Tags = tags
}

// tagOf is the tag of an operation's path under Prefix: the resource it
// starts with.
func tagOf(path string) string {
	resource, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	return resource
}
