package e2e

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// Console is a signed-in session of the web console a server serves, as
// a browser without a script holds it: an HTTP client keeping its cookies.
type Console struct {
	t testing.TB
	// Base is the server's URL, such as http://127.0.0.1:41234.
	Base   string
	client *http.Client
}

// formValue finds the hidden value of a named field in a page.
var formValue = func(name string) *regexp.Regexp {
	return regexp.MustCompile(`name="` + name + `" value="([^"]*)"`)
}

// SignIn signs in to the console of the server at base with the token,
// as a browser does: it opens the sign-in form and posts it. Anything but
// landing on the pipelines page fails the test.
func SignIn(t testing.TB, base, token string) *Console {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &Console{t: t, Base: base, client: &http.Client{Jar: jar}}
	status, page := c.Get("/signin")
	form := formValue("form").FindStringSubmatch(page)
	if status != http.StatusOK || form == nil {
		t.Fatalf("the sign-in page: %d\n%s", status, page)
	}
	res, err := c.client.PostForm(base+"/signin", url.Values{"form": {form[1]}, "token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Request.URL.Path != "/pipelines" {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("signing in: %d at %s\n%s", res.StatusCode, res.Request.URL, b)
	}
	return c
}

// Get returns the status and the body of a page, following redirects
// (a session that ended lands on /signin).
func (c *Console) Get(path string) (int, string) {
	c.t.Helper()
	res, err := c.client.Get(c.Base + path)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.Request.URL.Path == "/signin" && !strings.HasPrefix(path, "/signin") {
		return http.StatusUnauthorized, string(b)
	}
	return res.StatusCode, string(b)
}

// CSRF returns the session's CSRF token, as its pages carry it.
func (c *Console) CSRF() string {
	c.t.Helper()
	_, page := c.Get("/pipelines")
	m := formValue("csrf").FindStringSubmatch(page)
	if m == nil {
		c.t.Fatalf("the pipelines page carries no CSRF token:\n%s", page)
	}
	return m[1]
}

// Post posts the form to the path as the console's forms do, with the
// session's CSRF token csrf ("" for none), without following the answer:
// it returns the status, the redirect's target, and the body.
func (c *Console) Post(path, csrf string, form url.Values) (status int, location, body string) {
	c.t.Helper()
	values := url.Values{}
	for k, v := range form {
		values[k] = v
	}
	if csrf != "" {
		values.Set("csrf", csrf)
	}
	client := *c.client
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := client.PostForm(c.Base+path, values)
	if err != nil {
		c.t.Fatalf("POST %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(b)
}

// Act posts the form with the session's CSRF token, as an operator's
// click does, and returns the page it leads back to, which says what was
// done or why it was refused. An answer that is no redirect fails the
// test.
func (c *Console) Act(path string, form url.Values) string {
	c.t.Helper()
	status, location, body := c.Post(path, c.CSRF(), form)
	if status != http.StatusSeeOther {
		c.t.Fatalf("POST %s: %d, want a redirect\n%s", path, status, body)
	}
	_, page := c.Get(location)
	return page
}

// Live fetches the page as an open page's script does to bring itself up
// to date (with the X-Console-Live header), and returns its status and
// body.
func (c *Console) Live(path string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.Base+path, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("X-Console-Live", "1")
	res, err := c.client.Do(req)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// Open opens the path, such as the event stream, and returns its answer
// as it starts: the caller reads its body and closes it.
func (c *Console) Open(path string) *http.Response {
	c.t.Helper()
	res, err := c.client.Get(c.Base + path)
	if err != nil {
		c.t.Fatalf("GET %s: %v", path, err)
	}
	c.t.Cleanup(func() { res.Body.Close() })
	return res
}
