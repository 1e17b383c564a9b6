package docsite_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/etl-craft/etl-craft/internal/docsite"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

func TestLoadReadsTheCatalogAndTableLevelLinksItsTables(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		s := site(t, db, fixture(t, db))
		by := map[string]*docsite.Pipeline{}
		for _, p := range s.Pipelines {
			by[p.Code] = p
		}
		sales, reports, archive := by["SALES"], by["REPORTS"], by["ARCHIVE"]
		if len(s.Pipelines) != 3 || sales == nil || reports == nil || archive == nil {
			t.Fatalf("pipelines: %+v", s.Pipelines)
		}
		if st := sales.Stats; st.Runs != 4 || st.Succeeded != 3 || st.Failed != 1 || st.Average != 90*time.Second || st.SuccessRate() != 75 {
			t.Errorf("SALES stats: %+v", st)
		}
		if len(sales.Runs) != 4 || sales.Runs[0].Key != "sales-3" || sales.Runs[0].Duration() != 90*time.Second {
			t.Errorf("SALES runs, newest first: %+v", sales.Runs)
		}
		if len(sales.Interventions) != 1 || sales.Interventions[0].Task != "customer_revenue" || sales.Interventions[0].Reason != "loaded by hand after the outage" {
			t.Errorf("SALES interventions: %+v", sales.Interventions)
		}
		if len(reports.Consumption) != 3 || reports.Consumption[0].Upstream != "SALES" || reports.Consumption[0].Task != "revenue_report" {
			t.Errorf("REPORTS consumption: %+v", reports.Consumption)
		}
		if !slices.Equal(reports.DependsOn, []string{"SALES"}) {
			t.Errorf("REPORTS depends on %v", reports.DependsOn)
		}
		if archive.Paused == nil || archive.Paused.By != "bob" || sales.Paused != nil {
			t.Errorf("pauses: ARCHIVE %+v, SALES %+v", archive.Paused, sales.Paused)
		}
		tasks := map[string]*docsite.Task{}
		for _, p := range s.Pipelines {
			for _, task := range p.Tasks {
				tasks[task.Name()] = task
			}
		}
		if got := tasks["SALES.load_customers"].SQL; !strings.Contains(got, "FROM raw.customers AS c") {
			t.Errorf("the SQL of SOURCE_SQL_FILE: %q", got)
		}
		if r := tasks["SALES.check_orders"].Rules; len(r) != 1 || r[0].Name != "negative_amount" || r[0].Type != "REJECT" {
			t.Errorf("rules: %+v", r)
		}
		if st := tasks["SALES.load_orders"].Stats; st.Runs != 4 || st.Succeeded != 3 || st.Average != 30*time.Second {
			t.Errorf("load_orders stats: %+v", st)
		}

		traces := map[string]docsite.TaskTrace{}
		for _, tr := range s.Lineage.Tasks {
			traces[tr.Task] = tr
		}
		for task, want := range map[string][]string{
			"SALES.load_orders":      {"raw.orders"},
			"SALES.load_customers":   {"raw.customers"},
			"SALES.customer_revenue": {"main.customers", "main.orders"}, // the CTE is no table
			"REPORTS.revenue_report": {"main.orders", "mart.customer_revenue"},
			"REPORTS.export_report":  {"mart.revenue_report"},
		} {
			if tr := traces[task]; !tr.Traced || !slices.Equal(tr.Sources, want) {
				t.Errorf("%s: %+v, want sources %v", task, tr, want)
			}
		}
		if tr := traces["SALES.customer_revenue"]; tr.Target != "mart.customer_revenue" {
			t.Errorf("the target is lower-cased: %q", tr.Target)
		}
		if _, ok := traces["SALES.check_orders"]; ok {
			t.Error("a business-rules task has no lineage of its own")
		}
		untraced := s.Lineage.Untraced()
		if len(untraced) != 1 || untraced[0].Task != "ARCHIVE.archive_orders" || !strings.Contains(untraced[0].Reason, "missing.sql") {
			t.Errorf("untraced: %+v", untraced)
		}
	})
}

