package docsite_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/etl-craft/etl-craft/internal/docsite"
	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestTheSiteWorksInABrowserFromFileURLs(t *testing.T) {
	db := pipelinetest.DB(t, engine.SQLite)
	s := site(t, db, fixture(t, db))
	folder := filepath.Join(t.TempDir(), "catalog")
	if _, err := docsite.Write(folder, s); err != nil {
		t.Fatal(err)
	}
	ctx, problems := e2e.Browser(t, 1280, 860)
	fileURL := func(page string) string { return "file://" + filepath.ToSlash(filepath.Join(folder, page)) }
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	// The index lists the pipelines, and says which one is paused.
	e2e.Do(t, ctx, chromedp.Navigate(fileURL("index.html")), chromedp.WaitReady(css("body")))
	rows := e2e.Eval(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("main table.list tbody tr").length`))
	paused := e2e.Eval(t, ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("main table.list tbody tr")].find(r => r.cells[0].textContent === "ARCHIVE").cells[6].textContent`))
	if rows != 3 || paused != "PAUSED" {
		t.Errorf("index: %d pipeline rows, ARCHIVE %q", rows, paused)
	}
	e2e.Screenshot(t, ctx, "catalog-index.png")

	// The search box finds a task by part of its code, and its result opens it.
	e2e.Do(t, ctx, chromedp.SendKeys(css("#search"), "venue_rep"), chromedp.WaitVisible(css("#search-results li a")))
	found := e2e.Eval(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#search-results li a")].map(a => a.getAttribute("href"))`))
	if !slices.Contains(found, "task-REPORTS--revenue_report.html") {
		t.Errorf("searching venue_rep found %v", found)
	}
	e2e.Screenshot(t, ctx, "catalog-search.png")
	e2e.Do(t, ctx, chromedp.Click(css(`#search-results a[href="task-REPORTS--revenue_report.html"]`)), chromedp.WaitVisible(css("pre.chroma")))
	if loc := e2e.Eval(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/task-REPORTS--revenue_report.html") {
		t.Errorf("the search result opened %s", loc)
	}
	if keywords := e2e.Eval(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("pre.chroma .k").length`)); keywords < 4 {
		t.Errorf("the SQL is not highlighted: %d keyword spans", keywords)
	}
	e2e.Screenshot(t, ctx, "catalog-task.png")

	// A table's lineage graph has one box per upstream table, laid out, and
	// a box opens its table.
	// Its page is tables/<schema>.<table>.html; a link to its older address
	// (shared before) leads there, the column named after # kept.
	e2e.Do(t, ctx, chromedp.Navigate(fileURL("table-mart.revenue_report.html")+"#col"), chromedp.WaitVisible(css(`#lineage-graph[data-drawn="true"] svg`)))
	if loc := e2e.Eval(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/tables/mart.revenue_report.html#col") {
		t.Errorf("the table's old address opened %s", loc)
	}
	upstream := e2e.Eval(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#lineage-graph g.node[data-role="upstream"]')].map(n => n.dataset.id).sort()`))
	downstream := e2e.Eval(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#lineage-graph g.node[data-role="downstream"]')].map(n => n.dataset.id)`))
	if !slices.Equal(upstream, revenueReportUpstream) || !slices.Equal(downstream, []string{"export.revenue_file"}) {
		t.Errorf("the lineage graph: upstream %v (want %v), downstream %v", upstream, revenueReportUpstream, downstream)
	}
	if ranks := e2e.Eval(t, ctx, chromedp.Evaluate[int](`new Set([...document.querySelectorAll('#lineage-graph g.node rect')].map(r => r.getAttribute("x"))).size`)); ranks < 3 {
		t.Errorf("the graph is not laid out in ranks: %d distinct x positions", ranks)
	}
	e2e.Screenshot(t, ctx, "catalog-table.png")
	e2e.Do(t, ctx, chromedp.Click(css(`#lineage-graph g.node[data-id="mart.customer_revenue"] a`)), chromedp.WaitVisible(css(`#lineage-graph[data-drawn="true"] svg`)))
	if loc := e2e.Eval(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/tables/mart.customer_revenue.html") {
		t.Errorf("clicking mart.customer_revenue opened %s", loc)
	}
	// From a table's page, the search box's results and the menu lead back
	// up to the other pages.
	e2e.Do(t, ctx, chromedp.SendKeys(css("#search"), "venue_rep"), chromedp.WaitVisible(css("#search-results li a")))
	e2e.Do(t, ctx, chromedp.Click(css(`#search-results a[href="../task-REPORTS--revenue_report.html"]`)), chromedp.WaitVisible(css("pre.chroma")))
	if loc := e2e.Eval(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/task-REPORTS--revenue_report.html") || strings.Contains(loc, "/tables/") {
		t.Errorf("the search result on a table's page opened %s", loc)
	}

	// The pipeline page draws its task graph, the other pipeline's task it
	// depends on included.
	e2e.Do(t, ctx, chromedp.Navigate(fileURL("pipeline-REPORTS.html")), chromedp.WaitVisible(css(`#task-graph[data-drawn="true"] svg`)))
	tasks := e2e.Eval(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#task-graph g.node[data-role="task"]').length`))
	external := e2e.Eval(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#task-graph g.node[data-role="external"]').length`))
	if tasks != 2 || external != 1 {
		t.Errorf("REPORTS' task graph: %d task(s), %d external", tasks, external)
	}
	e2e.Screenshot(t, ctx, "catalog-pipeline.png")

	if p := problems(); len(p) > 0 {
		t.Errorf("the pages logged problems:\n%s", strings.Join(p, "\n"))
	}
}
