package docsite

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"

	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/warehouse"
)

//go:embed templates/site.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Site is what generate-docs writes: the catalog, its lineage and, with
// --with-warehouse, the tables' columns.
type Site struct {
	*Catalog
	Lineage *Lineage
	// Version is the etl-craft release that writes it.
	Version string
	// Columns are the warehouse's columns by table name, nil without the
	// warehouse.
	Columns map[string][]warehouse.ColumnInfo
	// DefaultDatabase is the warehouse's database, left off table names.
	DefaultDatabase string

	Tables []*Table
	feeds  map[string][]string
	traces map[string]TaskTrace
}

// page is the data of one page.
type page struct {
	*Site
	Title    string
	Pipeline *Pipeline
	Task     *Task
	Trace    *TaskTrace
	Table    *Table
	Graph    *graph
}

// graph is a graph the page's script lays out with dagre and draws.
type graph struct {
	ID    string      `json:"-"`
	Nodes []graphNode `json:"nodes"`
	Edges []graphEdge `json:"edges"`
}

// graphNode is one box: Role is "task", "external", "upstream", "self" or
// "downstream".
type graphNode struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	URL   string `json:"url,omitempty"`
	Role  string `json:"role"`
}

type graphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// LineageNote says in the footer which lineage the site shows.
func (s *Site) LineageNote() string {
	if s.Lineage.Level == LevelTable {
		return "table-level lineage (column lineage not computed)"
	}
	return "column lineage"
}

// TaskCount is how many active tasks the pipelines have.
func (s *Site) TaskCount() int {
	n := 0
	for _, p := range s.Pipelines {
		n += len(p.Tasks)
	}
	return n
}

// RuleCount is how many active business rules the tasks have.
func (s *Site) RuleCount() int {
	n := 0
	for _, p := range s.Pipelines {
		for _, t := range p.Tasks {
			n += len(t.Rules)
		}
	}
	return n
}

// Scripts are the PYTHON tasks.
func (s *Site) Scripts() []*Task {
	var out []*Task
	for _, p := range s.Pipelines {
		for _, t := range p.Tasks {
			if t.Handler == pipeline.HandlerPython {
				out = append(out, t)
			}
		}
	}
	return out
}

// Paused are the pipelines with an open pause.
func (s *Site) Paused() []*Pipeline {
	var out []*Pipeline
	for _, p := range s.Pipelines {
		if p.Paused != nil {
			out = append(out, p)
		}
	}
	return out
}

// Untraced are the tasks the lineage could not trace.
func (s *Site) Untraced() []TaskTrace { return s.Lineage.Untraced() }

// Render writes every page, the search index and the assets into dir, which
// must exist, and returns how many pages it wrote.
func (s *Site) Render(dir string) (int, error) {
	s.Tables, s.feeds = tables(s.Lineage)
	for _, t := range s.Tables {
		t.Columns = s.Columns[t.Name]
	}
	s.traces = map[string]TaskTrace{}
	for _, t := range s.Lineage.Tasks {
		s.traces[t.Task] = t
	}
	for _, p := range s.Pipelines {
		for _, t := range p.Tasks {
			for _, r := range t.Rules {
				if tb := s.table(TableName(r.TargetTable, s.DefaultDatabase)); tb != nil {
					tb.Rules = append(tb.Rules, r)
				}
			}
		}
	}
	// root is the way from the page being written up to the site's top
	// folder: every link a page makes starts from it.
	var root string
	tmpl, err := s.templates(func() string { return root })
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Join(dir, tablesFolder), 0o755); err != nil {
		return 0, err
	}
	pages := 0
	render := func(name, which string, data any) error {
		root = strings.Repeat("../", strings.Count(name, "/"))
		var b bytes.Buffer
		if err := tmpl.ExecuteTemplate(&b, which, data); err != nil {
			return fmt.Errorf("render %s: %w", name, err)
		}
		return os.WriteFile(filepath.Join(dir, filepath.FromSlash(name)), b.Bytes(), 0o644)
	}
	write := func(name, which string, p *page) error {
		p.Site = s
		pages++
		return render(name, which, p)
	}
	for _, x := range []struct{ name, tmpl, title string }{
		{"index.html", "index", "Pipelines"},
		{"tables.html", "tables", "Tables"},
		{"rules.html", "allrules", "Business rules"},
		{"scripts.html", "scripts", "Scripts"},
		{"runs.html", "allruns", "Runs"},
		{"paused.html", "paused", "Paused pipelines"},
	} {
		if err := write(x.name, x.tmpl, &page{Title: x.title}); err != nil {
			return 0, err
		}
	}
	for _, p := range s.Pipelines {
		if err := write(pipeURL(p.Code), "pipeline", &page{Title: "Pipeline " + p.Code, Pipeline: p, Graph: taskGraph(p)}); err != nil {
			return 0, err
		}
		for _, t := range p.Tasks {
			pg := &page{Title: "Task " + t.Name(), Task: t}
			if tr, ok := s.traces[t.Name()]; ok {
				pg.Trace = &tr
			}
			if err := write(taskURL(t), "task", pg); err != nil {
				return 0, err
			}
		}
	}
	for _, t := range s.Tables {
		if err := write(tableURL(t.Name), "table", &page{Title: "Table " + t.Name, Table: t, Graph: s.tableGraph(t)}); err != nil {
			return 0, err
		}
		// Links shared into an older catalog, whose table pages were
		// beside the others, lead to the page where it is now.
		moved := movedPage{Title: "Table " + t.Name, To: tableURL(t.Name)}
		if err := render(oldTableURL(t.Name), "moved", moved); err != nil {
			return 0, err
		}
	}
	if err := s.writeSearchIndex(filepath.Join(dir, "search-index.js")); err != nil {
		return 0, err
	}
	if err := writeAssets(dir); err != nil {
		return 0, err
	}
	return pages, nil
}

