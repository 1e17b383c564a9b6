package cli_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/etl-craft/etl-craft/internal/e2e"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/pipeline"
	"github.com/etl-craft/etl-craft/internal/pipeline/pipelinetest"
)

// catalogProject is a project whose SALES pipeline has two SQL tasks.
func catalogProject(t *testing.T, kind engine.Kind) (*e2e.Project, *pipelinetest.Builder) {
	t.Helper()
	p := newProject(t, kind, "")
	p.OK("init-db")
	b := pipelinetest.New(t, p.DB())
	b.Pipeline("SALES", pipeline.Full)
	b.Task("SALES", "load_orders", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.orders", "SOURCE_SQL": "SELECT id, amount FROM raw.orders"})
	b.Task("SALES", "daily_revenue", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.daily_revenue", "SOURCE_SQL": "SELECT SUM(amount) AS revenue FROM main.orders"})
	b.Dep("SALES", "daily_revenue", "SALES", "load_orders", pipeline.Success)
	return p, b
}

func TestGenerateDocsWritesOnlyItsOwnFolderAndStrictWritesNothingUntraced(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p, b := catalogProject(t, kind)
		catalog := filepath.Join(p.Dir, "catalog")
		wrote := regexp.MustCompile(`^generate-docs: wrote (\d+) page\(s\) to ` + regexp.QuoteMeta(catalog) + "\n$")
		for range 2 { // the second time into the folder it marked
			if r := p.OK("generate-docs"); !wrote.MatchString(r.Stdout) {
				t.Fatalf("generate-docs: %q", r.Stdout)
			}
		}
		index, err := os.ReadFile(filepath.Join(catalog, "index.html"))
		if err != nil || !strings.Contains(string(index), "pipeline-SALES.html") {
			t.Fatalf("index.html: %v\n%s", err, index)
		}

		mine := filepath.Join(p.Dir, "mine")
		p.Write("mine/notes.txt", "keep me")
		e2e.WantExit(t, p.Run(nil, "generate-docs", "--output", "mine"), 3, "no .etl-craft-catalog marker")
		if entries, _ := os.ReadDir(mine); len(entries) != 1 {
			t.Errorf("the refused folder was changed: %v", entries)
		}

		b.Task("SALES", "broken", pipeline.HandlerSQL, map[string]string{"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.broken", "SOURCE_SQL": "SELECT (1 FROM raw.orders"})
		untraced := "column lineage unavailable: SALES.broken: DuckDB's parser refuses the SELECT: syntax error at or near \"FROM\"\n"
		r := p.Run(nil, "generate-docs", "--strict", "--output", "strict")
		if r.Code != 1 || r.Stdout != untraced+"generate-docs: nothing written; 1 task(s) not traced\n" {
			t.Fatalf("--strict: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
		}
		if _, err := os.Stat(filepath.Join(p.Dir, "strict")); !os.IsNotExist(err) {
			t.Errorf("--strict wrote the folder: %v", err)
		}
		p.WarehouseExec("CREATE SCHEMA raw", "CREATE TABLE raw.orders (id INTEGER, amount DECIMAL(10, 2))")
		r = p.OK("generate-docs", "--output", "strict", "--with-warehouse")
		if !strings.HasPrefix(r.Stdout, untraced+"generate-docs: wrote ") {
			t.Errorf("without --strict: %q", r.Stdout)
		}
		orders, err := os.ReadFile(filepath.Join(p.Dir, "strict", "tables", "raw.orders.html"))
		if err != nil || !strings.Contains(string(orders), "Columns in the warehouse") || !strings.Contains(string(orders), "DECIMAL(10,2)") {
			t.Errorf("--with-warehouse: the columns of raw.orders are not listed (%v)\n%s", err, orders)
		}
		if _, err := os.Stat(filepath.Join(p.Dir, "strict", "task-SALES--broken.html")); err != nil {
			t.Errorf("the untraced task has no page: %v", err)
		}
		if got := textColumn(t, p.DB(), "SELECT COMMAND FROM AUD_ACTIONS WHERE COMMAND = 'generate-docs' ORDER BY ACTION_ID"); len(got) != 5 {
			t.Errorf("recorded requests: %v", got)
		}
	})
}

// serving is a running publish-docs.
type serving struct {
	url  string
	cmd  *exec.Cmd
	wait func() e2e.Result
}

// publish starts publish-docs with the arguments and waits for its serving
// line.
func publish(t *testing.T, p *e2e.Project, args ...string) serving {
	t.Helper()
	cmd := p.Command(nil, append([]string{"publish-docs", "--local-only"}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(out)
	first, err := lines.ReadString('\n')
	m := regexp.MustCompile(`^publish-docs: serving ` + regexp.QuoteMeta(filepath.Join(p.Dir, "catalog")) + ` at (http://127\.0\.0\.1:\d+/) \(Ctrl-C to stop\)\n$`).FindStringSubmatch(first)
	if m == nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("publish-docs printed %q (%v)\nstderr: %s", first, err, errb.String())
	}
	return serving{url: m[1], cmd: cmd, wait: func() e2e.Result {
		rest, _ := io.ReadAll(lines)
		err := cmd.Wait()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return e2e.Result{Stdout: first + string(rest), Stderr: errb.String(), Code: code}
	}}
}

func TestPublishDocsServesLocallyAndKeepsItsURL(t *testing.T) {
	t.Parallel()
	e2e.EachEngine(t, func(t *testing.T, kind engine.Kind) {
		p, _ := catalogProject(t, kind)
		e2e.WantExit(t, p.Run(nil, "publish-docs", "--local-only"), 3, "there is no catalog site in "+filepath.Join(p.Dir, "catalog"))
		p.OK("generate-docs")
		r := p.Run(nil, "publish-docs")
		e2e.WantExit(t, r, 3, "with --local-only")
		if !strings.Contains(r.Stderr, "behind a web server") {
			t.Errorf("the refusal does not say how to publish: %s", r.Stderr)
		}

		s := publish(t, p)
		resp, err := http.Get(s.url + "pipeline-SALES.html")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), "load_orders") {
			t.Errorf("GET pipeline-SALES.html: %d\n%s", resp.StatusCode, body)
		}
		db := p.DB()
		if got := textColumn(t, db, "SELECT PUBLISHED_URL FROM AUD_DOCS_PUBLICATION ORDER BY DOCS_PUBLICATION_ID"); strings.Join(got, " ") != s.url {
			t.Errorf("recorded URLs: %v, want %s", got, s.url)
		}
		stop(t, s)

		other := freePort(t, s.url)
		newURL := fmt.Sprintf("http://127.0.0.1:%d/", other)
		refused := p.Run(nil, "publish-docs", "--local-only", "--port", fmt.Sprint(other))
		e2e.WantExit(t, refused, 3, "the catalog was published at "+s.url+", and it is now served at "+newURL)
		// The refusal names the flag that accepts the new URL.
		e2e.WantExit(t, refused, 3, "accept the new URL with --accept-new-url to use it from now on")
		accepted := publish(t, p, "--port", fmt.Sprint(other), "--accept-new-url")
		if accepted.url != newURL {
			t.Errorf("served at %s, want %s", accepted.url, newURL)
		}
		stop(t, accepted)
		if got := textColumn(t, db, "SELECT PUBLISHED_URL FROM AUD_DOCS_PUBLICATION ORDER BY DOCS_PUBLICATION_ID"); strings.Join(got, " ") != s.url+" "+newURL {
			t.Errorf("recorded URLs: %v", got)
		}
	})
}

// stop interrupts publish-docs as Ctrl-C does and checks that it stopped.
func stop(t *testing.T, s serving) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if r := s.wait(); r.Code != 0 || !strings.HasSuffix(r.Stdout, "publish-docs: stopped\n") {
		t.Errorf("after Ctrl-C: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// freePort returns a free port of 127.0.0.1 other than the one of url.
func freePort(t *testing.T, url string) int {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if !strings.HasSuffix(url, fmt.Sprintf(":%d/", port)) {
			return port
		}
	}
}
