package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/etl-craft/etl-craft/internal/action"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/exit"
	"github.com/etl-craft/etl-craft/internal/run"
)

// The actions: each calls the API's own action (package action), which
// records it as "console <verb>" before it acts, then sends the browser
// back to the page it came from, which says what was done, or why it was
// refused, once.

// actionWait is how long a rerun or a backfill, which last as long as
// their tasks, is waited for before the browser is sent back: the page
// follows the rest live.
const actionWait = 2 * time.Second

// done tells the next page what the action did, and sends the browser there.
func done(w http.ResponseWriter, r *http.Request, back string, f flash) {
	setFlash(w, r, f)
	http.Redirect(w, r, back, http.StatusSeeOther)
}

// refused tells the next page why the action was refused, and sends the
// browser there.
func (c *Console) refused(w http.ResponseWriter, r *http.Request, back string, err error) {
	done(w, r, back, flash{Error: true, Text: message(err)})
}

// pipelinePath is a pipeline's page.
func pipelinePath(code string) string { return "/pipelines/" + url.PathEscape(code) }

// runPath is a run's page.
func runPath(id int64) string { return "/runs/" + strconv.FormatInt(id, 10) }

func (c *Console) trigger(w http.ResponseWriter, r *http.Request, _ *session) {
	code := r.PathValue("code")
	out, err := c.act.Trigger(r.Context(), code, r.PostForm.Get("run_date"), r.PostForm.Get("reason"))
	if err != nil {
		c.refused(w, r, pipelinePath(code), err)
		return
	}
	done(w, r, pipelinePath(code), flash{Text: exit.RenderFields(out.String(), fieldLabel), Link: runPath(out.RunID),
		LinkText: fmt.Sprintf("Open run %d", out.RunID)})
}

func (c *Console) backfill(w http.ResponseWriter, r *http.Request, _ *session) {
	code := r.PathValue("code")
	first, last, reason := r.PostForm.Get("first"), r.PostForm.Get("last"), r.PostForm.Get("reason")
	c.await(w, r, pipelinePath(code), "the backfill of "+code,
		func(ctx context.Context) (string, error) {
			out, err := c.act.Backfill(ctx, code, first, last, reason)
			return out.Message, err
		})
}

func (c *Console) pause(w http.ResponseWriter, r *http.Request, _ *session) {
	c.changed(w, r, pipelinePath(r.PathValue("code")))(c.act.Pause(r.Context(), r.PathValue("code"), r.PostForm.Get("reason")))
}

func (c *Console) resume(w http.ResponseWriter, r *http.Request, _ *session) {
	c.changed(w, r, pipelinePath(r.PathValue("code")))(c.act.Resume(r.Context(), r.PathValue("code"), r.PostForm.Get("reason")))
}

// changed returns what answers an operator's change: its message, or its
// refusal, on the page back.
func (c *Console) changed(w http.ResponseWriter, r *http.Request, back string) func(run.Change, error) {
	return func(ch run.Change, err error) {
		if err != nil {
			c.refused(w, r, back, err)
			return
		}
		done(w, r, back, flash{Text: exit.RenderFields(ch.Message, fieldLabel)})
	}
}

// runID is the run id of the request's path; ok is false, and the page
// says so (404), when it is no id.
func (c *Console) runID(w http.ResponseWriter, r *http.Request, s *session) (int64, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		c.render(w, r, s, http.StatusNotFound, "error", "Not found", "",
			errorPage{Status: http.StatusNotFound, Message: fmt.Sprintf("%q is no PIPELINE_RUN_ID", r.PathValue("id"))})
		return 0, false
	}
	return id, true
}

func (c *Console) cancel(w http.ResponseWriter, r *http.Request, s *session) {
	if id, ok := c.runID(w, r, s); ok {
		c.changed(w, r, runPath(id))(c.act.Cancel(r.Context(), id, r.PostForm.Get("reason")))
	}
}

func (c *Console) mark(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := c.runID(w, r, s)
	if !ok {
		return
	}
	m := action.Mark{RunID: id, Task: r.PostForm.Get("task"), Status: r.PostForm.Get("status"), Reason: r.PostForm.Get("reason")}
	if rows := r.PostForm.Get("rows"); rows != "" {
		n, err := strconv.ParseInt(rows, 10, 64)
		if err != nil || n < 0 {
			c.refused(w, r, runPath(id), exit.Fieldf(exit.Usage, "{rows} must be a whole number of 0 or more, got %q", rows))
			return
		}
		m.Rows = &n
	}
	c.changed(w, r, runPath(id))(c.act.Mark(r.Context(), m))
}

func (c *Console) rerun(w http.ResponseWriter, r *http.Request, s *session) {
	id, ok := c.runID(w, r, s)
	if !ok {
		return
	}
	task, reason, downstream := r.PostForm.Get("task"), r.PostForm.Get("reason"), r.PostForm.Get("with_downstream") != ""
	c.await(w, r, runPath(id), "the rerun of "+task,
		func(ctx context.Context) (string, error) {
			out, err := c.act.Rerun(ctx, id, task, reason, downstream)
			return out.String(), err
		})
}

// await runs a long action (a rerun, a backfill) apart from the request,
// and sends the browser back once it ended or after actionWait, whichever
// comes first: its refusal or its result, or that it goes on, which the
// page then follows live. What ends it later is logged.
func (c *Console) await(w http.ResponseWriter, r *http.Request, back, what string, act func(context.Context) (string, error)) {
	type result struct {
		text string
		err  error
	}
	ended := make(chan result, 1)
	ctx := r.Context()
	go func() {
		text, err := act(ctx)
		ended <- result{text, err}
	}()
	select {
	case res := <-ended:
		if res.err != nil {
			c.refused(w, r, back, res.err)
			return
		}
		done(w, r, back, flash{Text: exit.RenderFields(res.text, fieldLabel)})
	case <-time.After(actionWait):
		go func() {
			if res := <-ended; res.err != nil {
				c.log.Warn("a console action failed after its page was sent", "action", what, "error", res.err)
			}
		}()
		done(w, r, back, flash{Text: what + " goes on: this page follows it"})
	}
}

// tokensPage's form answers: the token made, whose value it shows once.
func (c *Console) createToken(w http.ResponseWriter, r *http.Request, s *session) {
	made, err := c.act.CreateToken(r.Context(), apitoken.Request{Name: r.PostForm.Get("name"), Role: r.PostForm.Get("role"),
		Expires: r.PostForm.Get("expires")})
	if err != nil {
		c.refused(w, r, "/tokens", err)
		return
	}
	c.showTokens(w, r, s, http.StatusCreated, &made)
}

func (c *Console) revokeToken(w http.ResponseWriter, r *http.Request, _ *session) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		c.refused(w, r, "/tokens", exit.Errorf(exit.ResourceNotFound, "%q is no TOKEN_ID", r.PathValue("id")))
		return
	}
	t, err := c.act.RevokeToken(r.Context(), id)
	if err != nil {
		c.refused(w, r, "/tokens", err)
		return
	}
	done(w, r, "/tokens", flash{Text: fmt.Sprintf("API token %d (%s) is revoked: it no longer authenticates, and its console sessions have ended", t.ID, t.Name)})
}