// taskGraph is a pipeline's tasks and their dependencies; a task of another
// pipeline it depends on is an external box.
func taskGraph(p *Pipeline) *graph {
	g := &graph{ID: "task-graph"}
	for _, t := range p.Tasks {
		g.Nodes = append(g.Nodes, graphNode{ID: t.Code, Label: t.Code, URL: taskURL(t), Role: "task"})
	}
	for _, t := range p.Tasks {
		for _, up := range t.Upstreams {
			if pipe, task, cross := strings.Cut(up, "."); cross {
				g.Nodes = append(g.Nodes, graphNode{ID: up, Label: up, URL: taskURL(&Task{Pipeline: pipe, Code: task}), Role: "external"})
			}
			g.Edges = append(g.Edges, graphEdge{From: up, To: t.Code})
		}
	}
	return g
}

// tableGraph is a table with every table upstream and downstream of it and
// the links between them on the way.
func (s *Site) tableGraph(t *Table) *graph {
	g := &graph{ID: "lineage-graph"}
	role := map[string]string{t.Name: "self"}
	for _, u := range t.Upstream {
		role[u] = "upstream"
	}
	for _, d := range t.Downstream {
		if role[d] == "" {
			role[d] = "downstream"
		}
	}
	for _, name := range append(append([]string{t.Name}, t.Upstream...), t.Downstream...) {
		if r := role[name]; r != "" {
			g.Nodes = append(g.Nodes, graphNode{ID: name, Label: name, URL: tableURL(name), Role: r})
			role[name] = "" // once
		}
	}
	inUp := map[string]bool{t.Name: true}
	for _, u := range t.Upstream {
		inUp[u] = true
	}
	inDown := map[string]bool{t.Name: true}
	for _, d := range t.Downstream {
		inDown[d] = true
	}
	for _, from := range append(append([]string{t.Name}, t.Upstream...), t.Downstream...) {
		for _, to := range s.feeds[from] {
			if (inUp[from] && inUp[to] && from != t.Name) || (inDown[from] && inDown[to] && to != t.Name) {
				g.Edges = append(g.Edges, graphEdge{From: from, To: to})
			}
		}
	}
	return g
}

// searchEntry is one thing the search box finds: its title, kind, page,
// and the lower-case text it is matched on.
type searchEntry struct {
	Title string `json:"t"`
	Kind  string `json:"k"`
	URL   string `json:"u"`
	Text  string `json:"s"`
}

