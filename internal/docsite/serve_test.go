package docsite_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/etl-craft/etl-craft/internal/docsite"
)

// The catalog server serves only regular files whose real path is inside
// the site folder and none of whose path elements is hidden: a symbolic
// link to the Engine DB, to the configuration or to any file outside, an
// alias of a hidden folder, a link out of the site's root, a FIFO and a
// hidden path are all 404; a link to a file of the site itself is served.
func TestPublishServesOnlyRegularFilesInsideTheSite(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(project, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(project, filepath.FromSlash(rel))); err != nil {
			t.Fatal(err)
		}
	}
	write("etl-craft-engine.db", "SQLite format 3 the whole Engine DB")
	write("craft-connector.yml", "Engine: secret settings")
	write("catalog/"+docsite.Marker, "")
	write("catalog/index.html", "<h1>the catalog</h1>")
	write("catalog/pipelines/index.html", "<h1>pipelines</h1>")
	write("catalog/.git/config", "[remote] url = secret")
	write("catalog/assets/site.css", "body {}")
	link("../etl-craft-engine.db", "catalog/link-engine.db")
	link("../craft-connector.yml", "catalog/assets/config.css")
	link("/etc/passwd", "catalog/passwd")
	link(".git", "catalog/alias-git")
	link("..", "catalog/up")
	link("assets/site.css", "catalog/same.css")
	if err := syscall.Mkfifo(filepath.Join(project, "catalog", "pipe.html"), 0o644); err != nil {
		t.Fatal(err)
	}

	srv, err := docsite.Listen(filepath.Join(project, "catalog"), "127.0.0.1", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	for path, want := range map[string]int{
		"":                                 200,
		"index.html":                       200,
		"pipelines/":                       200,
		"assets/site.css":                  200,
		"same.css":                         200,
		"link-engine.db":                   404,
		"assets/config.css":                404,
		"passwd":                           404,
		"alias-git/config":                 404,
		".git/config":                      404,
		"%2egit/config":                    404,
		"up/etl-craft-engine.db":           404,
		"up/craft-connector.yml":           404,
		"up/catalog/index.html":            200, // the site's own page, by another way
		"pipe.html":                        404,
		"assets/":                          404,
		docsite.Marker:                     404,
		"../etl-craft-engine.db":           404,
		"assets/../../craft-connector.yml": 404,
	} {
		status, body := get(t, srv.URL+path)
		if status != want {
			t.Errorf("GET /%s: %d, want %d: %s", path, status, want, body)
		}
		if strings.Contains(body, "secret") || strings.Contains(body, "SQLite format") || strings.Contains(body, "root:") {
			t.Errorf("GET /%s served a file outside the site: %s", path, body)
		}
	}
	// A folder's address without its slash leads to its index.html.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(srv.URL + "pipelines")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != "/pipelines/" {
		t.Errorf("GET /pipelines: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// get sends a GET over a raw connection, so that the path reaches the
// server exactly as written (no client cleans ../ away), and returns the
// status and the body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	host, path, _ := strings.Cut(strings.TrimPrefix(url, "http://"), "/")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /"+path+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := strings.Cut(string(raw), "\r\n\r\n")
	var status int
	if _, rest, ok := strings.Cut(head, " "); ok && len(rest) >= 3 {
		for _, c := range rest[:3] {
			status = status*10 + int(c-'0')
		}
	}
	return status, body
}
