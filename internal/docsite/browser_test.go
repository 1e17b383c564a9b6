package docsite_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/etl-craft/etl-craft/internal/docsite"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// browser starts Debian's chromium, headless (and without its sandbox: the
// tests run as root), and returns a tab and the errors, warnings and
// exceptions its pages write to the console or the browser log.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("the browser tests need Debian's chromium (scripts/test.sh installs it): %v", err)
	}
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.Headless, chromedp.DisableGPU,
		chromedp.WindowSize(1280, 860))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(alloc)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })

	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == "error" || m.Type == "warning" {
				mu.Lock()
				problems = append(problems, m.String())
				mu.Unlock()
			}
		}
	}()
	return ctx, func() []string {
		// One more round trip, so that what the pages wrote has arrived.
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(problems)
	}
}

// run runs the action in the tab and returns its value, failing the test on
// error.
func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// do runs the steps in the tab, failing the test on error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// screenshot saves a PNG of the whole page under the test's temporary
// folder and, when ETL_CRAFT_ARTIFACTS names a folder, there too; with
// ETL_CRAFT_DOC_IMAGES=1 it also refreshes docs/images/<name>.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := run(t, ctx, chromedp.FullScreenshot(100))
	if len(png) < 1000 || string(png[1:4]) != "PNG" {
		t.Fatalf("the screenshot %s is no PNG (%d bytes)", name, len(png))
	}
	dirs := []string{t.TempDir()}
	if d := os.Getenv("ETL_CRAFT_ARTIFACTS"); d != "" {
		dirs = append(dirs, d)
	}
	if os.Getenv("ETL_CRAFT_DOC_IMAGES") == "1" {
		dirs = append(dirs, filepath.Join("..", "..", "docs", "images"))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, name), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("screenshot %s kept in %s", name, strings.Join(dirs, ", "))
}

func TestTheSiteWorksInABrowserFromFileURLs(t *testing.T) {
	db := pipelinetest.DB(t, engine.SQLite)
	s := site(t, db, fixture(t, db))
	folder := filepath.Join(t.TempDir(), "catalog")
	if _, err := docsite.Write(folder, s); err != nil {
		t.Fatal(err)
	}
	ctx, problems := browser(t)
	fileURL := func(page string) string { return "file://" + filepath.ToSlash(filepath.Join(folder, page)) }
	css := func(sel string) chromedp.CSS { return chromedp.CSS(sel) }

	// The index lists the pipelines, and says which one is paused.
	do(t, ctx, chromedp.Navigate(fileURL("index.html")), chromedp.WaitReady(css("body")))
	rows := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("main table.list tbody tr").length`))
	paused := run(t, ctx, chromedp.Evaluate[string](`[...document.querySelectorAll("main table.list tbody tr")].find(r => r.cells[0].textContent === "ARCHIVE").cells[6].textContent`))
	if rows != 3 || paused != "PAUSED" {
		t.Errorf("index: %d pipeline rows, ARCHIVE %q", rows, paused)
	}
	screenshot(t, ctx, "catalog-index.png")

	// The search box finds a task by part of its code, and its result opens it.
	do(t, ctx, chromedp.SendKeys(css("#search"), "venue_rep"), chromedp.WaitVisible(css("#search-results li a")))
	found := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#search-results li a")].map(a => a.getAttribute("href"))`))
	if !slices.Contains(found, "task-REPORTS--revenue_report.html") {
		t.Errorf("searching venue_rep found %v", found)
	}
	screenshot(t, ctx, "catalog-search.png")
	do(t, ctx, chromedp.Click(css(`#search-results a[href="task-REPORTS--revenue_report.html"]`)), chromedp.WaitVisible(css("pre.chroma")))
	if loc := run(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/task-REPORTS--revenue_report.html") {
		t.Errorf("the search result opened %s", loc)
	}
	if keywords := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll("pre.chroma .k").length`)); keywords < 4 {
		t.Errorf("the SQL is not highlighted: %d keyword spans", keywords)
	}
	screenshot(t, ctx, "catalog-task.png")

	// A table's lineage graph has one box per upstream table, laid out, and
	// a box opens its table.
	// Its page is tables/<schema>.<table>.html; a link to its older address
	// (shared before) leads there, the column named after # kept.
	do(t, ctx, chromedp.Navigate(fileURL("table-mart.revenue_report.html")+"#col"), chromedp.WaitVisible(css(`#lineage-graph[data-drawn="true"] svg`)))
	if loc := run(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/tables/mart.revenue_report.html#col") {
		t.Errorf("the table's old address opened %s", loc)
	}
	upstream := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#lineage-graph g.node[data-role="upstream"]')].map(n => n.dataset.id).sort()`))
	downstream := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#lineage-graph g.node[data-role="downstream"]')].map(n => n.dataset.id)`))
	if !slices.Equal(upstream, revenueReportUpstream) || !slices.Equal(downstream, []string{"export.revenue_file"}) {
		t.Errorf("the lineage graph: upstream %v (want %v), downstream %v", upstream, revenueReportUpstream, downstream)
	}
	if ranks := run(t, ctx, chromedp.Evaluate[int](`new Set([...document.querySelectorAll('#lineage-graph g.node rect')].map(r => r.getAttribute("x"))).size`)); ranks < 3 {
		t.Errorf("the graph is not laid out in ranks: %d distinct x positions", ranks)
	}
	screenshot(t, ctx, "catalog-table.png")
	do(t, ctx, chromedp.Click(css(`#lineage-graph g.node[data-id="mart.customer_revenue"] a`)), chromedp.WaitVisible(css(`#lineage-graph[data-drawn="true"] svg`)))
	if loc := run(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/tables/mart.customer_revenue.html") {
		t.Errorf("clicking mart.customer_revenue opened %s", loc)
	}
	// From a table's page, the search box's results and the menu lead back
	// up to the other pages.
	do(t, ctx, chromedp.SendKeys(css("#search"), "venue_rep"), chromedp.WaitVisible(css("#search-results li a")))
	do(t, ctx, chromedp.Click(css(`#search-results a[href="../task-REPORTS--revenue_report.html"]`)), chromedp.WaitVisible(css("pre.chroma")))
	if loc := run(t, ctx, chromedp.Location()); !strings.HasSuffix(loc, "/task-REPORTS--revenue_report.html") || strings.Contains(loc, "/tables/") {
		t.Errorf("the search result on a table's page opened %s", loc)
	}

	// The pipeline page draws its task graph, the other pipeline's task it
	// depends on included.
	do(t, ctx, chromedp.Navigate(fileURL("pipeline-REPORTS.html")), chromedp.WaitVisible(css(`#task-graph[data-drawn="true"] svg`)))
	tasks := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#task-graph g.node[data-role="task"]').length`))
	external := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('#task-graph g.node[data-role="external"]').length`))
	if tasks != 2 || external != 1 {
		t.Errorf("REPORTS' task graph: %d task(s), %d external", tasks, external)
	}
	screenshot(t, ctx, "catalog-pipeline.png")

	if p := problems(); len(p) > 0 {
		t.Errorf("the pages logged problems:\n%s", strings.Join(p, "\n"))
	}
}