// writeSearchIndex writes the search index as a script that sets
// window.ETL_CRAFT_SEARCH: a script, not a JSON file, because a page opened
// from file:// may load scripts but not fetch files.
func (s *Site) writeSearchIndex(path string) error {
	var entries []searchEntry
	add := func(title, kind, url string, more ...string) {
		entries = append(entries, searchEntry{title, kind, url, strings.ToLower(strings.Join(append([]string{title}, more...), " "))})
	}
	for _, p := range s.Pipelines {
		add(p.Code, "pipeline", pipeURL(p.Code), p.Name, p.Description)
		for _, t := range p.Tasks {
			add(t.Name(), "task", taskURL(t), t.Handler, t.Params["TARGET_OBJECT"], t.Params["DOCUMENTATION"])
			for _, r := range t.Rules {
				add(r.Name, "business rule", taskURL(t), t.Name(), r.TargetTable)
			}
		}
	}
	for _, t := range s.Tables {
		add(t.Name, "table", tableURL(t.Name))
	}
	b, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(append([]byte("window.ETL_CRAFT_SEARCH = "), b...), ";\n"...), 0o644)
}

// writeAssets copies the embedded assets into dir/assets and writes the
// highlighter's style sheet.
func writeAssets(dir string) error {
	err := fs.WalkDir(assetFS, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := assetFS.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		return err
	}
	var css bytes.Buffer
	if err := formatter.WriteCSS(&css, sqlStyle); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "assets", "chroma.css"), css.Bytes(), 0o644)
}

// The SQL highlighter: chroma's PostgreSQL lexer, written with CSS classes.
var (
	formatter = chromahtml.New(chromahtml.WithClasses(true), chromahtml.TabWidth(4))
	sqlLexer  = chroma.Coalesce(lexers.Get("postgresql"))
	sqlStyle  = styles.Get("github")
)

// highlight returns the SQL as highlighted HTML; text the lexer cannot read
// is shown plain.
func highlight(sql string) template.HTML {
	it, err := sqlLexer.Tokenise(nil, sql)
	var b bytes.Buffer
	if err == nil {
		err = formatter.Format(&b, sqlStyle, it)
	}
	if err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(sql) + "</pre>")
	}
	return template.HTML(b.String())
}

// movedPage is a page that only sends the reader on to where a page is now.
type movedPage struct {
	Title string
	To    string // the page, from the site's top folder
}

// table returns the table of that name, nil when the lineage names none.
func (s *Site) table(name string) *Table {
	for _, t := range s.Tables {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// templates parses the pages' templates. root gives the way up from the
// page being rendered to the site's top folder, which every link the
// templates write starts with.
func (s *Site) templates(root func() string) (*template.Template, error) {
	up := func(url string) string { return root() + url }
	return template.New("site").Funcs(template.FuncMap{
		"when": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05Z")
		},
		"dur": func(d time.Duration) string {
			if d <= 0 {
				return "—"
			}
			return d.Round(100 * time.Millisecond).String()
		},
		"pct":         func(f float64) string { return fmt.Sprintf("%.0f%%", f) },
		"lower":       strings.ToLower,
		"root":        root,
		"pipeURL":     func(code string) string { return up(pipeURL(code)) },
		"taskURL":     func(t *Task) string { return up(taskURL(t)) },
		"taskNameURL": func(name string) string { return up(taskNameURL(name)) },
		"tableURL":    func(name string) string { return up(tableURL(TableName(name, s.DefaultDatabase))) },
		"columnKey":   func(table, column string) string { return table + "|" + column },
		"highlight":   highlight,
	}).ParseFS(templateFS, "templates/site.html")
}

// pipeURL, taskURL and tableURL are the pages' paths from the site's top
// folder: the pipelines' and tasks' pages are in it, the tables' in
// tablesFolder (where the reference puts them). The search index and the
// graphs' data give these paths; the pages' script starts each from the
// way up to the top folder.
func pipeURL(code string) string { return "pipeline-" + slug(code) + ".html" }

func taskURL(t *Task) string { return "task-" + slug(t.Pipeline) + "--" + slug(t.Code) + ".html" }

// taskNameURL is the page of the task named PIPE.task.
func taskNameURL(name string) string {
	pipe, task, _ := strings.Cut(name, ".")
	return taskURL(&Task{Pipeline: pipe, Code: task})
}

// tablesFolder holds the tables' pages, tables/<schema>.<table>.html.
const tablesFolder = "tables"

func tableURL(name string) string { return tablesFolder + "/" + slug(name) + ".html" }

// oldTableURL is where catalogs before 0.2 put a table's page; a page there
// now sends the reader on to tableURL.
func oldTableURL(name string) string { return "table-" + slug(name) + ".html" }

// slug writes a name for a file name: letters, digits, _ and . as they are,
// any other byte as ~ and its hex value, so different names stay different.
func slug(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "~%02x", c)
		}
	}
	return b.String()
}