func TestTableLevelReadsTheTablesOfEachFormOfSelect(t *testing.T) {
	cases := []struct {
		sql    string
		tables []string
		reason string
	}{
		{sql: "SELECT 1 AS one", tables: nil},
		{sql: "select a.x from s.a a left join s.b b using (id) cross join s.c;", tables: []string{"s.a", "s.b", "s.c"}},
		{sql: "SELECT * FROM (SELECT id FROM s.inner_t) sub, LATERAL s.fn_t f", tables: []string{"s.fn_t", "s.inner_t"}},
		{sql: "SELECT * FROM read_csv('x.csv') JOIN s.dim d ON true", tables: []string{"s.dim"}},
		{sql: "WITH RECURSIVE a AS (SELECT 1), b (n) AS (SELECT * FROM a) SELECT * FROM b JOIN wh.s.t t ON true", tables: []string{"s.t"}},
		{sql: "SELECT id FROM s.x UNION ALL SELECT id FROM s.y WHERE id IN (SELECT id FROM s.z)", tables: []string{"s.x", "s.y", "s.z"}},
		{sql: "SELECT * FROM s.t WHERE d = $$run_date", tables: []string{"s.t"}},
		{sql: "SELECT (1", reason: "leaves a parenthesis open"},
		{sql: "SELECT 1)", reason: "closes a parenthesis"},
		{sql: "DELETE FROM s.t", reason: "not a SELECT"},
		{sql: "SELECT 1; SELECT 2", reason: "more than one statement"},
		{sql: "SELECT 'open", reason: "unclosed quote"},
		{sql: "  -- nothing\n", reason: "empty"},
	}
	for _, c := range cases {
		cat := &docsite.Catalog{Pipelines: []*docsite.Pipeline{{Code: "P", Tasks: []*docsite.Task{
			{Pipeline: "P", Code: "t", Handler: "SQL", SQL: c.sql, Params: map[string]string{"TARGET_OBJECT": "s.target"}},
		}}}}
		tr := docsite.TableLevel(cat, "WH").Tasks[0]
		if c.reason != "" {
			if tr.Traced || !strings.Contains(tr.Reason, c.reason) {
				t.Errorf("%q: %+v, want not traced: %s", c.sql, tr, c.reason)
			}
			continue
		}
		if !tr.Traced || !slices.Equal(tr.Sources, c.tables) {
			t.Errorf("%q: %+v, want %v", c.sql, tr, c.tables)
		}
	}
}

func TestWriteTakesOnlyANewEmptyOrMarkedFolder(t *testing.T) {
	db := pipelinetest.DB(t, engine.SQLite)
	s := site(t, db, fixture(t, db))
	root := t.TempDir()

	mine := filepath.Join(root, "mine")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := docsite.Write(mine, s)
	if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), docsite.Marker) || !strings.Contains(err.Error(), mine) {
		t.Fatalf("a folder of someone else's files: %v", err)
	}
	if entries, _ := os.ReadDir(mine); len(entries) != 1 {
		t.Errorf("the refused folder was changed: %v", entries)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Errorf("a refused write left something beside the folder: %v", entries)
	}

	empty := filepath.Join(root, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(root, "new", "catalog")
	for _, folder := range []string{empty, fresh} {
		pages, err := docsite.Write(folder, s)
		if err != nil {
			t.Fatal(err)
		}
		// 6 overview pages, 3 pipelines, 7 tasks, 8 tables.
		if pages != 6+3+7+8 {
			t.Errorf("%s: %d pages", folder, pages)
		}
		if _, err := os.Stat(filepath.Join(folder, docsite.Marker)); err != nil {
			t.Errorf("%s: no marker: %v", folder, err)
		}
	}
	// A catalog written before is replaced whole.
	stale := filepath.Join(empty, "table-gone.html")
	if err := os.WriteFile(stale, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := docsite.Write(empty, s); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a page of the old catalog is left: %v", err)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 3 {
		t.Errorf("the swap left something beside the folder: %v", entries)
	}
	page, err := os.ReadFile(filepath.Join(empty, "task-SALES--customer_revenue.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`class="chroma"`, "mart.customer_revenue", "SUM", `href="tables/main.customers.html"`} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the task page lacks %q", want)
		}
	}
	// Nothing on any page is fetched from elsewhere.
	err = filepath.WalkDir(empty, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		b, err := os.ReadFile(path)
		for _, attr := range []string{`src="http`, `href="http`, `src="//`, `href="//`, "@import"} {
			if strings.Contains(string(b), attr) {
				t.Errorf("%s fetches from elsewhere: %s", path, attr)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(root, "new", "catalog", "index.html")
	if _, err := docsite.Write(file, s); !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), "not a folder") {
		t.Errorf("a file: %v", err)
	}
}

