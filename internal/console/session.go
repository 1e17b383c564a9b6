package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/etl-craft/etl-craft/internal/actor"
	"github.com/etl-craft/etl-craft/internal/apitoken"
	"github.com/etl-craft/etl-craft/internal/engine"
	"github.com/etl-craft/etl-craft/internal/exit"
)

// Signing in: a person pastes an API token (package apitoken) once; the
// console checks it as the API does and keeps, instead of the token, a
// session: a random value in an HttpOnly, SameSite=Strict cookie (Secure
// when the request came over TLS), whose SHA-256 CONSOLE_SESSIONS keeps with
// the token's id. Every request reads the token through its session, so the
// token's role decides what the request may do, and a token revoked or
// expired since ends its sessions at that request. Sessions survive a
// restart of the server (they are in the Engine DB), and a sign-out deletes
// its row.
//
// Every state change is a POST that carries the session's CSRF token: an
// HMAC of the session's value, which only a page of the console holds. The
// sign-in form, before any session, carries a value its own cookie must
// match.

// Cookie names.
const (
	sessionCookie = "etl_craft_session"
	signinCookie  = "etl_craft_signin"
)

// SessionLifetime is how long a session lasts at most: an open page keeps
// working for a day and more. The token's own expiry, its revocation or a
// sign-out end it sooner.
const SessionLifetime = 7 * 24 * time.Hour

// valueBytes is how many random bytes a session's (or a sign-in form's)
// value holds.
const valueBytes = 32

// csrfField is the form field of the CSRF token.
const csrfField = "csrf"

// session is a signed-in request's session.
type session struct {
	// value is the cookie's value; only its hash is stored.
	value string
	token apitoken.Token
}

// csrf is the session's CSRF token: an HMAC of its value.
func (s *session) csrf() string {
	mac := hmac.New(sha256.New, []byte(s.value))
	mac.Write([]byte("etl-craft console csrf"))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Name is the session's token's name: the actor of what it does.
func (s *session) Name() string { return s.token.Name }

// Role is the session's token's role.
func (s *session) Role() apitoken.Role { return s.token.Role }

// Can reports whether the session may do what needs the role.
func (s *session) Can(role apitoken.Role) bool { return s.token.Role.Allows(role) }

// CanOperate reports whether the session may act on pipelines and runs.
func (s *session) CanOperate() bool { return s.Can(apitoken.Operator) }

// CanAdmin reports whether the session may manage tokens.
func (s *session) CanAdmin() bool { return s.Can(apitoken.Admin) }

// ActorKind is the actor kind of what a console session does: a person at
// the keyboard.
const ActorKind = actor.Human

// acting returns ctx with the session's token's name as the actor.
func (s *session) acting(ctx context.Context) (context.Context, error) {
	a, err := actor.New(s.token.Name, ActorKind)
	if err != nil {
		return nil, err
	}
	return actor.With(ctx, a), nil
}

// randomValue returns valueBytes from crypto/rand, URL-safe base64.
func randomValue() (string, error) {
	b := make([]byte, valueBytes)
	if _, err := rand.Read(b); err != nil {
		return "", exit.Wrap(exit.Unexpected, err, "could not draw a random session value")
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// digest is the hex SHA-256 of a session value, as CONSOLE_SESSIONS keeps it.
func digest(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// now is the time sessions are stamped and checked with: UTC, to the
// microsecond both dialects keep.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// createSession stores a new session of the token and returns it with when
// it ends, deleting the sessions that ended.
func createSession(ctx context.Context, db *engine.DB, tok apitoken.Token) (*session, time.Time, error) {
	value, err := randomValue()
	if err != nil {
		return nil, time.Time{}, err
	}
	at := now()
	ends := at.Add(SessionLifetime)
	if tok.ExpiresAt != nil && tok.ExpiresAt.Before(ends) {
		ends = *tok.ExpiresAt
	}
	err = db.BoundedTx(ctx, func(tx *engine.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM CONSOLE_SESSIONS WHERE EXPIRES_AT <= $1`, tx.TimeArg(at)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO CONSOLE_SESSIONS (SESSION_SHA256, TOKEN_ID, CREATED_AT, EXPIRES_AT) VALUES ($1, $2, $3, $4)`,
			digest(value), tok.ID, tx.TimeArg(at), tx.TimeArg(ends))
		return err
	})
	if err != nil {
		return nil, time.Time{}, exit.Wrap(exit.EngineDB, err, "could not store the session in CONSOLE_SESSIONS")
	}
	return &session{value: value, token: tok}, ends, nil
}

// findSession returns the session whose cookie the request carries, nil
// when it carries none, or one that ended: unknown, past its end, or of a
// token revoked or expired since.
func findSession(ctx context.Context, db *engine.DB, r *http.Request) (*session, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil, nil
	}
	var tokenID int64
	var ends engine.Time
	err = db.QueryRowContext(ctx, `SELECT TOKEN_ID, EXPIRES_AT FROM CONSOLE_SESSIONS WHERE SESSION_SHA256 = $1`,
		digest(c.Value)).Scan(&tokenID, &ends)
	if engine.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, readError(err, "CONSOLE_SESSIONS")
	}
	at := now()
	if !at.Before(ends.Time) {
		return nil, nil
	}
	tok, err := apitoken.Find(ctx, db, tokenID)
	if exit.Is(err, exit.ResourceNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if tok.StateAt(at) != apitoken.Active {
		return nil, nil
	}
	return &session{value: c.Value, token: tok}, nil
}

// deleteSession ends the session.
func deleteSession(ctx context.Context, db *engine.DB, s *session) error {
	err := db.BoundedTx(ctx, func(tx *engine.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM CONSOLE_SESSIONS WHERE SESSION_SHA256 = $1`, digest(s.value))
		return err
	})
	return exit.Wrap(exit.EngineDB, err, "could not delete the session from CONSOLE_SESSIONS")
}

// secure reports whether the request came over TLS, to the server or to a
// reverse proxy in front of it that says so (X-Forwarded-Proto): its
// cookies are then Secure. A forged header only makes a cookie stricter.
func secure(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// setCookie writes a cookie of the console: HttpOnly, SameSite=Strict,
// Secure over TLS; maxAge < 0 deletes it.
func setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, expires time.Time, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: path, Expires: expires, MaxAge: maxAge,
		HttpOnly: true, Secure: secure(r), SameSite: http.SameSiteStrictMode})
}

// sameValue compares two secrets in constant time; an empty one matches
// nothing.
func sameValue(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// localPath returns next when it is a path of this server to go back to
// after signing in, "" otherwise: it must start with one slash, so that it
// can never lead to another site.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, `/\`) {
		return ""
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return ""
	}
	return next
}
