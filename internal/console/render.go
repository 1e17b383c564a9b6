package console

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// funcs are the templates' functions.
var funcs = template.FuncMap{
	"status":    statusOf,
	"statusPtr": statusPtr,
	"sla":       sla,
	"time":      timeHTML,
	"instant":   instantHTML,
	"duration":  duration,
	"visible":   visible,
	"lines":     lines,
	"firstLine": firstLine,
	"deref":     deref,
	"count":     count,
	"asset":     func(name string) string { return assetURLs[name] },
}

// pages are the page templates by name: each templates/<name>.html with
// the layout.
var pages = parsePages()

// parsePages parses every page with the layout.
func parsePages() map[string]*template.Template {
	names := must(fs.Glob(templateFS, "templates/*.html"))
	out := map[string]*template.Template{}
	for _, file := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(file, "templates/"), ".html")
		if name == "layout" {
			continue
		}
		out[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", file))
	}
	return out
}

// versionKey is the context key of the live version a page's reads are at
// least as new as.
type versionKey struct{}

// view is what the layout shows around a page's body.
type view struct {
	Title string
	// Section is the navigation entry that is current: pipelines, server,
	// tokens or "".
	Section string
	Session *session
	// CSRF is the session's CSRF token, for the page's forms.
	CSRF  string
	Flash *flash
	// Version and Watch make the page live (see live.go): the version it
	// shows, and the tables it watches, space separated ("": none).
	Version, Watch string
	// Query is the search box's text.
	Query string
	Body  any
}

// liveHeader marks the request of an open page fetching itself to swap
// in what changed (assets/console.js).
const liveHeader = "X-Console-Live"

// render writes the named page with the layout, with the status. A live
// fetch leaves the flash to the page the browser opens next: an action's
// answer may reach the browser while the page it left fetches itself.
func (c *Console) render(w http.ResponseWriter, r *http.Request, s *session, status int, name, title, watch string, body any) {
	v := view{Title: title, Section: section(r.URL.Path), Session: s, Watch: watch, Body: body, Query: r.URL.Query().Get("q")}
	if r.Header.Get(liveHeader) == "" {
		v.Flash = takeFlash(w, r)
	}
	if s != nil {
		v.CSRF = s.csrf()
	}
	v.Version, _ = r.Context().Value(versionKey{}).(string)
	var b bytes.Buffer
	if err := pages[name].Execute(&b, v); err != nil {
		c.log.Error("could not render a console page", "page", name, "error", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(b.Bytes())
}

// section is the navigation entry of a path.
func section(path string) string {
	for _, s := range []string{"pipelines", "runs", "attempts", "server", "tokens"} {
		if path == "/"+s || strings.HasPrefix(path, "/"+s+"/") {
			if s == "runs" || s == "attempts" {
				return "pipelines"
			}
			return s
		}
	}
	return ""
}

// flash is a message a page shows once, after an action sent the browser
// to it: what was done, or why it was refused.
type flash struct {
	Error bool   `json:"error,omitempty"`
	Text  string `json:"text"`
	// Link and LinkText point to what the action made, such as a run.
	Link     string `json:"link,omitempty"`
	LinkText string `json:"link_text,omitempty"`
}

// flashCookie holds the flash between the action and the page.
const flashCookie = "etl_craft_flash"

// maxFlashText is the most bytes of a flash's text a cookie carries.
const maxFlashText = 1500

// setFlash keeps the flash for the next page the browser opens.
func setFlash(w http.ResponseWriter, r *http.Request, f flash) {
	if len(f.Text) > maxFlashText {
		cut := maxFlashText
		for cut > 0 && !utf8.RuneStart(f.Text[cut]) {
			cut--
		}
		f.Text = f.Text[:cut] + " …"
	}
	b, _ := json.Marshal(f)
	setCookie(w, r, flashCookie, base64.RawURLEncoding.EncodeToString(b), "/", time.Time{}, 60)
}

// takeFlash returns the flash kept for this page, and forgets it.
func takeFlash(w http.ResponseWriter, r *http.Request) *flash {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	setCookie(w, r, flashCookie, "", "/", time.Time{}, -1)
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	var f flash
	if err != nil || json.Unmarshal(b, &f) != nil || localPath(f.Link) != f.Link {
		return nil
	}
	return &f
}
