package console

import (
	"fmt"
	"html"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// The pipelines page: every active pipeline, a page of them at a time, with
// its last runs as status squares, its state, its next tick, its pause, its
// SLA and its running tasks; filtered by state and text.

// PageSize is how many pipelines the pipelines page lists at a time.
const PageSize = 50

// RecentRuns is how many of a pipeline's last runs the pipelines page shows.
const RecentRuns = 10

// pipelineFilter is one choice of the state filter.
type pipelineFilter struct {
	Key, Label string
	keep       func(row pipelineRow) bool
}

// pipelineFilters are the state filter's choices; the first keeps all.
var pipelineFilters = []pipelineFilter{
	{"", "Any state", func(pipelineRow) bool { return true }},
	{"running", "Running", func(p pipelineRow) bool { return p.Active != nil }},
	{"queued", "Queued runs", func(p pipelineRow) bool { return p.Queued > 0 }},
	{"failed", "Last run failed", func(p pipelineRow) bool { return p.Last == string(records.RunFailed) }},
	{"succeeded", "Last run succeeded", func(p pipelineRow) bool { return p.Last == string(records.RunSuccess) }},
	{"cancelled", "Last run cancelled", func(p pipelineRow) bool { return p.Last == string(records.RunCancelled) }},
	{"never", "Never run", func(p pipelineRow) bool { return p.Last == "" }},
	{"paused", "Paused", func(p pipelineRow) bool { return p.Paused != nil }},
	{"sla", "SLA breached", func(p pipelineRow) bool { return p.SLA.Breached }},
}

// pipelineRow is one pipeline of the pipelines page.
type pipelineRow struct {
	report.PipelineView
	// State is RUNNING while a run is in progress, else the last run's
	// status; Last is the last run's status ("" when it never ran).
	State  statusView
	Last   string
	Active *activeRun
	Queued int
	SLA    slaView
	// Recent are its last runs as squares, oldest first ("" when it
	// never ran).
	Recent template.HTML
}

// runCell is one run as a status square.
type runCell struct {
	ID     int64
	Status statusView
	Title  string
}

// writeHTML writes the run's square: a link to the run (writeStatusLink).
// The pages write squares here rather than in their templates: the
// pipelines page shows 500 of them (see docs/benchmarks.md).
func (c runCell) writeHTML(b *strings.Builder) {
	writeStatusLink(b, "sq", c.Status, runPath(c.ID), c.Title)
}

// writeStatusLink writes a link to href shown as the status's icon, with
// its title on hover and for a screen reader, of the class kind and the
// status's class. Every value is escaped for its attribute or text.
func writeStatusLink(b *strings.Builder, kind string, st statusView, href, title string) {
	title = html.EscapeString(title)
	b.WriteString(`<a class="` + kind + " ")
	b.WriteString(html.EscapeString(st.Class))
	b.WriteString(`" href="`)
	b.WriteString(html.EscapeString(href))
	b.WriteString(`" title="`)
	b.WriteString(title)
	b.WriteString(`" aria-label="`)
	b.WriteString(title)
	b.WriteString(`"><span aria-hidden="true">`)
	b.WriteString(html.EscapeString(st.Icon))
	b.WriteString(`</span></a>`)
}

// HTML is the run's square.
func (c runCell) HTML() template.HTML {
	var b strings.Builder
	c.writeHTML(&b)
	return template.HTML(b.String())
}

// cellOf is the square of a run.
func cellOf(r records.Run) runCell {
	st := statusOf(string(r.Status))
	title := fmt.Sprintf("run %d · %s", r.ID, st.Word)
	if r.RunDate != "" {
		title += " · run date " + r.RunDate
	}
	if r.Start.Valid {
		title += " · started " + r.Start.Time.UTC().Format("2006-01-02 15:04 UTC")
	}
	return runCell{ID: r.ID, Status: st, Title: title}
}

// slaView is a pipeline's SLA state.
type slaView struct {
	// Status is MET or BREACHED: of the run in progress, else of the last
	// run.
	Status string
	// Text says when the run in progress is due, while it is not decided.
	Text     string
	Breached bool
}

// slaOf is the SLA state of a pipeline with its runs.
func slaOf(v report.PipelineView, active *activeRun, last latestRun, now time.Time) slaView {
	if v.SLAInHours == nil {
		return slaView{}
	}
	status := last.SLAStatus
	if active != nil {
		status = active.SLAStatus
		if status == "" && active.Start.Valid {
			due := active.Start.Time.Add(time.Duration(*v.SLAInHours * float64(time.Hour)))
			return slaView{Text: "due in " + span(due.Sub(now))}
		}
	}
	return slaView{Status: status, Breached: status == string(records.SLABreached)}
}

// settle sets the row's last run's status, its state and its SLA state
// from its last run (the zero latestRun when it never ran).
func (row *pipelineRow) settle(last latestRun, now time.Time) {
	row.Last = last.Status
	row.State = statusOf(row.Last)
	if row.Active != nil {
		row.State = statusOf(string(records.RunInProgress))
	} else if row.Last == "" {
		row.State.Word = "NEVER RUN"
	}
	row.SLA = slaOf(row.PipelineView, row.Active, last, now)
}

// pipelinesBody is the pipelines page.
type pipelinesBody struct {
	Rows    []pipelineRow
	Filters []pipelineFilter
	Filter  string
	Text    string
	// Shown is how many pipelines the filter keeps, of Total.
	Shown, Total     int
	Page, Pages      int
	PrevURL, NextURL string
}

func (c *Console) pipelinesPage(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	q := r.URL.Query()
	body := pipelinesBody{Filters: pipelineFilters, Filter: q.Get("status"), Text: strings.TrimSpace(q.Get("text"))}
	filter := slices.IndexFunc(pipelineFilters, func(f pipelineFilter) bool { return f.Key == body.Filter })
	if filter < 0 {
		filter, body.Filter = 0, ""
	}
	now := time.Now()
	list, err := inspect.ListPipelines(ctx, c.p.DB, c.p.Config.Orchestration.Location, now)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	// The state filter needs every pipeline's last run; the whole list
	// (the page most often opened) needs only those of the pipelines it
	// shows, whose last runs it reads anyway.
	var latest map[int64]latestRun
	if filter > 0 {
		if latest, err = latestRuns(ctx, c.p.DB); err != nil {
			c.fail(w, r, s, err)
			return
		}
	}
	active, queued, err := activeRuns(ctx, c.p.DB)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	text := strings.ToLower(body.Text)
	var kept []pipelineRow
	for _, v := range list.Pipelines {
		if text != "" && !strings.Contains(strings.ToLower(v.PipelineCode), text) && !strings.Contains(strings.ToLower(v.PipelineName), text) {
			continue
		}
		row := pipelineRow{PipelineView: v, Queued: queued[v.PipelineID]}
		if a, ok := active[v.PipelineID]; ok {
			row.Active = &a
		}
		if latest != nil {
			row.settle(latest[v.PipelineID], now)
		}
		if pipelineFilters[filter].keep(row) {
			kept = append(kept, row)
		}
	}
	body.Total, body.Shown = len(list.Pipelines), len(kept)
	body.Pages = max((len(kept)+PageSize-1)/PageSize, 1)
	body.Page = min(max(atoi(q.Get("page"), 1), 1), body.Pages)
	first := (body.Page - 1) * PageSize
	body.Rows = kept[first:min(first+PageSize, len(kept))]
	ids := make([]int64, len(body.Rows))
	for i, row := range body.Rows {
		ids[i] = row.PipelineID
	}
	recent, err := recentRuns(ctx, c.p.DB, ids, RecentRuns)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	var squares strings.Builder
	for i := range body.Rows {
		row := &body.Rows[i]
		runs := recent[row.PipelineID]
		if latest == nil {
			var last latestRun
			if len(runs) > 0 {
				last = latestRun{ID: runs[0].ID, Status: string(runs[0].Status), SLAStatus: runs[0].SLAStatus.String}
			}
			row.settle(last, now)
		}
		squares.Reset()
		for j := len(runs) - 1; j >= 0; j-- {
			cellOf(runs[j]).writeHTML(&squares)
		}
		row.Recent = template.HTML(squares.String())
	}
	pageURL := func(n int) string {
		v := url.Values{}
		if body.Filter != "" {
			v.Set("status", body.Filter)
		}
		if body.Text != "" {
			v.Set("text", body.Text)
		}
		if n > 1 {
			v.Set("page", strconv.Itoa(n))
		}
		if len(v) == 0 {
			return "/pipelines"
		}
		return "/pipelines?" + v.Encode()
	}
	if body.Page > 1 {
		body.PrevURL = pageURL(body.Page - 1)
	}
	if body.Page < body.Pages {
		body.NextURL = pageURL(body.Page + 1)
	}
	c.render(w, r, s, http.StatusOK, "pipelines", "Pipelines", "runs tasks pauses", body)
}

// atoi reads a whole number, or def when s is none.
func atoi(s string, def int) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return def
	}
	return n
}
