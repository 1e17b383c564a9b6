package docsite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/records"
)

// robots asks every crawler to keep out of the whole site.
const robots = "User-agent: *\nDisallow: /\n"

// headers are sent with every response: no indexing, no referrer, no
// framing, no sniffing, no stale cache.
var headers = map[string]string{
	"X-Robots-Tag":           "noindex, nofollow, noarchive",
	"Referrer-Policy":        "no-referrer",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Cache-Control":          "no-cache",
}

// Server serves a catalog folder over HTTP on this machine.
type Server struct {
	// URL is where the site is served, ending in /.
	URL  string
	http *http.Server
	ln   net.Listener
	site *files
}

// Listen opens the web server of the site in folder on host:port (port 0
// picks a free one), not yet serving. allowed are the CIDR ranges visitors
// may come from, every address when empty. A folder generate-docs did not
// write is a configuration error (exit 3).
func Listen(folder, host string, port int, allowed []string) (*Server, error) {
	if _, err := os.Stat(filepath.Join(folder, Marker)); err != nil {
		return nil, exit.Errorf(exit.Configuration, "there is no catalog site in %s: run `etl-craft generate-docs` first", folder)
	}
	var prefixes []netip.Prefix
	for _, a := range allowed {
		p, err := netip.ParsePrefix(a)
		if err != nil {
			return nil, exit.Wrap(exit.Configuration, err, "Docs_site.Allowed_ips: %q is not a CIDR range", a)
		}
		prefixes = append(prefixes, p)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	if err != nil {
		return nil, exit.Wrap(exit.Configuration, err, "cannot serve the catalog on %s port %d", host, port)
	}
	site, err := openFiles(folder)
	if err != nil {
		ln.Close()
		return nil, exit.Wrap(exit.Configuration, err, "cannot open the catalog folder %s", folder)
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		if !visitorAllowed(r.RemoteAddr, prefixes) {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		if r.URL.Path == "/robots.txt" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprint(w, robots)
			return
		}
		site.ServeHTTP(w, r)
	})
	addr := ln.Addr().(*net.TCPAddr)
	url := "http://" + net.JoinHostPort(host, fmt.Sprint(addr.Port)) + "/"
	return &Server{URL: url, ln: ln, site: site, http: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// visitorAllowed reports whether the connecting address is in one of the
// ranges, or there are none.
func visitorAllowed(remote string, allowed []netip.Prefix) bool {
	if len(allowed) == 0 {
		return true
	}
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return false
	}
	for _, p := range allowed {
		if p.Contains(ap.Addr().Unmap()) {
			return true
		}
	}
	return false
}

// Close stops listening, for a server that will not serve.
func (s *Server) Close() error {
	s.site.Close()
	return s.ln.Close()
}

// Serve serves until ctx is done, then shuts the server down.
func (s *Server) Serve(ctx context.Context) error {
	defer s.site.Close()
	done := make(chan error, 1)
	go func() { done <- s.http.Serve(s.ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.http.Shutdown(shut); err != nil {
			return err
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// Publication is the row of AUD_DOCS_PUBLICATION in force: the latest.
type Publication struct {
	URL                    string
	FirstPublished, LastAt time.Time
}

// LatestPublication returns the URL the catalog was last published at, nil
// when it never was.
func LatestPublication(ctx context.Context, q records.Querier) (*Publication, error) {
	var p Publication
	var first, last records.Time
	err := q.QueryRowContext(ctx, `SELECT PUBLISHED_URL, FIRST_PUBLISHED, LAST_PUBLISHED FROM AUD_DOCS_PUBLICATION
ORDER BY DOCS_PUBLICATION_ID DESC LIMIT 1`).Scan(&p.URL, &first, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, exit.Wrap(exit.EngineDB, err, "cannot read AUD_DOCS_PUBLICATION")
	}
	p.FirstPublished, p.LastAt = first.Time, last.Time
	return &p, nil
}

// RecordPublication records that the catalog is published at url. The same
// URL as last time updates its LAST_PUBLISHED; another one would break the
// links already shared, so it is refused naming both (exit 3) unless
// acceptNew, and then recorded as a new row, in force from now on.
func RecordPublication(ctx context.Context, db *engine.DB, url string, acceptNew bool, now time.Time) error {
	return db.Tx(ctx, func(tx *engine.Tx) error {
		before, err := LatestPublication(ctx, tx)
		if err != nil {
			return err
		}
		switch {
		case before != nil && before.URL == url:
			_, err = tx.ExecContext(ctx, `UPDATE AUD_DOCS_PUBLICATION SET LAST_PUBLISHED = $1
WHERE DOCS_PUBLICATION_ID = (SELECT MAX(DOCS_PUBLICATION_ID) FROM AUD_DOCS_PUBLICATION)`, tx.TimeArg(now))
		case before != nil && !acceptNew:
			return exit.Fieldf(exit.Configuration,
				"the catalog was published at %s, and it is now served at %s; links already shared would break. "+
					"Serve it at the same address, or accept the new URL with {accept_new_url} to use it from now on", before.URL, url)
		default:
			_, err = tx.ExecContext(ctx, `INSERT INTO AUD_DOCS_PUBLICATION (PUBLISHED_URL, FIRST_PUBLISHED, LAST_PUBLISHED)
VALUES ($1, $2, $2)`, url, tx.TimeArg(now))
		}
		if err != nil {
			return exit.Wrap(exit.EngineDB, err, "cannot record the catalog's URL in AUD_DOCS_PUBLICATION")
		}
		return nil
	})
}
