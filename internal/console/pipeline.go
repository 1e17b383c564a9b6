package console

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/inspect"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/records"
	"github.com/etl-craft/etl-craft/internal/report"
)

// The pipeline page: the grid of its last runs × its tasks, its task graph
// with each task's state under the selected run, its schedule and next
// ticks, and an operator's trigger, backfill, pause and resume.

// GridRuns is how many runs the grid shows unless the page asks for more
// (?runs=, up to inspect.MaxRunsPage).
const GridRuns = 25

// NextTicks is how many schedule ticks the pipeline page lists.
const NextTicks = 5

// pipelineBody is the pipeline page.
type pipelineBody struct {
	View  report.PipelineView
	Graph *pipeline.Graph
	// Invalid says why the graph cannot run; no picture is drawn then.
	Invalid string
	// Runs are the grid's runs, oldest first, and Rows its tasks.
	Runs []runCell
	Rows []gridRow
	// Selected is the run the graph shows; nil before the first run.
	Selected *runCell
	Picture  taskGraph
	Ticks    []time.Time
	// TicksError says why the schedule settings are invalid.
	TicksError string
	Timezone   string
	Today      string
}

// gridRow is one task's cells, one per run of the grid, written as HTML
// here rather than by the template: a grid of 25 runs × 50 tasks is 1,250
// cells, whose five escaped values each cost the template a reflective
// call (see docs/benchmarks.md).
type gridRow struct {
	Task  string
	Cells template.HTML
}

// gridCell is one task under one run.
type gridCell struct {
	Status statusView
	Title  string
	URL    string
}

func (c *Console) pipelinePage(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	zone := c.p.Config.Orchestration.Location
	now := time.Now()
	g, err := pipeline.Load(ctx, c.p.DB, r.PathValue("code"))
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	v, err := inspect.PipelineView(ctx, c.p.DB, g.Pipeline.Code, zone, now)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	body := pipelineBody{View: v, Graph: g, Timezone: zone.String(), Today: now.In(zone).Format(time.DateOnly)}
	tasks := g.Tasks
	if err := g.Validate(); err != nil {
		body.Invalid = message(err)
	} else {
		tasks = nil
		for _, wave := range g.Waves() {
			tasks = append(tasks, wave...)
		}
	}
	if body.Ticks, err = inspect.NextTicks(g.Pipeline, zone, now, NextTicks); err != nil {
		body.TicksError = err.Error()
	}
	n := min(max(atoi(r.URL.Query().Get("runs"), GridRuns), 1), inspect.MaxRunsPage)
	runs, err := pipelineRuns(ctx, c.p.DB, g.Pipeline.ID, n)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	want := int64(atoi(r.URL.Query().Get("run"), 0))
	selected := selectedRun(runs, want)
	read := runs
	if want > 0 && selected == nil {
		// A run older than the grid's: read it too.
		if selected, err = runOf(ctx, c.p.DB, g.Pipeline, want); err != nil {
			c.fail(w, r, s, err)
			return
		}
		read = append(slices.Clone(runs), *selected)
	}
	ran, err := taskRunsOf(ctx, c.p.DB, read)
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	for i := len(runs) - 1; i >= 0; i-- {
		body.Runs = append(body.Runs, cellOf(runs[i]))
	}
	var cells strings.Builder
	for _, t := range tasks {
		cells.Reset()
		for i := len(runs) - 1; i >= 0; i-- {
			taskCell(runs[i], t, ran[runs[i].ID], now).writeHTML(&cells)
		}
		body.Rows = append(body.Rows, gridRow{Task: t.Code, Cells: template.HTML(cells.String())})
	}
	if selected != nil {
		cell := cellOf(*selected)
		body.Selected = &cell
	}
	if body.Invalid == "" {
		body.Picture = layoutGraph(g,
			func(t *pipeline.Task) statusView {
				if selected == nil {
					return notRun
				}
				return taskCell(*selected, t, ran[selected.ID], now).Status
			},
			func(t *pipeline.Task) string {
				if selected == nil {
					return ""
				}
				return explainPath(selected.ID, t.Code)
			})
	}
	c.render(w, r, s, http.StatusOK, "pipeline", g.Pipeline.Code, "runs tasks pauses", body)
}

// selectedRun is the run with the id among runs, or the newest when id is
// 0; nil when there is none.
func selectedRun(runs []records.Run, id int64) *records.Run {
	for i := range runs {
		if id == 0 || runs[i].ID == id {
			return &runs[i]
		}
	}
	return nil
}

// runOf returns the pipeline's run with the id; another pipeline's run,
// or an id no run has, is exit 24.
func runOf(ctx context.Context, q engine.Querier, p pipeline.Pipeline, id int64) (*records.Run, error) {
	runs, err := records.QueryRuns(ctx, q, "SELECT "+records.RunColumns+records.RunsFrom+
		"WHERE r.PIPELINE_RUN_ID = $1 AND r.PIPELINE_ID = $2", id, p.ID)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, exit.Errorf(exit.ResourceNotFound, "pipeline %s has no run with PIPELINE_RUN_ID %d", p.Code, id)
	}
	return &runs[0], nil
}

// taskCell is a task's cell under a run: its status, and on hover its
// duration and attempts.
func taskCell(run records.Run, t *pipeline.Task, ran map[int64]records.TaskRun, now time.Time) gridCell {
	cell := gridCell{URL: explainPath(run.ID, t.Code)}
	tr, ok := ran[t.ID]
	if !ok {
		cell.Status = notRun
		cell.Title = fmt.Sprintf("%s · run %d · not run", t.Code, run.ID)
		return cell
	}
	cell.Status = statusOf(string(tr.Status))
	cell.Title = fmt.Sprintf("%s · run %d · %s · %s · %d attempt(s)", t.Code, run.ID, cell.Status.Word,
		duration(between(tr.Start, tr.End, now)), tr.AttemptCount)
	return cell
}

// writeHTML writes the cell as the grid's <td>: a link to the task under
// the run (writeStatusLink).
func (c gridCell) writeHTML(b *strings.Builder) {
	b.WriteString("<td>")
	writeStatusLink(b, "cell", c.Status, c.URL, c.Title)
	b.WriteString("</td>")
}

// explainPath is the page of a task under a run.
func explainPath(runID int64, task string) string {
	return runPath(runID) + "/tasks/" + url.PathEscape(task)
}
