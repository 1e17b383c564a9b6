package console

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/audit"
	"github.com/etl-craft/etl-craft/internal/freetext"
)

// signinPage is what the sign-in form shows.
type signinPage struct {
	Next string
	// Form is the value the form posts back, which its cookie must match.
	Form    string
	Refusal string
}

// invalidToken is what a sign-in with a token that does not authenticate
// is told, as the API tells it: nothing about stored tokens.
const invalidToken = "the API token is not valid: paste a token that is known, neither revoked nor expired (etl-craft token list shows them)"

// signinForm shows the sign-in form, or sends a signed-in browser on.
func (c *Console) signinForm(w http.ResponseWriter, r *http.Request) {
	next := localPath(r.URL.Query().Get("next"))
	s, err := findSession(r.Context(), c.p.DB, r)
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	if s != nil {
		http.Redirect(w, r, orPipelines(next), http.StatusSeeOther)
		return
	}
	c.showSignin(w, r, http.StatusOK, next, "")
}

// orPipelines is next, or the pipelines page when it is empty.
func orPipelines(next string) string {
	if next == "" {
		return "/pipelines"
	}
	return next
}

// showSignin writes the sign-in form with a fresh form value.
func (c *Console) showSignin(w http.ResponseWriter, r *http.Request, status int, next, refusal string) {
	form, err := randomValue()
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	setCookie(w, r, signinCookie, form, "/signin", time.Now().Add(time.Hour), 3600)
	c.render(w, r, nil, status, "signin", "Sign in", "", signinPage{Next: next, Form: form, Refusal: refusal})
}

// signin checks the pasted token as the API does and, when it
// authenticates, records the sign-in and starts a session.
func (c *Console) signin(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		c.forbidden(w, r, nil, "the sign-in form could not be read")
		return
	}
	next := localPath(r.PostForm.Get("next"))
	ck, err := r.Cookie(signinCookie)
	if err != nil || !sameValue(ck.Value, r.PostForm.Get("form")) {
		c.forbidden(w, r, nil, "the sign-in form is not one this server gave: open the sign-in page again")
		return
	}
	tok, err := apitoken.Authenticate(r.Context(), c.p.DB, strings.TrimSpace(r.PostForm.Get("token")))
	if errors.Is(err, apitoken.ErrMissing) || errors.Is(err, apitoken.ErrUnknown) || errors.Is(err, apitoken.ErrRevoked) ||
		errors.Is(err, apitoken.ErrExpired) {
		c.log.Info("refused a console sign-in's API token", "error", err.Error())
		c.showSignin(w, r, http.StatusUnauthorized, next, invalidToken)
		return
	}
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	a, err := actor.New(tok.Name, ActorKind)
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	ctx := context.WithoutCancel(actor.With(r.Context(), a))
	if _, err := audit.Record(ctx, c.p.DB, audit.Request{Command: c.act.Via + " sign-in", Arguments: map[string]any{"token_id": tok.ID},
		StartedAt: time.Now()}); err != nil {
		c.fail(w, r, nil, err)
		return
	}
	s, ends, err := createSession(ctx, c.p.DB, tok)
	if err != nil {
		c.fail(w, r, nil, err)
		return
	}
	setCookie(w, r, signinCookie, "", "/signin", time.Time{}, -1)
	setCookie(w, r, sessionCookie, s.value, "/", ends, 0)
	http.Redirect(w, r, orPipelines(next), http.StatusSeeOther)
}

// signout records the sign-out, ends the session and forgets its cookie.
func (c *Console) signout(w http.ResponseWriter, r *http.Request, s *session) {
	if _, err := audit.Record(r.Context(), c.p.DB, audit.Request{Command: c.act.Via + " sign-out",
		Arguments: map[string]any{"token_id": s.token.ID}, StartedAt: time.Now()}); err != nil {
		c.refused(w, r, "/pipelines", err)
		return
	}
	if err := deleteSession(r.Context(), c.p.DB, s); err != nil {
		c.refused(w, r, "/pipelines", err)
		return
	}
	setCookie(w, r, sessionCookie, "", "/", time.Time{}, -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
}

// action returns the handler of a state change that needs the role. It is
// refused (403), changing nothing, without a session, without the
// session's CSRF token, or for a token whose role is too low; and (400)
// when a field holds text that is not free text or is too long, by the
// API's rule. The handler then acts as the token's name, in a context the
// browser going away does not cancel.
func (c *Console) action(role apitoken.Role, h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			c.render(w, r, nil, http.StatusBadRequest, "error", "Refused", "",
				errorPage{Status: http.StatusBadRequest, Message: "the form could not be read: " + err.Error()})
			return
		}
		s, err := findSession(r.Context(), c.p.DB, r)
		switch {
		case err != nil:
			c.fail(w, r, nil, err)
			return
		case s == nil:
			c.forbidden(w, r, nil, "this needs a signed-in session: sign in, then try again")
			return
		case !sameValue(r.PostForm.Get(csrfField), s.csrf()):
			c.forbidden(w, r, s, "the request does not carry this session's CSRF token: submit the console's own form")
			return
		case !s.Can(role):
			c.forbidden(w, r, s, "the token "+s.Name()+" has the role "+string(s.Role())+"; this needs "+string(role)+" or above")
			return
		}
		if field, reason := badField(r); field != "" {
			c.render(w, r, s, http.StatusBadRequest, "error", "Refused", "",
				errorPage{Status: http.StatusBadRequest, Message: fieldLabel(field) + " " + reason})
			return
		}
		ctx, err := s.acting(context.WithoutCancel(r.Context()))
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		h(w, r.WithContext(ctx), s)
	}
}

// badField returns the first form field whose text the API would refuse,
// and why: one that is not free text (freetext.Check), or longer than
// MaxText.
func badField(r *http.Request) (field, reason string) {
	for name, values := range r.PostForm {
		for _, v := range values {
			if err := freetext.Check(v); err != nil {
				return name, err.Error()
			}
			if utf8.RuneCountInString(v) > MaxText {
				return name, "is longer than 4000 characters"
			}
		}
	}
	return "", ""
}
