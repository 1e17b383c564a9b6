package console

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
	"github.com/etl-craft/etl-craft/internal/run"
)

// The server page, the tokens page and the search.

// QueuedShown and FailuresShown bound the server page's lists.
const (
	QueuedShown   = 50
	FailuresShown = 20
)

// serverBody is the server page.
type serverBody struct {
	Overseer    overseer
	HasOverseer bool
	// Slots is Orchestration.Max_parallel_tasks; Busy how many of them
	// this server's attempts hold; Elsewhere the attempts other processes
	// run.
	Slots, Busy, Free, Elsewhere int
	Queued                       []queuedLine
	Waits                        []gateWait
	Failures                     []failure
}

// queuedLine is a QUEUED run and how long it has waited.
type queuedLine struct {
	Run records.Run
	Age string
}

func (c *Console) serverPage(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	now := time.Now()
	body := serverBody{Slots: c.p.Config.Orchestration.MaxParallelTasks}
	var err error
	if body.Overseer, body.HasOverseer, err = liveOverseer(ctx, c.p.DB); err != nil {
		c.fail(w, r, s, err)
		return
	}
	owners, err := workingOwners(ctx, c.p.DB)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	for _, o := range owners {
		if run.OwnedBySelf(o) {
			body.Busy++
		} else {
			body.Elsewhere++
		}
	}
	body.Free = max(body.Slots-body.Busy, 0)
	queued, err := queuedRuns(ctx, c.p.DB, QueuedShown)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	for _, q := range queued {
		line := queuedLine{Run: q}
		if q.Start.Valid {
			line.Age = span(now.Sub(q.Start.Time))
		}
		body.Queued = append(body.Queued, line)
	}
	if body.Waits, err = gateWaits(ctx, c.p.DB); err != nil {
		c.fail(w, r, s, err)
		return
	}
	if body.Failures, err = lastFailures(ctx, c.p.DB, FailuresShown); err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, http.StatusOK, "server", "Server", "runs tasks attempts overseers", body)
}

// tokensBody is the tokens page.
type tokensBody struct {
	Tokens []report.Token
	// Made is the token just made, whose value the page shows once.
	Made  *report.Token
	Roles []string
}

func (c *Console) tokensPage(w http.ResponseWriter, r *http.Request, s *session) {
	c.showTokens(w, r, s, http.StatusOK, nil)
}

// showTokens writes the tokens page, with the token just made.
func (c *Console) showTokens(w http.ResponseWriter, r *http.Request, s *session, status int, made *apitoken.Created) {
	tokens, err := apitoken.List(r.Context(), c.p.DB)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	now := time.Now()
	body := tokensBody{Tokens: apitoken.Documents(tokens, now).Tokens, Roles: apitoken.Names()}
	if made != nil {
		doc := made.Document(now)
		doc.Value = made.Value
		body.Made = &doc
	}
	c.render(w, r, s, status, "tokens", "API tokens", "", body)
}

// Search results shown at most, of each kind.
const (
	SearchPipelines = 50
	SearchTasks     = 50
	SearchRuns      = 20
)

// searchBody is the search page.
type searchBody struct {
	Text      string
	Pipelines []report.PipelineView
	Tasks     []taskHit
	Runs      []records.Run
}

func (c *Console) searchPage(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	body := searchBody{Text: strings.TrimSpace(r.URL.Query().Get("q"))}
	if body.Text != "" {
		list, err := inspect.ListPipelines(ctx, c.p.DB, c.p.Config.Orchestration.Location, time.Now())
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		low := strings.ToLower(body.Text)
		for _, p := range list.Pipelines {
			if len(body.Pipelines) < SearchPipelines &&
				(strings.Contains(strings.ToLower(p.PipelineCode), low) || strings.Contains(strings.ToLower(p.PipelineName), low)) {
				body.Pipelines = append(body.Pipelines, p)
			}
		}
		if body.Tasks, err = searchTasks(ctx, c.p.DB, body.Text, SearchTasks); err != nil {
			c.fail(w, r, s, err)
			return
		}
		id, _ := strconv.ParseInt(strings.TrimPrefix(body.Text, "#"), 10, 64)
		if body.Runs, err = searchRuns(ctx, c.p.DB, body.Text, id, SearchRuns); err != nil {
			c.fail(w, r, s, err)
			return
		}
	}
	c.render(w, r, s, http.StatusOK, "search", "Search", "", body)
}