func TestPublishServesTheSiteAndKeepsItsURLUnlessANewOneIsAccepted(t *testing.T) {
	pipelinetest.Each(t, func(t *testing.T, db *engine.DB) {
		ctx := context.Background()
		s := site(t, db, fixture(t, db))
		folder := filepath.Join(t.TempDir(), "catalog")
		if _, err := docsite.Write(folder, s); err != nil {
			t.Fatal(err)
		}
		if _, err := docsite.Listen(t.TempDir(), "127.0.0.1", 0, nil); !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), "run `etl-craft generate-docs` first") {
			t.Errorf("a folder with no catalog: %v", err)
		}
		srv, err := docsite.Listen(folder, "127.0.0.1", 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		serving, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(serving) }()
		for path, want := range map[string]int{"": 200, "index.html": 200, "assets/vendor/dagre/dagre.min.js": 200, docsite.Marker: 404, "assets/": 404, "robots.txt": 200} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("GET /%s: %d, want %d", path, resp.StatusCode, want)
			}
			if resp.Header.Get("X-Robots-Tag") == "" || resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("GET /%s: headers %v", path, resp.Header)
			}
			if path == "" && !strings.Contains(string(body), "pipeline-SALES.html") {
				t.Errorf("GET /: %s", body)
			}
		}
		stop()
		if err := <-done; err != nil {
			t.Fatalf("Serve after the stop: %v", err)
		}

		// Docs_site.Allowed_ips: a visitor from elsewhere gets 403.
		fenced, err := docsite.Listen(folder, "127.0.0.1", 0, []string{"192.0.2.0/24"})
		if err != nil {
			t.Fatal(err)
		}
		serving, stop = context.WithCancel(ctx)
		go func() { done <- fenced.Serve(serving) }()
		resp, err := http.Get(fenced.URL + "index.html")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a visitor outside Allowed_ips: %d", resp.StatusCode)
		}
		stop()
		if err := <-done; err != nil {
			t.Fatal(err)
		}

		first, second := "http://127.0.0.1:8101/", "http://127.0.0.1:8102/"
		latest := func() (string, int) {
			t.Helper()
			p, err := docsite.LatestPublication(ctx, db)
			if err != nil || p == nil {
				t.Fatalf("latest publication: %v %v", p, err)
			}
			var n int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM AUD_DOCS_PUBLICATION").Scan(&n); err != nil {
				t.Fatal(err)
			}
			return p.URL, n
		}
		if p, err := docsite.LatestPublication(ctx, db); err != nil || p != nil {
			t.Fatalf("never published: %v %v", p, err)
		}
		at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
		for i := range 2 {
			if err := docsite.RecordPublication(ctx, db, first, false, at.Add(time.Duration(i)*time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
		if url, n := latest(); url != first || n != 1 {
			t.Errorf("the same URL twice: %s, %d row(s)", url, n)
		}
		p, _ := docsite.LatestPublication(ctx, db)
		if !p.FirstPublished.Equal(at) || !p.LastAt.Equal(at.Add(time.Hour)) {
			t.Errorf("first and last published: %v %v", p.FirstPublished, p.LastAt)
		}
		err = docsite.RecordPublication(ctx, db, second, false, at)
		if !exit.Is(err, exit.Configuration) || !strings.Contains(err.Error(), "published at "+first) || !strings.Contains(err.Error(), "now served at "+second) {
			t.Errorf("another URL: %v", err)
		}
		if url, n := latest(); url != first || n != 1 {
			t.Errorf("a refused URL was recorded: %s, %d row(s)", url, n)
		}
		if err := docsite.RecordPublication(ctx, db, second, true, at); err != nil {
			t.Fatal(err)
		}
		if url, n := latest(); url != second || n != 2 {
			t.Errorf("an accepted URL: %s, %d row(s)", url, n)
		}
	})
}

func TestATablePageListsTheColumnEdgesOfAColumnLineage(t *testing.T) {
	task := &docsite.Task{Pipeline: "P", Code: "t", Handler: "SQL", SQL: "SELECT id, a + b AS total, 1 AS one FROM s.src",
		Params: map[string]string{"TARGET_OBJECT": "s.dst"}}
	s := &docsite.Site{
		Catalog: &docsite.Catalog{Pipelines: []*docsite.Pipeline{{Code: "P", Tasks: []*docsite.Task{task}}}},
		Lineage: &docsite.Lineage{Level: docsite.LevelColumn,
			Tasks: []docsite.TaskTrace{{Task: "P.t", Target: "s.dst", Sources: []string{"s.src"}, Traced: true}},
			Edges: []docsite.Edge{
				{Task: "P.t", Target: docsite.ColumnRef{Table: "s.dst", Column: "id"}, Source: docsite.ColumnRef{Table: "s.src", Column: "id"}, Kind: docsite.KindCopy},
				{Task: "P.t", Target: docsite.ColumnRef{Table: "s.dst", Column: "total"}, Source: docsite.ColumnRef{Table: "s.src", Column: "a"}, Kind: docsite.KindExpression, Expression: "a + b"},
				{Task: "P.t", Target: docsite.ColumnRef{Table: "s.dst", Column: "one"}, Kind: docsite.KindExpression, Expression: "1"},
			}},
		Version: "test",
	}
	folder := filepath.Join(t.TempDir(), "catalog")
	if _, err := docsite.Write(folder, s); err != nil {
		t.Fatal(err)
	}
	// A table's page is tables/<schema>.<table>.html, as the reference
	// writes it, and links up from there.
	dst, err := os.ReadFile(filepath.Join(folder, "tables", "s.dst.html"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(folder, "tables", "s.src.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Columns and their sources", `<td class="mono">total</td>`, "a &#43; b", "no source",
		`href="../tables/s.src.html">s.src</a>.id`, `href="../task-P--t.html"`, `href="../assets/site.css"`, `data-root="../"`,
		`<tr data-col="s.dst|total">`, `<tr data-col="s.dst|id">`} {
		if !strings.Contains(string(dst), want) {
			t.Errorf("the target's page lacks %q", want)
		}
	}
	if !strings.Contains(string(src), "Columns it feeds") || !strings.Contains(string(src), `href="../tables/s.dst.html">s.dst</a>.total`) ||
		!strings.Contains(string(src), `<tr data-col="s.src|a">`) {
		t.Errorf("the source's page does not list the columns it feeds:\n%s", src)
	}
	// The page's old address, shared before, leads to the new one.
	old, err := os.ReadFile(filepath.Join(folder, "table-s.dst.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<meta http-equiv="refresh" content="0; url=tables/s.dst.html">`, `<a href="tables/s.dst.html">`,
		`location.replace("tables/s.dst.html" + location.hash)`} {
		if !strings.Contains(string(old), want) {
			t.Errorf("the page at the old address lacks %q:\n%s", want, old)
		}
	}
	if strings.Contains(string(dst), "table-level") {
		t.Error("a column lineage is shown as table-level")
	}
}
